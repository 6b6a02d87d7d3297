// Drives askbus's answer links offered as URL-mode elicitations (MCP 2025-11-25), with the
// official MCP TypeScript SDK (@modelcontextprotocol/sdk 1.x) over Streamable HTTP. Run by
// tests/mcp.rs, which opens the links and answers through them; every step is printed as
// one JSON line on stdout for the test to follow.
//
//   node links.mjs <tool> <url of /mcp>   (ASKBUS_TOKEN: the bearer token)
//
// The client declares URL-mode elicitation only (`elicitation: {url: {}}`, the SDK's
// defaults otherwise) and calls <tool> (`question` or `request_approval`). Steps:
//   elicited  an `elicitation/create` arrived: its params (the client accepts it, as a
//             client does once it opened the URL for its user)
//   result    the tool call's result, with how many elicitations arrived before it
//   complete  the `notifications/elicitation/complete` that arrived (after the result is
//             printed; the script waits for it unless none was elicited)

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  ElicitationCompleteNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { DELETE_USERS } from './approvals.mjs';
import { QUESTIONS } from './questions.mjs';

const [tool, target] = process.argv.slice(2);
const selfTimeout = Number(process.env.ASKBUS_DRIVE_TIMEOUT_MS ?? 20000);
const ARGUMENTS = {
  question: { questions: QUESTIONS },
  // Its own tool call id: a second call with the same id would get the first one's outcome.
  request_approval: { actions: [{ ...DELETE_USERS, tool_use_id: `toolu_link_${process.pid}` }] },
};

function say(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function fail(error) {
  process.stderr.write(`links.mjs ${tool}: ${error?.stack ?? error}\n`);
  process.exit(1);
}

setTimeout(() => fail(new Error(`gave up after ${selfTimeout} ms`)), selfTimeout).unref();

async function main() {
  if (!ARGUMENTS[tool]) throw new Error(`unknown tool ${tool}`);
  const client = new Client(
    { name: 'askbus-links-test', version: '0.0.0' },
    { capabilities: { elicitation: { url: {} } } },
  );
  let elicitations = 0;
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    elicitations += 1;
    say({ stage: 'elicited', params: request.params });
    return { action: 'accept' };
  });
  let completed;
  const completion = new Promise((resolve) => {
    completed = resolve;
  });
  client.setNotificationHandler(ElicitationCompleteNotificationSchema, (notification) => {
    completed(notification.params);
  });
  const transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.ASKBUS_TOKEN}` } },
  });
  await client.connect(transport);
  const result = await client.callTool({ name: tool, arguments: ARGUMENTS[tool] }, undefined, {
    timeout: selfTimeout,
  });
  say({ stage: 'result', result, elicitations });
  if (elicitations > 0) say({ stage: 'complete', params: await completion });
  await client.close();
}

main().then(() => process.exit(0), fail);
