// A webhook receiver on 127.0.0.1 that verifies every delivery with the Standard Webhooks
// reference library (`standardwebhooks`, not askbus's code) and reports each on stdout as
// one JSON line: `{"stage":"listening","port":N}` once, then `{"stage":"delivery",...}` per
// verified delivery. A delivery that fails verification is answered 400 and reported as
// `{"stage":"refused",...}`, which fails the test reading the next delivery.
//
// Usage: node receiver.mjs PORT SECRET [STATUS]
//   PORT    0 for any free port, or the port to listen on again after a restart
//   SECRET  the `whsec_...` secret askbus signs with
//   STATUS  the status to answer verified deliveries with (default 204)
import http from "node:http";
import { Webhook } from "standardwebhooks";

const [port, secret, status = "204"] = process.argv.slice(2);
const webhook = new Webhook(secret);

const server = http.createServer((request, response) => {
  const chunks = [];
  request.on("data", (chunk) => chunks.push(chunk));
  request.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    try {
      const message = webhook.verify(body, request.headers);
      console.log(
        JSON.stringify({
          stage: "delivery",
          path: request.url,
          id: request.headers["webhook-id"],
          type: message.type,
          data: message.data,
        }),
      );
      response.writeHead(Number(status)).end();
    } catch (error) {
      console.log(JSON.stringify({ stage: "refused", path: request.url, error: String(error) }));
      response.writeHead(400).end();
    }
  });
});

server.listen(Number(port), "127.0.0.1", () => {
  console.log(JSON.stringify({ stage: "listening", port: server.address().port }));
});
// Ends with the test: when stdin closes (the test dropped its end), or on a signal.
process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
