"""Prints what deploy/kubernetes.yaml runs askbus with, as one JSON object.

Read by crates/askbus/tests/deploy.rs, which runs the replicas natively with it:
{"replicas": 2, "env": {"NAME": "value" | {"secret": "key"}}, "port": 4717,
 "liveness": "/health", "readiness": "/ready", "service": "askbus"}
"""

import json
import sys

import yaml

documents = [doc for doc in yaml.safe_load_all(open(sys.argv[1])) if doc]
deployment = next(d for d in documents if d["kind"] == "Deployment" and d["metadata"]["name"] == "askbus")
service = next(d for d in documents if d["kind"] == "Service" and d["metadata"]["name"] == "askbus")
container = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "askbus")
ports = {port["name"]: port["containerPort"] for port in container["ports"]}


def port_of(probe):
    port = probe["httpGet"]["port"]
    return ports[port] if isinstance(port, str) else port


env = {}
for variable in container["env"]:
    if "value" in variable:
        env[variable["name"]] = variable["value"]
    else:
        env[variable["name"]] = {"secret": variable["valueFrom"]["secretKeyRef"]["key"]}
liveness, readiness = container["livenessProbe"], container["readinessProbe"]
assert port_of(liveness) == port_of(readiness) == ports["http"]
print(json.dumps({
    "replicas": deployment["spec"]["replicas"],
    "env": env,
    "port": ports["http"],
    "liveness": liveness["httpGet"]["path"],
    "readiness": readiness["httpGet"]["path"],
    "service": service["metadata"]["name"],
    "service_port": service["spec"]["ports"][0]["port"],
}))
