// Drives askbus's MCP server with the official MCP TypeScript SDK (@modelcontextprotocol/sdk,
// protocol 2025-11-25 and earlier). Run by tests/mcp.rs, which answers the questions over
// askbus HTTP; every step is printed as one JSON line on stdout for the test to follow.
//
//   node legacy.mjs <scenario> http <url of /mcp>     (ASKBUS_TOKEN: the bearer token)
//   node legacy.mjs <scenario> stdio                  (MCP on stdin/stdout; steps on stderr)
//   node legacy.mjs <scenario> spawn <askbus> <arg>…  (the SDK's StdioClientTransport runs
//                                                      `<askbus> <arg>…`, say `askbus mcp`)
//
// With `spawn`, the first step is `listening` (the URL the spawned server logged on its
// stderr), after which the script waits for a line on stdin (the test subscribes to that
// server's events meanwhile); the last is `exited`, once the client closed the server's
// stdin and the server exited: its exit code and signal, and its log.
//
// Scenarios:
//   answer   list the tools, call `question`, print progress notifications and the result
//            (with ASKBUS_DECLARE_TASKS=1, the client also declares the tasks extension of
//            protocol 2026-07-28, as the MCP Inspector does, though it speaks 2025-11-25)
//   approve  list the tools, then call `request_approval` ASKBUS_APPROVAL_CALLS times, one
//            after the other, printing each call's first progress notification and result
//   invalid  call `request_approval` with each of INVALID_ARGUMENTS, printing the results
//   cancel   call ASKBUS_CANCEL_TOOL (`question` or `request_approval`), abort the call at
//            the first progress notification, close once stdin ends (HTTP, spawn)
//   elicit   declare form elicitation, answer the form askbus sends (ASKBUS_ELICIT_ACTION:
//            accept, decline or cancel), print the result
//   wait     call `question`, which returns `waiting` (the server's bound is short), then
//            `wait_for_answer` with its id (`waiting` again) and with an unknown id; print
//            each result; once stdin ends, end the MCP session (HTTP: DELETE it) and close
//   rejoin   call `request_approval` twice with one `tool_use_id` (both return `waiting`:
//            the server's bound is short), then `wait_for_answer` until the decision;
//            print each result
//   review   declare form elicitation, call `request_approval`, and answer each form askbus
//            sends with the next of ASKBUS_REVIEW_ANSWERS (a JSON array of elicitation
//            results); once they run out, leave the form open. Print each form and the result

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { createInterface } from 'node:readline';

import { DELETE_USERS, INVALID_ARGUMENTS } from './approvals.mjs';
import { QUESTIONS } from './questions.mjs';

const [scenario, transportKind, target, ...targetArgs] = process.argv.slice(2);
const selfTimeout = Number(process.env.ASKBUS_DRIVE_TIMEOUT_MS ?? 20000);
// How the `elicit` scenario answers the form: accept (with answers), decline or cancel.
const action = process.env.ASKBUS_ELICIT_ACTION ?? 'accept';
// How many approvals the `approve` scenario asks for.
const approvalCalls = Number(process.env.ASKBUS_APPROVAL_CALLS ?? 1);
// The tool the `cancel` scenario calls, and its arguments.
const cancelTool = process.env.ASKBUS_CANCEL_TOOL ?? 'question';
const ARGUMENTS = {
  question: { questions: QUESTIONS },
  request_approval: { actions: [DELETE_USERS] },
};

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

// The server `spawn` runs: its log lines, its URL once logged, and its exit.
let spawned;

// Starts `target targetArgs…` through the SDK's StdioClientTransport, collecting its log.
function spawnServer() {
  const transport = new StdioClientTransport({
    command: target,
    args: targetArgs,
    env: { ...getDefaultEnvironment(), NO_COLOR: '1' },
    stderr: 'pipe',
  });
  const log = [];
  let listening;
  const url = new Promise((resolve) => {
    listening = resolve;
  });
  const lines = createInterface({ input: transport.stderr });
  lines.on('line', (line) => {
    log.push(line);
    process.stderr.write(`askbus: ${line}\n`);
    const logged = line.match(/listening on (http:\/\/\S+)/);
    if (logged) listening({ url: logged[1], line });
  });
  const logEnded = new Promise((resolve) => lines.once('close', resolve));
  spawned = { transport, log, url, logEnded };
  return transport;
}

// After the handshake: reports the spawned server's URL, then waits for the test's go-ahead.
async function reportSpawned() {
  // The SDK offers no exit status of the process it spawned; it keeps the ChildProcess in
  // `_process` (SDK 1.32.2, pinned by the lock file).
  const child = spawned.transport._process;
  if (!child) throw new Error('the SDK no longer keeps the spawned process in `_process`');
  spawned.exited = new Promise((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const gone = spawned.exited.then(({ code, signal }) => {
    throw new Error(`the server exited (${code ?? signal}) before it logged its URL`);
  });
  const { url, line } = await Promise.race([spawned.url, gone]);
  say({ stage: 'listening', url, line });
  await new Promise((resolve) => process.stdin.once('data', resolve));
}

// Closes the client (for `spawn`, that closes the server's stdin) and reports the exit.
async function disconnect(client) {
  await client.close();
  if (!spawned) return;
  const [{ code, signal }] = await Promise.all([spawned.exited, spawned.logEnded]);
  say({ stage: 'exited', code, signal, log: spawned.log });
}

async function connect(capabilities) {
  const client = new Client({ name: 'askbus-mcp-test', version: '0.0.0' }, { capabilities });
  let transport;
  if (transportKind === 'spawn') {
    transport = spawnServer();
  } else if (transportKind === 'http') {
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
  if (spawned) await reportSpawned();
  return { client, transport };
}

async function callTool(client, name, args, options) {
  return client.callTool({ name, arguments: args }, undefined, {
    timeout: selfTimeout,
    ...options,
  });
}

// Calls `name` and prints its first progress notification (the test waits for it before
// answering) and its result.
async function callReportingProgress(client, name, args) {
  let progressCount = 0;
  const result = await callTool(client, name, args, {
    onprogress: (progress) => {
      progressCount += 1;
      if (progressCount === 1) say({ stage: 'progress', progress });
    },
  });
  say({ stage: 'result', result, progressCount });
}

async function listTools(client) {
  const { tools } = await client.listTools();
  say({ stage: 'tools', tools });
}

async function answer() {
  const tasks = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const { client } = await connect(process.env.ASKBUS_DECLARE_TASKS === '1' ? tasks : {});
  await listTools(client);
  await callReportingProgress(client, 'question', ARGUMENTS.question);
  await disconnect(client);
}

async function approve() {
  const { client } = await connect({});
  await listTools(client);
  for (let call = 1; call <= approvalCalls; call += 1) {
    const actions = [{ ...DELETE_USERS, tool_use_id: `toolu_${call}` }];
    await callReportingProgress(client, 'request_approval', { actions });
  }
  await disconnect(client);
}

async function invalid() {
  const { client } = await connect({});
  for (const args of INVALID_ARGUMENTS) {
    const result = await callTool(client, 'request_approval', args, {});
    say({ stage: 'result', args, result });
  }
  await disconnect(client);
}

async function cancel() {
  const { client } = await connect({});
  const aborter = new AbortController();
  try {
    await callTool(client, cancelTool, ARGUMENTS[cancelTool], {
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
  // Keep the session open until the test has seen the request cancelled (it then closes
  // stdin), so what cancelled it is the notification, not the session ending.
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.once('end', resolve));
  await disconnect(client);
}

async function elicit() {
  const { client } = await connect({ elicitation: { form: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    say({ stage: 'elicited', params: request.params });
    if (action !== 'accept') return { action };
    return { action, content: { q1: 'SQLite', q2: ['Logs', 'Traces'] } };
  });
  const result = await callTool(client, 'question', ARGUMENTS.question, {});
  say({ stage: 'result', result });
  await disconnect(client);
}

async function review() {
  const answers = JSON.parse(process.env.ASKBUS_REVIEW_ANSWERS ?? '[]');
  const { client } = await connect({ elicitation: { form: {} } });
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    say({ stage: 'elicited', params: request.params });
    // Out of answers: the form stays open until askbus withdraws it.
    return answers.shift() ?? new Promise(() => {});
  });
  const result = await callTool(client, 'request_approval', ARGUMENTS.request_approval, {});
  say({ stage: 'result', result });
  await disconnect(client);
}

async function wait() {
  const { client, transport } = await connect({});
  const asked = await callTool(client, 'question', ARGUMENTS.question, {});
  say({ stage: 'asked', result: asked });
  const { id } = asked.structuredContent;
  say({ stage: 'waited', result: await callTool(client, 'wait_for_answer', { id }, {}) });
  const unknown = await callTool(client, 'wait_for_answer', { id: 'que_01JZ6Q3V8R5M2K7D4T9WXYZABC' }, {});
  say({ stage: 'unknown', result: unknown });
  // The session stays open until the test closes stdin: its end is what the test watches.
  process.stdin.resume();
  await new Promise((resolve) => process.stdin.once('end', resolve));
  await transport.terminateSession();
  await disconnect(client);
}

async function rejoin() {
  const { client } = await connect({});
  const args = { actions: [{ ...DELETE_USERS, tool_use_id: 'toolu_rejoin' }] };
  say({ stage: 'asked', result: await callTool(client, 'request_approval', args, {}) });
  let result = await callTool(client, 'request_approval', args, {});
  say({ stage: 'again', result });
  while (result.structuredContent?.status === 'waiting') {
    result = await callTool(client, 'wait_for_answer', { id: result.structuredContent.id }, {});
  }
  say({ stage: 'result', result });
  await disconnect(client);
}

const scenarios = { answer, approve, invalid, cancel, elicit, review, wait, rejoin };
if (!scenarios[scenario]) fail(new Error(`unknown scenario ${scenario}`));
scenarios[scenario]().then(() => process.exit(0), fail);
