//! Answer links: a signed, expiring URL that lets one reviewer answer one request from
//! wherever the link lands (a chat message, an email, a phone), without a bearer token.
//!
//! A reviewer (or an admin) mints a link for a pending request, to answer it elsewhere:
//! `POST /question/{id}/link`, `POST /approval/{id}/link`. The link acts as its minter and
//! no one else: a link for another name would let one person decide as several (an admin
//! minting for bob and carol would meet a quorum of two alone, and the audit log would
//! name them). It names the request, the minter and when it expires, and carries an
//! HMAC-SHA256 of those under the server's [`LinkKey`], so it cannot be forged, nor moved
//! to another request, identity or lifetime: changing any byte makes it invalid. Whoever
//! holds it may read its request (`GET /answer/{token}/request`) and answer it
//! (`POST /answer/{token}`, the body of the reply route of its kind) as that identity,
//! through the very handlers the API answers with: the same checks (roles, the asker rule,
//! named reviewers, one vote each), the same exactly-once resolution. So a link decides
//! what its reviewer could, once: a question's first answer wins and later ones are `409`;
//! under a quorum it casts that reviewer's one vote (and, as any reviewer may, a later
//! veto). Each use checks the minter's credential as it is configured now: a reviewer
//! removed from the configuration (or moved to another session) is no longer answered for
//! by its old links. A link reveals nothing about any other request, and expires with its
//! request (or after [`LINK_LIFETIME`], whichever comes first), then `410`.
//!
//! The key is the server's: random per process by default (links die with it), or given
//! (`--link-secret`) so links survive restarts and work on every instance of a shared
//! store.

use std::sync::Arc;
use std::time::Duration;

use askbus_question::{Identity, RequestId, Role};
use axum::Json;
use axum::extract::{Request, State};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, KeyInit, Mac};
use serde::Serialize;
use serde_json::Value;
use sha2::Sha256;

use crate::auth::{Authorized, Caller, TokenScope};
use crate::error::{ApiError, ErrorCode};
use crate::extract::{ApiJson, QuestionPath, SegmentPath};
use crate::questions::ReplyBody;
use crate::{AppState, approvals, questions};

/// How long a link lives at most; a request that expires sooner takes its links with it.
pub const LINK_LIFETIME: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest token a link may have: longer is not one of ours, and is not read.
const MAX_TOKEN: usize = 512;

/// What a link's signature covers before its fields: a signature made for anything else
/// under the same key never passes for a link's.
const DOMAIN: &[u8] = b"askbus answer link v1\n";

/// The key that signs answer links.
#[derive(Clone)]
pub struct LinkKey(Arc<[u8]>);

/// A `--link-secret` too short to be a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "a link secret needs at least {MIN_SECRET} characters (for example `openssl rand -hex 32`)"
)]
pub struct ShortLinkSecret;

/// The shortest secret [`LinkKey::from_secret`] takes.
const MIN_SECRET: usize = 32;

impl LinkKey {
    /// A fresh random key: links signed with it work until the process ends.
    ///
    /// # Panics
    ///
    /// If the operating system has no randomness to give (then nothing can be kept secret).
    pub fn random() -> Self {
        let mut key = [0_u8; 32];
        getrandom::fill(&mut key).expect("the operating system gives random bytes");
        Self(Arc::new(key))
    }

    /// The key of a configured secret, so links outlive a restart and work on every
    /// instance given the same secret.
    ///
    /// # Errors
    ///
    /// [`ShortLinkSecret`] below 32 characters.
    pub fn from_secret(secret: &str) -> Result<Self, ShortLinkSecret> {
        if secret.trim().len() < MIN_SECRET {
            return Err(ShortLinkSecret);
        }
        Ok(Self(Arc::from(secret.trim().as_bytes())))
    }

    /// A link that answers `request` acting as `acts_as`, until the request expires
    /// (`expires_at`, milliseconds since the Unix epoch) or [`LINK_LIFETIME`] from now,
    /// whichever comes first. The one way links are made (the mint routes, webhooks' answer
    /// links, MCP's URL elicitation): whoever asks for one has checked that `acts_as` is a
    /// credential of theirs that may decide; every use checks it again.
    pub fn mint(&self, request: RequestId, acts_as: Identity, expires_at: Option<u64>) -> Minted {
        let lifetime = u64::try_from(LINK_LIFETIME.as_millis()).unwrap_or(u64::MAX);
        let until = askbus_store::now_ms().saturating_add(lifetime);
        let link = Link {
            request,
            acts_as,
            expires_at: expires_at.map_or(until, |at| at.min(until)),
        };
        let token = link.token(self);
        Minted {
            path: format!("/answer/{token}"),
            token,
            expires_at: link.expires_at,
            acts_as: link.acts_as,
        }
    }

    fn mac(&self, signed: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0)
            .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
        mac.update(DOMAIN);
        mac.update(signed.as_bytes());
        mac
    }
}

impl Default for LinkKey {
    fn default() -> Self {
        Self::random()
    }
}

impl std::fmt::Debug for LinkKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkKey(..)")
    }
}

/// What a link says: answer this request, as this identity, until then.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Link {
    request: RequestId,
    acts_as: Identity,
    expires_at: u64,
}

impl Link {
    /// `{request}.{name}.{role}.{expires}.{signature}`: the name base64url, the signature
    /// the HMAC of the rest.
    fn token(&self, key: &LinkKey) -> String {
        let signed = format!(
            "{}.{}.{}.{}",
            self.request,
            URL_SAFE_NO_PAD.encode(self.acts_as.name.as_bytes()),
            role_name(self.acts_as.role),
            self.expires_at
        );
        let signature = URL_SAFE_NO_PAD.encode(key.mac(&signed).finalize().into_bytes());
        format!("{signed}.{signature}")
    }

    /// The link `token` stands for, if `key` signed it; `None` for anything else (whatever
    /// is wrong with it: a client learns nothing from which part).
    fn verify(token: &str, key: &LinkKey) -> Option<Self> {
        if token.len() > MAX_TOKEN {
            return None;
        }
        let (signed, signature) = token.rsplit_once('.')?;
        let signature = URL_SAFE_NO_PAD.decode(signature).ok()?;
        key.mac(signed).verify_slice(&signature).ok()?;
        let mut fields = signed.split('.');
        let request = fields.next()?.parse().ok()?;
        let name = String::from_utf8(URL_SAFE_NO_PAD.decode(fields.next()?).ok()?).ok()?;
        let role = role_named(fields.next()?)?;
        let expires_at = fields.next()?.parse().ok()?;
        fields.next().is_none().then(|| Self {
            request,
            acts_as: Identity::new(name, role),
            expires_at,
        })
    }

    /// The link of `token` while it is valid, acting as its minter as configured now, with
    /// the sessions the minter's credential reaches: `404` for a token that is no link of
    /// this server's, or whose minter is no longer a credential that may decide; `410` once
    /// it expired.
    fn open(token: &str, state: &AppState) -> Result<(Self, TokenScope), ApiError> {
        let invalid = || {
            ApiError::new(
                ErrorCode::NotFound,
                "this answer link is not valid: ask for a new one",
            )
        };
        let mut link = Self::verify(token, &state.inner.config.link_key).ok_or_else(invalid)?;
        if askbus_store::now_ms() > link.expires_at {
            return Err(ApiError::new(
                ErrorCode::LinkExpired,
                "this answer link has expired: ask for a new one if the request still waits",
            ));
        }
        let (acts_as, scope) = current(state, &link.acts_as).ok_or_else(invalid)?;
        link.acts_as = acts_as;
        Ok((link, scope))
    }

    /// Who a request through this link is: its minter, in its request's session (and only
    /// if `scope`, the minter's credential's, reaches that session), on no token's account.
    fn caller(&self, scope: &TokenScope, session_id: Arc<str>) -> Result<Caller, ApiError> {
        if !scope.allows(&session_id) {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!(
                    "{} may no longer act in this request's session",
                    self.acts_as
                ),
            ));
        }
        Ok(Caller(Authorized {
            scope: TokenScope::Session(session_id),
            token: None,
            identity: self.acts_as.clone(),
        }))
    }
}

/// The credential named as `identity` is, as the server is configured now, with its scope;
/// `None` if none may decide under that name.
fn current(state: &AppState, identity: &Identity) -> Option<(Identity, TokenScope)> {
    credential_named(state, &identity.name).filter(|(current, _)| current.may_decide())
}

/// The credential named `name`, as the server is configured now, with its scope; `None` if
/// there is none. Without credentials everyone is [`Identity::local`], in every session.
pub(crate) fn credential_named(state: &AppState, name: &str) -> Option<(Identity, TokenScope)> {
    let tokens = &state.inner.config.tokens;
    if tokens.is_empty() {
        return (name == Identity::LOCAL).then(|| (Identity::local(), TokenScope::AllSessions));
    }
    tokens
        .iter()
        .find(|token| *token.identity().name == *name)
        .map(|token| (token.identity().clone(), token.scope().clone()))
}

fn role_name(role: Role) -> &'static str {
    match role {
        Role::Agent => "agent",
        Role::Reviewer => "reviewer",
        Role::Admin => "admin",
    }
}

fn role_named(name: &str) -> Option<Role> {
    match name {
        "reviewer" => Some(Role::Reviewer),
        "admin" => Some(Role::Admin),
        // An agent never decides: no link acts as one.
        _ => None,
    }
}

/// A minted link.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Minted {
    /// The link's path on this server: `/answer/{token}` (the page, for a browser).
    pub path: String,
    /// The token alone.
    pub token: String,
    /// When it stops working, milliseconds since the Unix epoch.
    pub expires_at: u64,
    /// Who answers through it.
    pub acts_as: Identity,
}

/// What `GET /answer/{token}/request` answers: the request as its `GET` route shows it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub(crate) struct Linked {
    /// `question` or `approval`.
    kind: &'static str,
    /// The request with its status, as `GET /question/{id}` or `GET /approval/{id}`.
    #[schema(value_type = HashMap<String, serde_json::Value>)]
    request: Value,
    /// Who answers through the link.
    acts_as: Identity,
    /// When the link stops working, milliseconds since the Unix epoch.
    expires_at: u64,
}

/// Mint an answer link for a pending question.
#[utoipa::path(
    post,
    path = "/question/{id}/link",
    operation_id = "question.link",
    tag = "question",
    params(("id" = String, Path, description = "Question id, `que_` + ULID, or its key `{sessionID}_{n}` (`approvalKey`)")),
    responses(
        (status = 200, description = "The link", body = Minted),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "An agent's token (`forbidden`): agents decide nothing", body = crate::error::ErrorBody),
        (status = 404, description = "No such question (or not visible to this token)", body = crate::error::ErrorBody),
        (status = 409, description = "Already resolved", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn mint_question(
    State(state): State<AppState>,
    caller: Caller,
    QuestionPath(id): QuestionPath,
) -> Result<Json<Minted>, ApiError> {
    let snapshot = questions::visible(&state, &caller, id).await?;
    let pending = snapshot.outcome.is_none();
    let expires_at = snapshot.request.expires_at;
    mint(
        &state,
        &caller,
        RequestId::Question(id),
        pending,
        expires_at,
    )
}

/// Mint an answer link for a pending approval request.
#[utoipa::path(
    post,
    path = "/approval/{id}/link",
    operation_id = "approval.link",
    tag = "approval",
    params(("id" = String, Path, description = "`apr_` + ULID, or the `approval_key`")),
    responses(
        (status = 200, description = "The link", body = Minted),
        (status = 401, description = "Missing or unknown token", body = crate::error::ErrorBody),
        (status = 403, description = "An agent's token (`forbidden`): agents decide nothing", body = crate::error::ErrorBody),
        (status = 404, description = "No such request (or not visible to this token)", body = crate::error::ErrorBody),
        (status = 409, description = "Already decided, timed out or cancelled", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn mint_approval(
    State(state): State<AppState>,
    caller: Caller,
    SegmentPath(key): SegmentPath,
) -> Result<Json<Minted>, ApiError> {
    let snapshot = approvals::visible(&state, &caller, &key).await?;
    let pending = snapshot.outcome.is_none();
    let id = RequestId::Approval(snapshot.request.id);
    let expires_at = snapshot.request.expires_at;
    mint(&state, &caller, id, pending, expires_at)
}

/// Mints the link of `request`, which expires at `expires_at` if ever, acting as the
/// caller.
fn mint(
    state: &AppState,
    caller: &Caller,
    request: RequestId,
    pending: bool,
    expires_at: Option<u64>,
) -> Result<Json<Minted>, ApiError> {
    let acts_as = caller.0.identity.clone();
    if !acts_as.may_decide() {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "{acts_as} may not answer requests, so it may not hand out links to answer them"
            ),
        ));
    }
    if !pending {
        return Err(ApiError::new(
            ErrorCode::AlreadyResolved,
            format!("{request} already has its outcome: there is nothing left to answer"),
        ));
    }
    Ok(Json(
        state
            .inner
            .config
            .link_key
            .mint(request, acts_as, expires_at),
    ))
}

/// Read the request an answer link is for (no token: the link is the credential).
#[utoipa::path(
    get,
    path = "/answer/{token}/request",
    operation_id = "answer.request",
    tag = "answer",
    params(("token" = String, Path, description = "The link's token")),
    responses(
        (status = 200, description = "The request with its status, and who answers through the link", body = Linked),
        (status = 404, description = "Not a valid link of this server (forged, altered, or for a request it no longer knows)", body = crate::error::ErrorBody),
        (status = 410, description = "The link expired (`link_expired`)", body = crate::error::ErrorBody),
        (status = 503, description = "The store refused the request's outcome (`outcome_not_recorded`): it must not be acted on", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn read(
    State(state): State<AppState>,
    SegmentPath(token): SegmentPath,
) -> Result<Json<Linked>, ApiError> {
    let (link, scope) = Link::open(&token, &state)?;
    let caller = link.caller(&scope, session_of(&state, &link).await?)?;
    let (kind, request) = match link.request {
        RequestId::Question(id) => {
            let Json(status) = questions::get(State(state), caller, QuestionPath(id)).await?;
            ("question", serde_json::to_value(status))
        }
        RequestId::Approval(id) => {
            let Json(status) =
                approvals::get(State(state), caller, SegmentPath(id.to_string())).await?;
            ("approval", serde_json::to_value(status))
        }
    };
    let request = request.map_err(|_| ApiError::new(ErrorCode::Internal, "internal error"))?;
    Ok(Json(Linked {
        kind,
        request,
        acts_as: link.acts_as,
        expires_at: link.expires_at,
    }))
}

/// Answer the request of an answer link, as the link's identity: the body of the reply
/// route of its kind. The first answer wins; the link acts once.
#[utoipa::path(
    post,
    path = "/answer/{token}",
    operation_id = "answer.reply",
    tag = "answer",
    params(("token" = String, Path, description = "The link's token")),
    request_body(content = HashMap<String, serde_json::Value>, description = "A question's reply body (`{\"answers\": [[...]]}`, or keyed by question text) or an approval's (`{\"decisions\": [...]}`)"),
    responses(
        (status = 200, description = "Answered (under a quorum: this reviewer's vote is recorded)", body = bool, content_type = "application/json"),
        (status = 400, description = "Malformed JSON", body = crate::error::ErrorBody),
        (status = 403, description = "The link's identity may not decide this request (it asked it, or the request names other reviewers), or it voted already", body = crate::error::ErrorBody),
        (status = 404, description = "Not a valid link of this server", body = crate::error::ErrorBody),
        (status = 409, description = "Already answered (through this link or otherwise), timed out or cancelled", body = crate::error::ErrorBody),
        (status = 410, description = "The link expired (`link_expired`)", body = crate::error::ErrorBody),
        (status = 415, description = "Not JSON", body = crate::error::ErrorBody),
        (status = 422, description = "An answer that does not fit the request", body = crate::error::ErrorBody),
        (status = 503, description = "The answer could not be stored durably", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn reply(
    State(state): State<AppState>,
    SegmentPath(token): SegmentPath,
    ApiJson(body): ApiJson<Value>,
) -> Result<Json<bool>, ApiError> {
    let (link, scope) = Link::open(&token, &state)?;
    let caller = link.caller(&scope, session_of(&state, &link).await?)?;
    match link.request {
        RequestId::Question(id) => {
            questions::reply(
                State(state),
                caller,
                QuestionPath(id),
                ReplyBody::Value(body),
            )
            .await
        }
        RequestId::Approval(id) => {
            let reply = serde_json::from_value(body).map_err(|error| {
                ApiError::new(
                    ErrorCode::Invalid,
                    format!("expected {{\"decisions\": [...]}}: {error}"),
                )
            })?;
            approvals::reply(
                State(state),
                caller,
                SegmentPath(id.to_string()),
                ApiJson(reply),
            )
            .await
        }
    }
}

/// Decline the question of an answer link, as the link's identity (questions only: an
/// approval is refused by its decisions).
#[utoipa::path(
    post,
    path = "/answer/{token}/reject",
    operation_id = "answer.reject",
    tag = "answer",
    params(("token" = String, Path, description = "The link's token")),
    request_body(content = Option<questions::RejectBody>, description = "Optional: `{\"reason\": \"...\"}`"),
    responses(
        (status = 200, description = "Rejected", body = bool, content_type = "application/json"),
        (status = 403, description = "The link's identity may not decide this question", body = crate::error::ErrorBody),
        (status = 404, description = "Not a valid link of this server, or an approval's (reject one with its decisions)", body = crate::error::ErrorBody),
        (status = 409, description = "Already answered, timed out or cancelled", body = crate::error::ErrorBody),
        (status = 410, description = "The link expired (`link_expired`)", body = crate::error::ErrorBody),
    ),
)]
pub(crate) async fn reject(
    State(state): State<AppState>,
    SegmentPath(token): SegmentPath,
    request: Request,
) -> Result<Json<bool>, ApiError> {
    let (link, scope) = Link::open(&token, &state)?;
    let RequestId::Question(id) = link.request else {
        return Err(ApiError::new(
            ErrorCode::NotFound,
            "an approval is not rejected as a whole: send `reject` decisions to /answer/{token}",
        ));
    };
    let caller = link.caller(&scope, session_of(&state, &link).await?)?;
    questions::reject(State(state), caller, QuestionPath(id), request).await
}

/// The session of the link's request, which scopes what the link may touch; `404` when
/// the request is not known (anymore).
async fn session_of(state: &AppState, link: &Link) -> Result<Arc<str>, ApiError> {
    let everywhere = Caller(Authorized {
        scope: TokenScope::AllSessions,
        token: None,
        identity: link.acts_as.clone(),
    });
    match link.request {
        RequestId::Question(id) => questions::visible(state, &everywhere, id)
            .await
            .map(|snapshot| Arc::clone(&snapshot.request.session_id)),
        RequestId::Approval(id) => approvals::visible(state, &everywhere, &id.to_string())
            .await
            .map(|snapshot| Arc::clone(&snapshot.request.session_id)),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn link() -> Link {
        Link {
            request: "que_01JZ6Q3V8R5M2K7D4T9WXYZABC".parse().unwrap(),
            acts_as: Identity::new("alice.o'brien", Role::Reviewer),
            expires_at: 1_900_000_000_000,
        }
    }

    #[test]
    fn a_link_reads_back_under_its_key_only_and_not_once_altered() {
        let key = LinkKey::random();
        let token = link().token(&key);
        assert_eq!(Link::verify(&token, &key), Some(link()));
        assert_eq!(Link::verify(&token, &LinkKey::random()), None);
        // Any one character changed, anywhere, breaks it.
        for at in 0..token.len() {
            let mut altered = token.clone().into_bytes();
            altered[at] = if altered[at] == b'A' { b'B' } else { b'A' };
            let altered = String::from_utf8(altered).unwrap();
            if altered != token {
                assert_eq!(Link::verify(&altered, &key), None, "{altered}");
            }
        }
        // Another request's id with this signature is no link either.
        let (_, signature) = token.rsplit_once('.').unwrap();
        let moved = Link {
            request: "que_01JZ6Q3V8R5M2K7D4T9WXYZABD".parse().unwrap(),
            ..link()
        }
        .token(&key);
        let (signed, _) = moved.rsplit_once('.').unwrap();
        assert_eq!(Link::verify(&format!("{signed}.{signature}"), &key), None);
        assert_eq!(Link::verify(&"a".repeat(MAX_TOKEN + 1), &key), None);
    }

    #[test]
    fn no_link_acts_as_an_agent_and_short_secrets_are_refused() {
        let key = LinkKey::from_secret(&"s".repeat(32)).unwrap();
        let agent = Link {
            acts_as: Identity::new("agent-1", Role::Agent),
            ..link()
        };
        assert_eq!(Link::verify(&agent.token(&key), &key), None);
        assert!(LinkKey::from_secret("short").is_err());
    }
}
