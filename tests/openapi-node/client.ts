// Drives askbus through openapi-fetch, typed by what openapi-typescript generated from its
// /openapi.json with default flags (`generated/askbus.d.ts`). Run by
// tests/openapi_clients.rs: compiled by `tsc --strict` (tsconfig.json), then
// `node generated/client.js URL` with the token in `ASKBUS_TOKEN`. Prints one JSON summary
// line, which the Rust test checks against what the server holds.

import createClient from "openapi-fetch";
import type { components, paths } from "./generated/askbus.js";

type QuestionRequest = components["schemas"]["QuestionRequest"];
type CreateQuestion = components["schemas"]["CreateQuestion"];

const [url] = process.argv.slice(2);
const client = createClient<paths>({
  baseUrl: url,
  headers: { Authorization: `Bearer ${process.env.ASKBUS_TOKEN}` },
});

/** The body of a successful answer; anything else ends the run, saying what came. */
function expectData<T>(result: { data?: T; error?: unknown; response: Response }, what: string): T {
  if (result.data === undefined) {
    throw new Error(`${what}: ${result.response.status} ${JSON.stringify(result.error)}`);
  }
  return result.data;
}

/** Asks two questions in `session`: one choice (custom text allowed), and several. */
async function ask(session: string): Promise<QuestionRequest> {
  const body: CreateQuestion = {
    sessionID: session,
    questions: [
      {
        question: "Which language?",
        header: "Language",
        options: [
          { label: "Rust", description: "fast" },
          { label: "Go", description: "simple" },
        ],
      },
      {
        question: "Which targets?",
        options: [{ label: "Linux" }, { label: "macOS" }],
        multiple: true,
        custom: false,
      },
    ],
  };
  return expectData(await client.POST("/question", { body }), "POST /question");
}

// A question: asked, waited on (still pending), answered, read back.
const question = await ask("ses_typescript_question");
const waited = expectData(
  await client.GET("/question/{id}/wait", {
    params: { path: { id: question.id }, query: { timeout: 0 } },
  }),
  "GET /question/{id}/wait",
);
if (waited.status !== "pending") throw new Error(`waited: ${JSON.stringify(waited)}`);
const replied = expectData(
  await client.POST("/question/{id}/reply", {
    params: { path: { id: question.id } },
    body: { answers: [["Rust"], ["Linux", "macOS"]] },
  }),
  "POST /question/{id}/reply",
);
if (replied !== true) throw new Error(`replied: ${JSON.stringify(replied)}`);
const answered = expectData(
  await client.GET("/question/{id}", { params: { path: { id: question.id } } }),
  "GET /question/{id}",
);

// An approval of one tool call: requested, approved, waited on.
const approval = expectData(
  await client.POST("/approval", {
    body: {
      session_id: "ses_typescript_approval",
      action_requests: [{ name: "delete_rows", args: { table: "users" } }],
    },
  }),
  "POST /approval",
);
const decided = expectData(
  await client.POST("/approval/{id}/reply", {
    params: { path: { id: approval.id } },
    body: { decisions: [{ type: "approve" }] },
  }),
  "POST /approval/{id}/reply",
);
if (decided !== true) throw new Error(`decided: ${JSON.stringify(decided)}`);
const approved = expectData(
  await client.GET("/approval/{id}/wait", {
    params: { path: { id: approval.id }, query: { timeout: 1 } },
  }),
  "GET /approval/{id}/wait",
);

// A session waiting on a question: its interrupt state (seed 002).
const interrupting = await ask("ses_typescript_interrupt");
const interrupt = expectData(
  await client.GET("/session/{id}/interrupt", {
    params: { path: { id: "ses_typescript_interrupt" } },
  }),
  "GET /session/{id}/interrupt",
);
const state = interrupt.state;
if (!state || state.kind !== "question" || state.request.id !== interrupting.id) {
  throw new Error(`interrupt: ${JSON.stringify(interrupt)}`);
}

console.log(
  JSON.stringify({
    question: { id: answered.id, status: answered.status, answers: answered.answers },
    approval: { id: approved.id, status: approved.status },
    interrupt: {
      interrupted: interrupt.interrupted,
      kind: state.kind,
      session_id: state.session_id,
      checkpoint_id: state.checkpoint_id,
    },
  }),
);
