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
//   3. Permissions: it asks for four reviews over askbus's own `POST /approval` (the SDK has
//      no create route), sees each announced as `permission.asked`, lists them
//      (`permission.list`), answers them with `permission.reply` (`once`, `always`,
//      `reject`; first with the agent's token `ASKBUS_AGENT_TOKEN`, which must be refused)
//      and the deprecated `permission.respond`, and waits for each `permission.replied`.
//   4. No stale questions: a question with a short timeout, and one whose session it aborts
//      (`session.abort`), must each be dropped by a `question.rejected` it receives.
//   5. The v2 client: `v2.health.get`, `v2.event.subscribe` (`/api/event`, `{id,type,data}`
//      frames), and the `v2.session.question` / `v2.session.permission` routes.
//   6. {"stage":"summary", ...}: what it listed, the events it saw by type, the results.
//
// Any SDK error or a missed deadline: the message on stderr, exit 1. Bad arguments: exit 2.
// Only 127.0.0.1 is accepted as a target. `ASKBUS_TOKEN` (optional) is sent as a bearer
// token, `ASKBUS_AGENT_TOKEN` (required) is an agent's; `ASKBUS_DRIVE_TIMEOUT_MS` (default
// 20000) bounds the whole run.

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
const agentToken = process.env.ASKBUS_AGENT_TOKEN;
if (!agentToken) usage("ASKBUS_AGENT_TOKEN is required (an agent's token, which must not decide)");

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

// The same SDK with an agent's token: it may ask, never decide.
const agentClient = createOpencodeClient({
  baseUrl,
  directory: DIRECTORY,
  throwOnError: true,
  headers: { Authorization: `Bearer ${agentToken}` },
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
    return Seen.countByType(this.events);
  }
  /** How many of `events` there are of each type. */
  static countByType(events) {
    const counts = {};
    for (const event of events) counts[event.type] = (counts[event.type] ?? 0) + 1;
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

/** `POST` of askbus's own create routes (`/approval`, `/question`): the SDK has none. */
async function create(path, body) {
  const response = await fetch(`${baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const created = await response.json();
  if (!response.ok) throw new Error(`POST ${path}: ${response.status} ${JSON.stringify(created)}`);
  return created;
}

/** askbus's own view of an approval: where it stands and its decisions. */
async function approvalStatus(id) {
  const response = await fetch(`${baseUrl}/approval/${id}`, {
    headers: token ? { authorization: `Bearer ${token}` } : {},
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  });
  const { status, decisions, answered_by: answeredBy } = await response.json();
  return { status, decisions, answeredBy };
}

/** A review of one shell command, as an agent would ask for it. */
function review(session, command, callID) {
  return {
    session_id: session,
    action_requests: [{ name: "bash", args: { command }, tool_use_id: callID, description: `run ${command}` }],
    timeout: null,
  };
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

  const v2 = new Seen("v2.event.subscribe");

  const plainResult = await client.event.subscribe({ directory: DIRECTORY }, sseOptions("event.subscribe"));
  const globalResult = await client.global.event(sseOptions("global.event"));
  const v2Result = await client.v2.event.subscribe(sseOptions("v2.event.subscribe"));
  consume(plainResult, plain, (frame) => frame);
  consume(v2Result, v2, (frame) => frame);
  consume(globalResult, global, (frame) => {
    globalFrames.push({ directory: frame.directory, hasPayload: typeof frame.payload === "object" });
    return frame.payload ?? {};
  });

  const connected = await plain.waitFor((event) => event.type === "server.connected");
  await global.waitFor((event) => event.type === "server.connected");
  const v2Connected = await v2.waitFor((event) => event.type === "server.connected");
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
  // The summary's `events` and `globalEvents` are those of the questions' part, up to here.
  const questionsPart = { plain: plain.events.slice(), global: global.byType() };

  const permissions = await drivePermissions(isOutcome);
  const stale = await driveStaleQuestions();
  const v2Routes = await driveV2(isOutcome);
  const v2Log = v2.events.map(({ id, type, data, properties }) => ({
    id,
    type,
    hasData: typeof data === "object" && data !== null,
    hasProperties: properties !== undefined,
    requestID: data?.requestID ?? data?.id,
  }));

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
      byType: Seen.countByType(questionsPart.plain),
      log: questionsPart.plain.map(({ id, type, properties }) => ({
        id,
        type,
        requestID: properties?.requestID ?? properties?.id,
      })),
      replied: repliedEvent,
      rejected: rejectedEvent,
    },
    globalEvents: { byType: questionsPart.global, frames: globalFrames.length, sample: globalFrames[0] },
    permissions,
    stale,
    v2: { connected: v2Connected, routes: v2Routes, byType: v2.byType(), log: v2Log },
  });

  /**
   * Four reviews answered as OpenCode permissions: `once`, `always`, `reject` with a
   * message, and the deprecated `respond`; an agent's `once` is refused first.
   */
  async function drivePermissions(isOutcome) {
    const session = "ses_permissions";
    const made = [];
    for (const [command, callID] of [["ls -la", "call_once"], ["git status", "call_always"], ["rm -rf build", "call_reject"], ["make test", "call_respond"]]) {
      made.push(await create("/approval", review(session, command, callID)));
    }
    const asked = [];
    for (const request of made) {
      asked.push(await plain.waitFor((event) => event.type === "permission.asked" && event.properties.id === request.id));
    }
    const { data: listed } = await client.permission.list({ directory: DIRECTORY }, call());
    const [once, always, reject, respond] = made.map(({ id }) => id);
    const agentReply = await expectError(
      "permission.reply with an agent's token",
      agentClient.permission.reply({ requestID: once, reply: "once" }, call()),
    );
    const results = {
      once: (await client.permission.reply({ requestID: once, reply: "once", directory: DIRECTORY }, call())).data,
      always: (await client.permission.reply({ requestID: always, reply: "always" }, call())).data,
      reject: (await client.permission.reply({ requestID: reject, reply: "reject", message: "not on main" }, call())).data,
      respond: (await client.permission.respond({ sessionID: session, permissionID: respond, response: "once" }, call())).data,
    };
    const replyAgain = await expectError("a second permission.reply", client.permission.reply({ requestID: once, reply: "reject" }, call()));
    const unknown = await expectError(
      "permission.reply of an unknown id",
      client.permission.reply({ requestID: "apr_00000000000000000000000000", reply: "once" }, call()),
    );
    const replied = {};
    for (const [name, id] of Object.entries({ once, always, reject, respond })) {
      replied[name] = (await plain.waitFor(isOutcome("permission.replied", id))).properties;
    }
    const statuses = {};
    for (const [name, id] of Object.entries({ once, always, reject, respond })) statuses[name] = await approvalStatus(id);
    const { data: afterReplies } = await client.permission.list({}, call());
    return {
      ids: { once, always, reject, respond },
      asked: asked.map((event) => event.properties),
      listed: listed.filter((permission) => permission.sessionID === session),
      agentReply,
      results,
      errors: { replyAgain, unknown },
      replied,
      statuses,
      stillListed: afterReplies.filter((permission) => permission.sessionID === session).length,
    };
  }

  /** A question that times out and one whose session is aborted: each must be dropped. */
  async function driveStaleQuestions() {
    const question = (sessionID, timeout) => ({
      sessionID,
      questions: [{ question: "Still there?", header: "Stale", options: [{ label: "Yes", description: "yes" }] }],
      timeout,
    });
    const timed = await create("/question", question("ses_stale_timeout", 0.2));
    const cancelled = await create("/question", question("ses_stale_abort", null));
    const approval = await create("/approval", review("ses_stale_abort", "deploy", "call_abort"));
    await plain.waitFor((event) => event.type === "permission.asked" && event.properties.id === approval.id);
    const { data: aborted } = await client.session.abort({ sessionID: "ses_stale_abort" }, call());
    const dropped = async (id) => {
      const rejected = await plain.waitFor((event) => event.type === "question.rejected" && event.properties.requestID === id);
      const askbusOwn = plain.events.find((event) => ["question.timed_out", "question.cancelled"].includes(event.type) && event.properties.requestID === id);
      return { rejected: rejected.properties, sameId: rejected.id === askbusOwn?.id, askbusType: askbusOwn?.type };
    };
    const result = {
      timedOut: { id: timed.id, ...(await dropped(timed.id)) },
      cancelled: { id: cancelled.id, ...(await dropped(cancelled.id)) },
      aborted,
      approval: { id: approval.id, replied: (await plain.waitFor((event) => event.type === "permission.replied" && event.properties.requestID === approval.id)).properties },
    };
    const { data: pending } = await client.question.list({}, call());
    result.stillListed = pending.filter((request) => [timed.id, cancelled.id].includes(request.id)).length;
    const { data: permissions } = await client.permission.list({}, call());
    result.approvalStillListed = permissions.some((permission) => permission.id === approval.id);
    return result;
  }

  /** The v2 client's routes: health, a session's questions and permissions. */
  async function driveV2(isOutcome) {
    const session = "ses_v2";
    const { data: health } = await client.v2.health.get(call());
    const toReply = await create("/question", { sessionID: session, questions: [{ question: "Which port?", header: "Port", options: [{ label: "8080", description: "" }] }], timeout: null });
    const toReject = await create("/question", { sessionID: session, questions: [{ question: "Restart now?", header: "Restart", options: [{ label: "Yes", description: "" }] }], timeout: null });
    const approval = await create("/approval", review(session, "npm publish", "call_v2"));
    const { data: questions } = await client.v2.session.question.list({ sessionID: session }, call());
    const { data: permissions } = await client.v2.session.permission.list({ sessionID: session }, call());
    const { data: permission } = await client.v2.session.permission.get({ sessionID: session, requestID: approval.id }, call());
    const { data: questionRequests } = await client.v2.question.request.list({}, call());
    const { data: permissionRequests } = await client.v2.permission.request.list({}, call());
    const wrongSession = await expectError(
      "v2 question reply in another session",
      client.v2.session.question.reply({ sessionID: "ses_other", requestID: toReply.id, questionV2Reply: { answers: [["8080"]] } }, call()),
    );
    const replied = await client.v2.session.question.reply({ sessionID: session, requestID: toReply.id, questionV2Reply: { answers: [["8080"]] } }, call());
    const rejected = await client.v2.session.question.reject({ sessionID: session, requestID: toReject.id }, call());
    const decided = await client.v2.session.permission.reply({ sessionID: session, requestID: approval.id, reply: "reject", message: "not today" }, call());
    await plain.waitFor(isOutcome("question.replied", toReply.id));
    await plain.waitFor(isOutcome("question.rejected", toReject.id));
    await plain.waitFor(isOutcome("permission.replied", approval.id));
    // The v2 stream carries the same, in its own envelope: wait for its last.
    await v2.waitFor((event) => event.type === "permission.replied" && event.data?.requestID === approval.id);
    const ids = { reply: toReply.id, reject: toReject.id, approval: approval.id };
    return {
      health,
      ids,
      questions: questions.data.map(({ id, sessionID }) => ({ id, sessionID })),
      permissions: permissions.data,
      permission: permission.data,
      questionRequests: { location: questionRequests.location, ids: questionRequests.data.map(({ id }) => id) },
      permissionRequests: { ids: permissionRequests.data.map(({ id }) => id) },
      wrongSession,
      statuses: { reply: replied.response.status, reject: rejected.response.status, permission: decided.response.status },
      approval: await approvalStatus(approval.id),
    };
  }
}

main().then(
  () => process.exit(0),
  (error) => fail(error),
);
