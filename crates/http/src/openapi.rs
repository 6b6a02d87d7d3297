//! The OpenAPI document: generated from the route annotations by utoipa.
//!
//! Schemas come from the types that are really (de)serialised: the question crate derives
//! them behind its `openapi` feature, the route modules on their own bodies, so the document
//! cannot drift from the wire. The one exception is the reply body, which is parsed by hand
//! (it accepts three shapes) and so is described here.
//!
//! What the layers answer is documented where the layers are given, so the document says
//! what the router does: `RouteGroup` adds each group's (bearer or public `security: []`,
//! `401`, `408`, the stream slots' `429` and `503`), `add_guard_and_body_responses` the
//! site guard's and the body reader's to every operation. An event stream's response
//! describes each event (`SseFrame`: a `data` string whose `contentSchema` is the event's
//! schema). `/health` is liveness, `/ready` readiness (`RequestHub::ready`, within 2 s).
//! Clients written elsewhere check the document against the real server
//! (`tests/openapi_clients.rs`: Redocly, openapi-typescript, openapi-python-client,
//! schemathesis).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Json;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{Modify, OpenApi, ToSchema};
use utoipa_axum::router::OpenApiRouter;

/// The document's fixed parts; paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "askbus",
        description = "Let AI agents stop and ask a human, and get the answer back. Question routes and the event stream are wire-compatible with OpenCode's server.\n\nThe askbus server puts one guard in front of every route: a `Host` it does not answer for is `421`; a browser request from another site (an `Origin` other than the server's own or a `--cors-origin`, or `Sec-Fetch-Site: cross-site`) is `403`, except a top-level navigation that reads; a request that changes something with a body that is not JSON is `415`. Every error is `{\"code\", \"message\"}` JSON.",
        license(name = "MIT OR Apache-2.0", identifier = "MIT OR Apache-2.0"),
    ),
    servers((url = "http://127.0.0.1:4717", description = "The default listen address (`--listen`, `ASKBUS_LISTEN`)")),
    security(("bearer" = [])),
    modifiers(&BearerAuth),
    components(schemas(askbus_question::ApprovalDecided)),
    tags(
        (name = "question", description = "Questions: list, read, answer, reject; create and wait in server mode"),
        (name = "approval", description = "Approvals of tool calls: list, read, decide; create and wait in server mode"),
        (name = "permission", description = "Approvals as OpenCode permissions (`once`, `always`, `reject`), and OpenCode's v2 routes over them"),
        (name = "session", description = "Sessions: interrupt state, resume, cancel"),
        (name = "events", description = "Server-Sent Events"),
        (name = "answer", description = "Answer links: one request, one reviewer, no token (`POST /question/{id}/link` mints them)"),
        (name = "audit", description = "The audit log: a hash-chained receipt of every decision"),
        (name = "webhook", description = "Outbound webhooks: every request event, signed per Standard Webhooks, delivered at least once"),
        (name = "slack", description = "Slack interactivity: a button pressed in an askbus message in Slack answers its request (Slack's signature, no token)"),
        (name = "server", description = "Health and this document"),
        (name = "opencode", description = "What OpenCode's TUI needs to start (`opencode attach URL --session ID`): askbus has no providers, agents or config"),
    )
)]
pub(crate) struct ApiDoc;

/// Who may call a group of routes, and which layers stand in front of it: what the group
/// answers beyond its handlers. [`build`](crate::build) documents each group with the
/// layers it gives it, so the document says what the router does, in one place.
#[derive(Clone, Copy)]
pub(crate) struct RouteGroup {
    /// Whether a bearer token is asked for (`Authenticate`): `401` without a known one.
    /// Otherwise the group is public (`security: []`): no token, or a credential of its
    /// own (an answer link, Slack's signature).
    pub(crate) bearer: bool,
    /// Whether the request timeout applies: `408` past it.
    pub(crate) timeout: bool,
    /// Whether each request holds a stream slot (`streams::hold_slot`): `429` past the
    /// token's share, `503` when every slot is taken.
    pub(crate) stream_slot: bool,
}

impl RouteGroup {
    /// Documents the answers of this group's layers on every operation of `router`, and
    /// who may call it.
    pub(crate) fn document(
        self,
        mut router: OpenApiRouter<crate::AppState>,
    ) -> OpenApiRouter<crate::AppState> {
        for operation in operations(router.get_openapi_mut()) {
            operation.security = if self.bearer {
                // The document's own `security`: a bearer token.
                None
            } else {
                Some(Vec::new())
            };
            let responses = &mut operation.responses.responses;
            if self.bearer {
                add(
                    responses,
                    401,
                    "Missing or unknown bearer token (`unauthorized`)",
                    None,
                );
            }
            if self.timeout {
                add(
                    responses,
                    408,
                    "The request took longer than the server's request timeout (`request_timeout`)",
                    None,
                );
            }
            if self.stream_slot {
                add(
                    responses,
                    429,
                    "This token holds as many open streams and long polls as it may (`quota`)",
                    Some("Seconds to wait before trying again"),
                );
                add(
                    responses,
                    503,
                    "Every stream slot of the server is taken (`too_many_streams`)",
                    Some("Seconds to wait before trying again"),
                );
            }
        }
        router
    }
}

/// Adds to every operation of `document` the answers of what stands in front of every
/// route: the server's site guard ([`SiteGuard`](crate::SiteGuard): `421` for a `Host` the
/// server does not answer for (except on the probes), `403` for a request from another site, `431` for an
/// oversized header, `415` for a state-changing request with a body that is not JSON) and,
/// under `/question/{id}` (and the v2 `/question/{requestID}`), the question id's parser
/// (`400` for a malformed id), and,
/// on operations with a JSON body, the body reader ([`read_body`](crate::read_body) and
/// the JSON extractor: `400` malformed JSON, `413` over the body limit, `415` not JSON,
/// `422` JSON of another shape).
pub(crate) fn add_guard_and_body_responses(document: &mut utoipa::openapi::OpenApi) {
    for (path, item) in &mut document.paths.paths {
        // The probes are answered whatever `Host` they name (see `SiteGuard`).
        let probe = matches!(path.as_str(), "/health" | "/ready");
        for (changes_state, operation) in [
            (false, &mut item.get),
            (true, &mut item.post),
            (true, &mut item.put),
            (true, &mut item.delete),
            (true, &mut item.patch),
        ] {
            let Some(operation) = operation else { continue };
            let json_body = operation.request_body.as_ref().is_some_and(|body| {
                matches!(body, RefOr::T(body) if body.content.contains_key("application/json"))
            });
            // The path parameter a question id is parsed from (`QuestionPath`, and the v2
            // routes' `requestID`), if the path has one.
            let question_id = if path.starts_with("/question/{id}") {
                Some(("id", QUESTION_ID_OR_KEY_PATTERN))
            } else if path.contains("/question/{requestID}") {
                Some(("requestID", QUESTION_ID_PATTERN))
            } else {
                None
            };
            let question_path = question_id.is_some();
            if let Some((name, pattern)) = question_id {
                for parameter in operation.parameters.iter_mut().flatten() {
                    if let RefOr::T(parameter) = parameter
                        && parameter.name == name
                    {
                        parameter.schema = Some(
                            ObjectBuilder::new()
                                .schema_type(Type::String)
                                .pattern(Some(pattern))
                                .into(),
                        );
                    }
                }
            }
            let responses = &mut operation.responses.responses;
            if !probe {
                add(
                    responses,
                    421,
                    "The `Host` names a server this is not (DNS rebinding is refused): use the \
                 listen address, a loopback name, or a name given with `--allowed-host` \
                 (`misdirected_request`)",
                    None,
                );
            }
            add(
                responses,
                403,
                "A browser request from another site (`Origin`, `Sec-Fetch-Site`) \
                 (`forbidden`)",
                None,
            );
            add(
                responses,
                431,
                "The request's header is larger than the server reads (`header_too_large`)",
                None,
            );
            if question_path {
                add(
                    responses,
                    400,
                    "Malformed question id: not `que_` followed by a ULID (nor, under `/question/{id}`, a key `{sessionID}_{n}`) (`bad_request`)",
                    None,
                );
            }
            if changes_state {
                add(
                    responses,
                    415,
                    "A body that is not `application/json` (`unsupported_media_type`)",
                    None,
                );
            }
            if json_body {
                add(responses, 400, "Malformed JSON (`bad_request`)", None);
                add(
                    responses,
                    413,
                    "The body is larger than the server accepts (`payload_too_large`)",
                    None,
                );
                add(responses, 422, "JSON of another shape (`invalid`)", None);
            }
        }
    }
}

/// A question id as the path takes it: `que_` and a ULID in Crockford's base 32.
const QUESTION_ID_PATTERN: &str = "^que_[0-9A-HJKMNP-TV-Z]{26}$";
/// A question id, or the seeds' key of a question, `{sessionID}_{n}` (`QuestionPath`).
const QUESTION_ID_OR_KEY_PATTERN: &str = "^(que_[0-9A-HJKMNP-TV-Z]{26}|.+_[0-9]+)$";

/// Every operation of `document`.
fn operations(
    document: &mut utoipa::openapi::OpenApi,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    document.paths.paths.values_mut().flat_map(|item| {
        [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
    })
}

/// Documents `status` with an [`ErrorBody`](crate::error::ErrorBody) unless the handler's
/// own annotation did (its words are more exact); with `retry_after`, the `Retry-After`
/// header it comes with.
fn add(
    responses: &mut BTreeMap<String, RefOr<Response>>,
    status: u16,
    description: &str,
    retry_after: Option<&str>,
) {
    responses.entry(status.to_string()).or_insert_with(|| {
        let mut response = ResponseBuilder::new().description(description).content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        );
        if let Some(retry_after) = retry_after {
            response = response.header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(Some(
                        ObjectBuilder::new()
                            .schema_type(Type::Integer)
                            .minimum(Some(1))
                            .build(),
                    ))
                    .description(Some(retry_after))
                    .build(),
            );
        }
        response.build().into()
    });
}

/// Adds the bearer security scheme.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "One of the server's tokens (`--token`, `ASKBUS_TOKEN`, and the role \
                         flags). A server without tokens, which it allows on loopback only, \
                         takes requests without one.",
                    ))
                    .build(),
            ),
        );
    }
}

/// `{"answers": [...]}`. Documentation only: see the module docs.
#[derive(ToSchema)]
#[schema(as = ReplyAnswers)]
#[allow(dead_code)]
pub(crate) struct ReplyAnswersSchema {
    /// One answer per question: the selected labels or custom text; empty skips.
    answers: Vec<Vec<String>>,
}

/// `{"answers": {"<question text>": "A, B"}}`, the seeds' reply. Documentation only: see
/// the module docs.
#[derive(ToSchema)]
#[schema(as = ReplyKeyedAnswers)]
#[allow(dead_code)]
pub(crate) struct ReplyKeyedAnswersSchema {
    /// One answer per question text: the selected labels joined with `", "`, or custom
    /// text (the answer of a free-text option); `"[No preference]"`, an empty string or a
    /// question left out skips it. The seeds' `type`, `session_id` and `approval_key`
    /// beside `answers` are accepted and ignored: the path names the request.
    answers: BTreeMap<String, String>,
}

/// A reply: the answers by position, or keyed by question text, under `answers` (the seeds'
/// form) or as the whole body.
#[derive(ToSchema)]
#[schema(as = ReplyBody)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum ReplyBodySchema {
    /// By position.
    Answers(ReplyAnswersSchema),
    /// Keyed by question text, under `answers`.
    KeyedAnswers(ReplyKeyedAnswersSchema),
    /// `{"<question text>": "A, B"}`: multi-select labels joined with `", "`.
    Keyed(BTreeMap<String, String>),
}

/// What the `data:` line of a `GET /event` frame holds. Documentation only: the bus writes
/// its envelopes itself (`Envelope::json`), and the routes of `events` their own frames.
#[derive(ToSchema)]
#[schema(as = Event)]
#[allow(dead_code)]
pub(crate) struct EventSchema {
    /// The event's id (`evt_` + ULID), also the frame's `id:` line. Absent on the server's
    /// own frames (`server.connected`, `server.heartbeat`, `server.resync`), which are no
    /// bus events.
    #[schema(required = false)]
    id: String,
    /// What happened: `server.connected` (the first frame), `server.heartbeat`,
    /// `server.resync` (`properties.reason`: `cursor_too_old`, `unknown_cursor`, or
    /// `lagged` with `missed`: read the lists again), `question.asked` (`properties.request`),
    /// `question.replied`, `question.rejected`, `question.timed_out`,
    /// `question.cancelled`, `question.reminded`, `question.escalated`,
    /// `question.not_recorded` (`properties.outcome`: the outcome announced before, which the
    /// store refused, so it does not stand), the same of `approval.*` and `approval.decided`
    /// (one reviewer's vote under a quorum: the `ApprovalDecided` schema), `agent.step`; an
    /// embedding runtime may publish types of its own.
    #[serde(rename = "type")]
    kind: String,
    /// The event's payload: for request events `sessionID` and `requestID` (questions) or
    /// `session_id` and `request_id` (approvals) and the outcome.
    #[schema(value_type = HashMap<String, serde_json::Value>)]
    properties: (),
    /// The `x-request-id` of the HTTP request whose handling published the event, as its
    /// access log line names it (the client's, or the one the server gave it). Absent when no request did: a timeout, a
    /// reminder, another server of a shared store, an event replayed after a restart.
    #[serde(rename = "requestID")]
    #[schema(required = false)]
    cause: String,
}

/// What the `data:` line of a `GET /global/event` frame holds: OpenCode's global stream.
/// Documentation only, as [`EventSchema`].
#[derive(ToSchema)]
#[schema(as = GlobalEvent)]
#[allow(dead_code)]
pub(crate) struct GlobalEventSchema {
    /// The server's `directory` (`HttpConfig::directory`).
    directory: String,
    /// The event.
    payload: EventSchema,
}

/// What the `data:` line of a `GET /session/{id}/stream` frame holds: one of the seeds'
/// content-block frames, or `server.resync`. Documentation only: the protocol crate writes
/// the frames.
#[derive(ToSchema)]
#[schema(as = SessionFrame)]
#[allow(dead_code)]
pub(crate) struct SessionFrameSchema {
    /// `content_block_start`, `content_block_delta`, `content_block_stop`, `group_start`,
    /// `group_end`, ..., or `server.resync` (`properties.reason`: `cursor_too_old`,
    /// `unknown_cursor`; the stream then ends).
    #[serde(rename = "type")]
    kind: String,
}

/// What the `data:` line of a `GET /api/event` frame holds: OpenCode's v2 envelope of an
/// event. Documentation only, as [`EventSchema`].
#[derive(ToSchema)]
#[schema(as = V2Event)]
#[allow(dead_code)]
pub(crate) struct V2EventSchema {
    /// The event's type, as in [`EventSchema`].
    #[serde(rename = "type")]
    kind: String,
    /// The event's properties.
    #[schema(value_type = HashMap<String, serde_json::Value>)]
    data: (),
    /// As in `Event`: the `x-request-id` of the HTTP request that caused the event, absent
    /// when none did.
    #[serde(rename = "requestID")]
    #[schema(required = false)]
    cause: String,
}

/// One Server-Sent Event of a stream whose `data:` lines are `T` as compact JSON, as an
/// SSE parser reads it (a `data` and an `id`); OpenAPI 3.1 describes each event of a
/// `text/event-stream` with the response's schema.
pub(crate) struct SseFrame<T>(std::marker::PhantomData<T>);

/// A `GET /event` frame.
pub(crate) type EventFrame = SseFrame<EventSchema>;
/// A `GET /global/event` frame.
pub(crate) type GlobalEventFrame = SseFrame<GlobalEventSchema>;
/// A `GET /api/event` frame.
pub(crate) type V2EventFrame = SseFrame<V2EventSchema>;
/// A `GET /session/{id}/stream` frame.
pub(crate) type SessionStreamFrame = SseFrame<SessionFrameSchema>;

impl<T: ToSchema> utoipa::PartialSchema for SseFrame<T> {
    fn schema() -> RefOr<utoipa::openapi::schema::Schema> {
        let data = ObjectBuilder::new()
            .schema_type(Type::String)
            .content_media_type("application/json")
            .content_schema(Some(Ref::from_schema_name(T::name())))
            .description(Some(format!("Compact JSON: the `{}` schema", T::name())));
        let id = ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "The `id:` line: the cursor to resume after (`Last-Event-ID`)",
            ));
        ObjectBuilder::new()
            .description(Some(format!(
                "One Server-Sent Event: a `data:` line of compact JSON (the `{}` schema) and, \
                 on most frames, an `id:` line; no `event:` line",
                T::name()
            )))
            .property("data", data)
            .required("data")
            .property("id", id)
            .into()
    }
}

impl<T: ToSchema> ToSchema for SseFrame<T> {
    fn name() -> std::borrow::Cow<'static, str> {
        format!("{}Frame", T::name()).into()
    }

    fn schemas(schemas: &mut Vec<(String, RefOr<utoipa::openapi::schema::Schema>)>) {
        schemas.push((T::name().into(), T::schema()));
        T::schemas(schemas);
    }
}

/// `GET /health` answer.
#[derive(serde::Serialize, ToSchema)]
pub(crate) struct Health {
    /// Always true when the server answers.
    healthy: bool,
    /// The server's version.
    version: &'static str,
}

/// `GET /ready` answer.
#[derive(serde::Serialize, ToSchema)]
pub(crate) struct Ready {
    /// True: the store answers and (with a shared store) this server has caught up with it.
    ready: bool,
}

/// How long `/ready` waits for the store before it says "not ready".
const READY_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Whether the server can serve requests now (a readiness probe): its store answers and,
/// with a store shared by several servers, this one has applied everything in it. `/health`
/// only says the process is up (a liveness probe). Neither needs a token, and neither
/// checks the `Host`, so probes by IP address work.
#[utoipa::path(
    get,
    path = "/ready",
    operation_id = "global.ready",
    tag = "server",
    responses(
        (status = 200, description = "Ready", body = Ready),
        (status = 503, description = "The store does not answer (within 2 s), or this server has not caught up with it (`store_unavailable`)", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn ready(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
) -> Result<Json<Ready>, crate::error::ApiError> {
    let probe = state.inner.readiness.probe(&state.inner.hub);
    match tokio::time::timeout(READY_WAIT, probe).await {
        Ok(Ok(())) => Ok(Json(Ready { ready: true })),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(crate::error::ApiError::new(
            crate::error::ErrorCode::StoreUnavailable,
            "not ready: the store did not answer within 2 s",
        )),
    }
}

/// A readiness check of the hub's store, its answer shared by every `/ready` that waits.
type Probe = Shared<BoxFuture<'static, Result<(), crate::error::ApiError>>>;

/// The readiness check in flight, if any. `/ready` needs no token, and each check queues a
/// read behind the store's writes: a store that stopped answering (Redis paused, a network
/// black hole) would otherwise keep one read per probe queued until it answers or its
/// connection gives up, however many an unauthenticated client sends. Every `/ready` while
/// a check is unanswered waits for that one, so the store holds one at most. The check
/// runs as a task of its own, so it ends when the store answers whether or not a probe
/// still waits, and a probe after that starts a fresh one: no answer is served stale.
#[derive(Default)]
pub(crate) struct Readiness(std::sync::Mutex<Option<InFlight>>);

/// A readiness check under way, and whether it ended.
struct InFlight {
    /// Its answer, for every probe that waits.
    probe: Probe,
    /// Set by the check's task once the store answered.
    ended: Arc<AtomicBool>,
}

impl Readiness {
    /// The check in flight, or a new one if the last has ended.
    fn probe(&self, hub: &askbus_question::RequestHub) -> Probe {
        let mut in_flight = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(check) = in_flight
            .as_ref()
            .filter(|check| !check.ended.load(Ordering::Acquire))
        {
            return check.probe.clone();
        }
        let ended = Arc::new(AtomicBool::new(false));
        let check = tokio::spawn({
            let (hub, ended) = (hub.clone(), Arc::clone(&ended));
            async move {
                let ready = hub.ready().await.map_err(crate::error::ApiError::from);
                ended.store(true, Ordering::Release);
                ready
            }
        });
        let probe = async move {
            check.await.unwrap_or_else(|_| {
                Err(crate::error::ApiError::new(
                    crate::error::ErrorCode::StoreUnavailable,
                    "not ready: the readiness check stopped",
                ))
            })
        }
        .boxed()
        .shared();
        *in_flight = Some(InFlight {
            probe: probe.clone(),
            ended,
        });
        probe
    }
}

/// Whether the server is up (a liveness probe), and its version.
#[utoipa::path(
    get,
    path = "/health",
    operation_id = "server.health",
    tag = "server",
    responses((status = 200, description = "The server is up", body = Health)),
)]
pub(crate) async fn health() -> Json<Health> {
    Json(Health {
        healthy: true,
        version: env!("CARGO_PKG_VERSION"),
    })
}

/// OpenCode's `global.health`: the same as `/health`, where OpenCode's SDK asks.
#[utoipa::path(
    get,
    path = "/global/health",
    operation_id = "global.health",
    tag = "server",
    responses((status = 200, description = "The server is up", body = Health)),
)]
pub(crate) async fn global_health() -> Json<Health> {
    health().await
}
