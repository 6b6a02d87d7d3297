// Drives askbus's MCP server with the official MCP TypeScript SDK (@modelcontextprotocol/sdk,
// protocol 2025-11-25 and earlier). Run by tests/mcp.rs, which answers the questions over
// askbus HTTP; every step is printed as one JSON line on stdout for the test to follow.
//
//   node legacy.mjs <scenario> http <url of /mcp>     (ASKBUS_TOKEN: the bearer token)
//   node legacy.mjs <scenario> stdio                  (MCP on stdin/stdout; steps on stderr)
//
// Scenarios:
//   answer  list the tools, call `question`, print progress notifications and the result
//   cancel  call `question`, abort the call at the first progress notification, close
//           once stdin ends (HTTP only)
//   elicit  declare form elicitation, answer the form askbus sends (ASKBUS_ELICIT_ACTION:
//           accept, decline or cancel), print the result

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

import { QUESTIONS } from './questions.mjs';

const [scenario, transportKind, target] = process.argv.slice(2);
const selfTimeout = Number(process.env.ASKBUS_DRIVE_TIMEOUT_MS ?? 20000);
// How the `elicit` scenario answers the form: accept (with answers), decline or cancel.
const action = process.env.ASKBUS_ELICIT_ACTION ?? 'accept';

// Over stdio, stdout carries MCP itself: the steps go to stderr.
const report = transportKind === 'stdio' ? process.stderr : process.stdout;

function say(line) {
  report.write(`${JSON.stringify(line)}\n`);
}

function fail(error) {
  process.stderr.write(`legacy.mjs ${scenario}: ${error?.stack ?? error}\n`);
  process.exit(1);
}

setTimeout(() => fail(new Error(`gave up after ${selfTimeout} ms`)), selfTimeout).unref();

async function connect(capabilities) {
  const client = new Client({ name: 'askbus-mcp-test', version: '0.0.0' }, { capabilities });
  let transport;
  if (transportKind === 'http') {
    transport = new StreamableHTTPClientTransport(new URL(target), {
      requestInit: { headers: { Authorization: `Bearer ${process.env.ASKBUS_TOKEN}` } },
    });
  } else if (transportKind === 'stdio') {
    // The SDK's stdio framing over this process's own stdin and stdout, which tests/mcp.rs
    // connects to askbus's MCP server in its own process (`askbus_mcp::serve_io`): the
    // same bytes `askbus mcp` reads and writes, without needing the built binary.
    transport = new StdioServerTransport();
  } else {
    fail(new Error(`unknown transport ${transportKind}`));
  }
  await client.connect(transport);
  return { client, transport };
}

async function callQuestion(client, options) {
  return client.callTool(
    { name: 'question', arguments: { questions: QUESTIONS } },
    undefined,
    { timeout: selfTimeout, ...options },
  );
}

async function answer() {
  const { client } = await connect({});
  const { tools } = await client.listTools();
  say({ stage: 'tools', tools });
  let progressCount = 0;
  const result = await callQuestion(client, {
    onprogress: (progress) => {
      progressCount += 1;
      // Only the first one: the test waits for it before answering.
      if (progressCount === 1) say({ stage: 'progress', progress });
    },
  });
  say({ stage: 'result', result, progressCount });
  await client.close();
}

async function cancel() {
  const { client } = await connect({});
  const aborter = new AbortController();
  try {
    await callQuestion(client, {
      signal: aborter.signal,
      onprogress: (progress) => {
        if (!aborter.signal.aborted) {
          say({ stage: 'progress', progress });
          aborter.abort('the test cancels the call');
        }
      },
    });
    say({ stage: 'result', error: 'the call completed instead of being cancelled' });
  } catch (error) {
    say({ stage: 'aborted', error: String(error) });
  }
  // Keep the session open until the test has seen `question.cancelled` (it then closes
  // stdin), so what cancelled the question is the notification, not the session ending.
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.once('end', resolve));
  await client.close();
}

async function elicit() {
  const { client } = await connect({ elicitation: { form: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    say({ stage: 'elicited', params: request.params });
    if (action !== 'accept') return { action };
    return { action, content: { q1: 'SQLite', q2: ['Logs', 'Traces'] } };
  });
  const result = await callQuestion(client, {});
  say({ stage: 'result', result });
  await client.close();
}

const scenarios = { answer, cancel, elicit };
if (!scenarios[scenario]) fail(new Error(`unknown scenario ${scenario}`));
scenarios[scenario]().then(() => process.exit(0), fail);
