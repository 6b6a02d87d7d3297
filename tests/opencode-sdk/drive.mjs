// Drives the real `@opencode-ai/sdk` v2 client against a running askbus server.
//
//   node drive.mjs http://127.0.0.1:PORT [--expect N]
//
// Run by tests/opencode_sdk.rs, which creates the questions in process. Protocol on stdout,
// one JSON object per line:
//
//   1. {"stage":"subscribed", ...} once both event streams (`event.subscribe` on /event and
//      `global.event` on /global/event) delivered `server.connected`. The asker may now
//      create its questions; they are announced live by `question.asked`.
//   2. The script waits for N (default 2) `question.asked` events, lists the pending
//      questions (`question.list`), replies to the first asked one (`question.reply`, the
//      first option of each question, the first two of a multiple-choice one), rejects the
//      second (`question.reject`), probes two errors (a second reply: 409; rejecting an
//      unknown id: 404), and waits for `question.replied` / `question.rejected` on both
//      streams and for one `server.heartbeat`.
//   3. {"stage":"summary", ...}: what it listed, the events it saw by type, the results.
//
// Any SDK error or a missed deadline: the message on stderr, exit 1. Bad arguments: exit 2.
// Only 127.0.0.1 is accepted as a target. `ASKBUS_TOKEN` (optional) is sent as a bearer
// token; `ASKBUS_DRIVE_TIMEOUT_MS` (default 20000) bounds the whole run.

import { createOpencodeClient } from "@opencode-ai/sdk/v2";

const DIRECTORY = "/tmp/askbus-opencode-sdk";
const REQUEST_TIMEOUT_MS = 5000;
const UNKNOWN_ID = "que_00000000000000000000000000";

function usage(message) {
  process.stderr.write(`drive.mjs: ${message}\nusage: node drive.mjs http://127.0.0.1:PORT [--expect N]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const [base, ...rest] = argv;
  if (!base) usage("missing the askbus base URL");
  let url;
  try {
    url = new URL(base);
  } catch {
    usage(`not a URL: ${base}`);
  }
  if (url.protocol !== "http:" || url.hostname !== "127.0.0.1" || !url.port) {
    usage(`only http://127.0.0.1:PORT is accepted, got ${base}`);
  }
  let expect = 2;
  for (let i = 0; i < rest.length; i++) {
    if (rest[i] === "--expect" && /^[1-9][0-9]*$/.test(rest[i + 1] ?? "")) {
      expect = Number(rest[++i]);
    } else {
      usage(`unexpected argument: ${rest[i]}`);
    }
  }
  if (expect < 2) usage("--expect must be at least 2 (one question is replied to, one rejected)");
  return { baseUrl: url.origin, expect };
}

const { baseUrl, expect } = parseArgs(process.argv.slice(2));
const deadlineMs = Number(process.env.ASKBUS_DRIVE_TIMEOUT_MS ?? 20000);
const token = process.env.ASKBUS_TOKEN;

/** Writes one protocol line; resolves once it is flushed. */
function emit(object) {
  return new Promise((resolve) => process.stdout.write(`${JSON.stringify(object)}\n`, resolve));
}

function fail(error) {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error?.cause ? ` (cause: ${JSON.stringify(error.cause)})` : "";
  process.stderr.write(`drive.mjs: ${message}${cause}\n`);
  process.exit(1);
}

// The whole run is bounded, whatever hangs.
const watchdog = setTimeout(() => fail(new Error(`gave up after ${deadlineMs} ms`)), deadlineMs);
const streams = new AbortController();

// The SDK as an OpenCode UI uses it: a directory and a workspace (sent as `?directory=` /
// `?workspace=` on GETs, as `x-opencode-directory` / `x-opencode-workspace` on POSTs), errors
// thrown as `Error`s with `{body, status}` causes.
const client = createOpencodeClient({
  baseUrl,
  directory: DIRECTORY,
  experimental_workspaceID: "wrk_askbus_sdk_test",
  throwOnError: true,
  headers: token ? { Authorization: `Bearer ${token}` } : undefined,
});

/** Per-request options: a timeout on every non-streaming call. */
const call = () => ({ signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });

/** Events seen on one stream, with waiters for the ones still to come. */
class Seen {
  constructor(name) {
    this.name = name;
    this.events = [];
    this.waiters = [];
  }
  push(event) {
    this.events.push(event);
    this.waiters = this.waiters.filter((waiter) => !waiter(event));
  }
  /** Resolves with the first event (already seen or to come) matching `predicate`. */
  waitFor(predicate) {
    const found = this.events.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => {
      this.waiters.push((event) => (predicate(event) ? (resolve(event), true) : false));
    });
  }
  count(type) {
    return this.events.filter((event) => event.type === type).length;
  }
  byType() {
    const counts = {};
    for (const event of this.events) counts[event.type] = (counts[event.type] ?? 0) + 1;
    return counts;
  }
}

/** Consumes an SDK SSE stream into `seen`; `unwrap` maps a frame to an event. */
async function consume(result, seen, unwrap) {
  try {
    for await (const frame of result.stream) {
      if (typeof frame !== "object" || frame === null) {
        throw new Error(`${seen.name}: a frame that is not JSON: ${JSON.stringify(frame)}`);
      }
      seen.push(unwrap(frame));
    }
  } catch (error) {
    if (!streams.signal.aborted) fail(error);
  }
  if (!streams.signal.aborted) fail(new Error(`${seen.name}: the event stream ended early`));
}

/** SSE options: no silent reconnect loop, errors surface at once. */
function sseOptions(name) {
  return {
    signal: streams.signal,
    sseMaxRetryAttempts: 1,
    onSseError: (error) => {
      if (!streams.signal.aborted) fail(new Error(`${name}: ${error?.message ?? error}`));
    },
  };
}

/** What an SDK call threw, as data: HTTP status and the parsed error body. */
async function expectError(label, promise) {
  try {
    const { data } = await promise;
    throw new Error(`${label}: expected an error, got ${JSON.stringify(data)}`);
  } catch (error) {
    if (!error?.cause || typeof error.cause.status !== "number") throw error;
    return { status: error.cause.status, body: error.cause.body, message: error.message };
  }
}

/** The reply an OpenCode UI would send when the human picks the first option(s). */
function pick(request) {
  return request.questions.map((question) =>
    question.options.slice(0, question.multiple ? 2 : 1).map((option) => option.label),
  );
}

async function main() {
  const plain = new Seen("event.subscribe");
  const global = new Seen("global.event");
  const globalFrames = [];

  const plainResult = await client.event.subscribe({ directory: DIRECTORY }, sseOptions("event.subscribe"));
  const globalResult = await client.global.event(sseOptions("global.event"));
  consume(plainResult, plain, (frame) => frame);
  consume(globalResult, global, (frame) => {
    globalFrames.push({ directory: frame.directory, hasPayload: typeof frame.payload === "object" });
    return frame.payload ?? {};
  });

  const connected = await plain.waitFor((event) => event.type === "server.connected");
  await global.waitFor((event) => event.type === "server.connected");
  await emit({ stage: "subscribed", connected });

  // The asker creates its questions now; wait until `expect` of them were announced.
  const asked = [];
  for (let i = 0; i < expect; i++) {
    asked.push(
      await plain.waitFor(
        (event) => event.type === "question.asked" && !asked.includes(event),
      ),
    );
  }
  const askedIds = asked.map((event) => event.properties.id);

  const { data: listed } = await client.question.list({ directory: DIRECTORY }, call());
  if (!Array.isArray(listed)) throw new Error(`question.list: not an array: ${JSON.stringify(listed)}`);
  for (const id of askedIds) {
    if (!listed.some((request) => request.id === id)) {
      throw new Error(`question.list: asked request ${id} is not listed`);
    }
  }
  const [replyTo, rejectIt] = askedIds.map((id) => listed.find((request) => request.id === id));

  const answers = pick(replyTo);
  const { data: replied } = await client.question.reply(
    { requestID: replyTo.id, directory: DIRECTORY, answers },
    call(),
  );
  const { data: rejected } = await client.question.reject({ requestID: rejectIt.id, directory: DIRECTORY }, call());

  const replyAgain = await expectError(
    "second question.reply",
    client.question.reply({ requestID: replyTo.id, answers }, call()),
  );
  const rejectUnknown = await expectError(
    "question.reject of an unknown id",
    client.question.reject({ requestID: UNKNOWN_ID }, call()),
  );

  const isOutcome = (type, id) => (event) => event.type === type && event.properties?.requestID === id;
  const repliedEvent = await plain.waitFor(isOutcome("question.replied", replyTo.id));
  const rejectedEvent = await plain.waitFor(isOutcome("question.rejected", rejectIt.id));
  await global.waitFor(isOutcome("question.replied", replyTo.id));
  await global.waitFor(isOutcome("question.rejected", rejectIt.id));
  await plain.waitFor((event) => event.type === "server.heartbeat");

  streams.abort();

  // `global.health`, and `session.abort` of a session with a question pending (asked through
  // askbus's own create route: the SDK has none), which must then be gone from the list.
  const { data: health } = await client.global.health(call());
  const created = await fetch(`${baseUrl}/question`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({
      sessionID: "ses_abort",
      questions: [{ question: "Abort me?", header: "Abort", options: [{ label: "Yes", description: "yes" }] }],
    }),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  }).then((response) => response.json());
  const { data: aborted } = await client.session.abort({ sessionID: "ses_abort", directory: DIRECTORY }, call());
  const { data: afterAbort } = await client.question.list({ directory: DIRECTORY }, call());
  clearTimeout(watchdog);

  await emit({
    stage: "summary",
    sdk: "@opencode-ai/sdk/v2",
    listed,
    asked: askedIds,
    reply: { requestID: replyTo.id, answers, result: replied },
    reject: { requestID: rejectIt.id, result: rejected },
    errors: { replyAgain, rejectUnknown },
    health,
    abort: {
      requestID: created.id,
      result: aborted,
      stillListed: afterAbort.some((request) => request.id === created.id),
    },
    events: {
      byType: plain.byType(),
      log: plain.events.map(({ id, type, properties }) => ({
        id,
        type,
        requestID: properties?.requestID ?? properties?.id,
      })),
      replied: repliedEvent,
      rejected: rejectedEvent,
    },
    globalEvents: { byType: global.byType(), frames: globalFrames.length, sample: globalFrames[0] },
  });
}

main().then(
  () => process.exit(0),
  (error) => fail(error),
);
