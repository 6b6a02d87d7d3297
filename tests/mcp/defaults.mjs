// Drives askbus's MCP server as a host on the TypeScript SDK's defaults would
// (@modelcontextprotocol/sdk 1.x): no request timeout of our own (the SDK's 60 s), no
// `resetTimeoutOnProgress`, no progress token. Run by tests/mcp.rs; prints one JSON line
// per step.
//
//   node defaults.mjs <url of /mcp>   (ASKBUS_TOKEN: the bearer token)
//
// Steps: `tools` (tools/list, whose output schemas the SDK compiles), `asked` (the
// `question` call's result), one `waiting` per `wait_for_answer` result that is still
// waiting, then `result`: the first result that is not `waiting`. The SDK checks every
// `structuredContent` against the tool's `outputSchema` itself.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { QUESTIONS } from './questions.mjs';

const [target] = process.argv.slice(2);

function say(line) {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

async function main() {
  const client = new Client({ name: 'askbus-mcp-defaults', version: '0.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(target), {
    requestInit: { headers: { Authorization: `Bearer ${process.env.ASKBUS_TOKEN}` } },
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  say({ stage: 'tools', tools });
  let result = await client.callTool({ name: 'question', arguments: { questions: QUESTIONS } });
  say({ stage: 'asked', result });
  while (result.structuredContent?.status === 'waiting') {
    const { id } = result.structuredContent;
    result = await client.callTool({ name: 'wait_for_answer', arguments: { id } });
    if (result.structuredContent?.status === 'waiting') say({ stage: 'waiting', result });
  }
  say({ stage: 'result', result });
  await client.close();
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`defaults.mjs: ${error?.stack ?? error}\n`);
    process.exit(1);
  },
);
