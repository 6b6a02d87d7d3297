//! The OpenAPI document: generated from the route annotations by utoipa.
//!
//! Schemas come from the types that are really (de)serialised: the question crate derives
//! them behind its `openapi` feature, the route modules on their own bodies, so the document
//! cannot drift from the wire. The one exception is the reply body, which is parsed by hand
//! (it accepts three shapes) and so is described here.

use std::collections::BTreeMap;

use axum::Json;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi, ToSchema};

/// The document's fixed parts; paths are added by the router.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "askbus",
        description = "Let AI agents stop and ask a human, and get the answer back. Question routes and the event stream are wire-compatible with OpenCode's server.\n\nThe askbus server puts one guard in front of every route: a `Host` it does not answer for is `421`; a browser request from another site (an `Origin` other than the server's own or a `--cors-origin`, or `Sec-Fetch-Site: cross-site`) is `403`, except a top-level navigation that reads; a request that changes something with a body that is not JSON is `415`. Every error is `{\"code\", \"message\"}` JSON.",
        license(name = "MIT OR Apache-2.0"),
    ),
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
    )
)]
pub(crate) struct ApiDoc;

/// Adds to every operation of `document` the answer of the server's site guard
/// ([`SiteGuard`](crate::SiteGuard)), which stands in front of every route: `421` for a
/// `Host` the server does not answer for.
pub(crate) fn add_site_guard_responses(document: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
    let misdirected = ResponseBuilder::new()
        .description(
            "The `Host` names a server this is not (DNS rebinding is refused): use the \
             listen address, a loopback name, or a name given with `--allowed-host`",
        )
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name("ErrorBody")))
                .build(),
        )
        .build();
    for item in document.paths.paths.values_mut() {
        for operation in [
            &mut item.get,
            &mut item.post,
            &mut item.put,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            operation
                .responses
                .responses
                .entry("421".to_owned())
                .or_insert_with(|| misdirected.clone().into());
        }
    }
}

/// Adds the bearer security scheme.
struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
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
    security(())
)]
pub(crate) async fn ready(
    axum::extract::State(state): axum::extract::State<crate::AppState>,
) -> Result<Json<Ready>, crate::error::ApiError> {
    match tokio::time::timeout(READY_WAIT, state.inner.hub.ready()).await {
        Ok(Ok(())) => Ok(Json(Ready { ready: true })),
        Ok(Err(error)) => Err(error.into()),
        Err(_) => Err(crate::error::ApiError::new(
            crate::error::ErrorCode::StoreUnavailable,
            "not ready: the store did not answer within 2 s",
        )),
    }
}

/// Whether the server is up (a liveness probe), and its version.
#[utoipa::path(
    get,
    path = "/health",
    operation_id = "server.health",
    tag = "server",
    responses((status = 200, description = "The server is up", body = Health)),
    security(())
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
    security(("bearer" = []), ())
)]
pub(crate) async fn global_health() -> Json<Health> {
    health().await
}
