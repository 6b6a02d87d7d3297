"""Drives askbus's MCP server as a host on the Python MCP SDK's defaults would.

Run by tests/mcp.rs with the interpreter of this directory's virtual environment
(requirements.txt):

    python defaults.py <url of /mcp>      (ASKBUS_TOKEN: the bearer token)

`mcp.Client` with everything at its default (protocol negotiation, timeouts, no progress
callback), except the bearer token, which needs an HTTP client of the SDK's own making.
Prints one JSON line per step: `tools` (tools/list, each output schema then checked by the
SDK's own validation, against a `waiting` result every tool may return), `asked` (the
`question` call's result), one `waiting` per `wait_for_answer` result still waiting, then
`result`. The SDK checks every `structuredContent` against its tool's `outputSchema`.
"""

import asyncio
import json
import os
import sys

import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

QUESTIONS = [
    {
        "question": "Which region should the service run in?",
        "header": "Region",
        "options": [
            {"label": "eu-west", "description": "next to the users"},
            {"label": "us-east", "description": "next to the data"},
        ],
    }
]


def say(line):
    print(json.dumps(line), flush=True)


def dump(result):
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def main(url):
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {os.environ['ASKBUS_TOKEN']}"})
    async with Client(streamable_http_client(url, http_client=http)) as client:
        listed = await client.list_tools()
        waiting = types.CallToolResult(
            content=[], structured_content={"status": "waiting", "id": "que_x", "kind": "question"}
        )
        for tool in listed.tools:
            await client.session.validate_tool_result(tool.name, waiting)
        say({"stage": "tools", "tools": [dump(tool) for tool in listed.tools], "protocol": client.protocol_version})
        result = await client.call_tool("question", {"questions": QUESTIONS})
        say({"stage": "asked", "result": dump(result)})
        while (result.structured_content or {}).get("status") == "waiting":
            result = await client.call_tool("wait_for_answer", {"id": result.structured_content["id"]})
            if (result.structured_content or {}).get("status") == "waiting":
                say({"stage": "waiting", "result": dump(result)})
        say({"stage": "result", "result": dump(result)})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
