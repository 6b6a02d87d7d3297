// Drives askbus's MCP server with the official MCP TypeScript SDK v2 client
// (@modelcontextprotocol/client) pinned to protocol revision 2026-07-28, where servers ask
// the client for input with `input_required` results (multi round-trip requests) instead
// of server-to-client requests. Run by tests/mcp.rs; prints one JSON line per step.
//
//   node modern.mjs elicit <url of /mcp>   (ASKBUS_TOKEN: the bearer token)
//
// The client declares form elicitation; the SDK fulfils askbus's `input_required` form
// through the `elicitation/create` handler below and retries the call with the answer.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { QUESTIONS } from './questions.mjs';

const [scenario, target] = process.argv.slice(2);
const selfTimeout = Number(process.env.ASKBUS_DRIVE_TIMEOUT_MS ?? 20000);

function say(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

function fail(error) {
  process.stderr.write(`modern.mjs ${scenario}: ${error?.stack ?? error}\n`);
  process.exit(1);
}

setTimeout(() => fail(new Error(`gave up after ${selfTimeout} ms`)), selfTimeout).unref();

async function elicit() {
  const client = new Client(
    { name: 'askbus-mcp-test-modern', version: '0.0.0' },
    {
      capabilities: { elicitation: { form: {} } },
      versionNegotiation: { mode: { pin: '2026-07-28' } },
    },
  );
  let rounds = 0;
  client.setRequestHandler('elicitation/create', async (request) => {
    rounds += 1;
    say({ stage: 'elicited', params: request.params });
    return { action: 'accept', content: { q1: 'Postgres', q2: ['Traces'] } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.ASKBUS_TOKEN}` } },
  });
  await client.connect(transport);
  say({ stage: 'connected', protocolVersion: client.getNegotiatedProtocolVersion?.() ?? null });
  const result = await client.callTool(
    { name: 'question', arguments: { questions: QUESTIONS } },
    { timeout: selfTimeout },
  );
  say({ stage: 'result', result, rounds });
  await client.close();
}

const scenarios = { elicit };
if (!scenarios[scenario]) fail(new Error(`unknown scenario ${scenario}`));
scenarios[scenario]().then(() => process.exit(0), fail);
