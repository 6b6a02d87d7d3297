//! Integration tests of askbus through its public API, in one binary.

// A failing `unwrap` in a test is a test failure with a backtrace, which is what we want.
#![allow(clippy::unwrap_used)]

// The audit log: receipts, sealing, export, offline verification, key files.
mod audit;
// Approvals, session interrupts and the confirmation detector through the library API.
mod approval;
// The event bus: typed and untyped subscriptions, envelope JSON, cursor replay, lag.
mod bus;
// Questions and approvals over a durable store: what a restart keeps.
mod durable;
// The HTTP API: routes, errors, SSE, auth, end to end over TCP, OpenAPI snapshot.
mod http;
// The MCP face driven by the official MCP TypeScript SDK over Streamable HTTP and stdio.
mod mcp;
// Node.js and `npm ci` for the tests that drive npm packages.
mod node;
// The real @opencode-ai/sdk v2 client (npm, installed by the test) against a served askbus.
mod opencode_sdk;
// OpenCode's own TUI (npm `opencode-ai`) on a pseudo-terminal against a served askbus.
mod opencode_tui;
// The served OpenAPI document through Redocly, openapi-typescript, openapi-python-client and
// schemathesis, against the real server.
mod openapi_clients;
// What an operator relies on through the real server: request ids in events and logs,
// store write metrics, readiness when the store is cut off.
mod operability;
// The seeds' stream and history encoding: golden frames and histories, history + replay = live.
mod protocol;
// Python and a virtual environment for the tests that drive PyPI packages.
mod python;
// The question service on one thread: validation, keyed replies, drop, timeouts, events.
mod question;
// A proptest state machine over the question service, checked against a model.
mod question_model;
// Races between resolutions of one question on a multi-thread runtime.
mod question_races;
// Caps on pending requests: per session, per account, in total; joins; races.
mod quota;
// M of N distinct reviewers: votes, vetoes, named reviewers, across stores and instances.
mod quorum;
// Several hubs over one shared store (in process, and the real Redis) as server instances.
mod shared;
// Races between hubs sharing a store, checked by proptest: they agree whatever interleaves.
mod shared_races;
// The question and approval tools as rig-core tools, run through rig's own dispatch.
mod rig;
// The server binary's configuration: flags, validation, refusals.
mod server;
// The server's accept loop over TCP: header and body timeouts, streams, shutdown.
mod server_connections;
// The storage backends (memory, SQLite, the real Redis) against one contract.
mod store;
// Helpers shared by the question tests: sample questions, services, event bookkeeping.
mod support;
// Follow-ups: reminders, escalations and fallbacks on expiry, on paused time and shared.
mod follow_up;
// The LLM question tool: definitions, calls, outcome texts.
mod tool;
// The web UI in Debian's chromium (playwright-core, installed by the test) answering an agent.
mod ui;
// Webhook delivery in process: retries, timeouts, the retry window, the deliveries route.
mod webhooks;
