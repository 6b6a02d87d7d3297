//! Bearer-token authentication, identities and session scoping.
//!
//! Policy, in exact words: with no token configured every request is allowed, as
//! [`Identity::local`] (the server binary only allows that on loopback). With tokens
//! configured, every route except `/health` and `/openapi.json` needs
//! `Authorization: Bearer <token>`; a missing or unknown token is 401. Each token is an
//! [`Identity`], a name and a [`Role`]: what the role allows is not checked here but where
//! requests are made and decided (`askbus_question`'s `Duties`, reached through
//! `AppState::hub_for`), so no route can forget it; a right token with the wrong role is
//! 403 there. A token scoped to a session sees only that session: its lists and streams
//! are filtered to it, a request id of another session answers 404 as if it did not exist
//! (ids are guessable, so existence is not revealed), and naming another session outright
//! (a `sessionID` filter, creating a question, cancelling a session) is 403.
//!
//! Tokens are compared in constant time: the comparison reads every byte of every
//! configured token whatever the candidate is, so timing reveals neither which token nor
//! how much of one matched.

use std::sync::Arc;

use askbus_question::{Identity, Role};
use axum::body::Body;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, Request, header};
use axum::response::{IntoResponse, Response};
use subtle::{Choice, ConstantTimeEq};
use tower_http::validate_request::ValidateRequest;

use crate::error::ApiError;

/// A bearer token the server accepts: who bears it, and which sessions it may access.
#[derive(Clone)]
pub struct AccessToken {
    /// The secret the client sends.
    secret: Arc<str>,
    /// Which sessions requests bearing it may see and act in.
    scope: TokenScope,
    /// Who bears it: its name, recorded as the asker or decider of what it does, and its
    /// role, what it may do.
    identity: Identity,
}

/// What a token gives access to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenScope {
    /// Every session.
    AllSessions,
    /// One session's requests and events only.
    Session(Arc<str>),
}

/// Who is calling, as established by [`Authenticate`] (see [`Authorized`]).
#[derive(Debug, Clone)]
pub(crate) struct Caller(pub(crate) Authorized);

impl AccessToken {
    /// An `admin` token named `admin`, with access to every session: the plain `--token`.
    /// Name it with [`named`](Self::named) when a server has several.
    pub fn all_sessions(secret: impl Into<Arc<str>>) -> Self {
        Self::new(secret, Identity::new("admin", Role::Admin))
    }

    /// An `agent` token named `agent` that only sees and acts in `session_id`: it makes
    /// requests there and waits on them, and never answers one (`--token SECRET@SESSION`).
    pub fn for_session(secret: impl Into<Arc<str>>, session_id: impl Into<Arc<str>>) -> Self {
        Self::new(secret, Identity::new("agent", Role::Agent)).in_session(session_id)
    }

    /// A token borne by `identity`, with access to every session.
    pub fn new(secret: impl Into<Arc<str>>, identity: Identity) -> Self {
        Self {
            secret: secret.into(),
            scope: TokenScope::AllSessions,
            identity,
        }
    }

    /// This token limited to the requests and events of `session_id`.
    #[must_use]
    pub fn in_session(mut self, session_id: impl Into<Arc<str>>) -> Self {
        self.scope = TokenScope::Session(session_id.into());
        self
    }

    /// This token with its identity renamed to `name`.
    #[must_use]
    pub fn named(mut self, name: impl Into<Arc<str>>) -> Self {
        self.identity.name = name.into();
        self
    }

    /// What the token gives access to.
    pub fn scope(&self) -> &TokenScope {
        &self.scope
    }

    /// Who bears the token.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// Whether `other` has the same secret: two credentials with one secret are one, whose
    /// bearer would be whichever matched (a configuration to refuse).
    pub fn shares_secret_with(&self, other: &Self) -> bool {
        bool::from(secret_eq(self.secret.as_bytes(), other.secret.as_bytes()))
    }
}

impl std::fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the secret.
        f.debug_struct("AccessToken")
            .field("identity", &self.identity)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

impl TokenScope {
    /// Whether a request of `session_id` is visible with this scope.
    pub fn allows(&self, session_id: &str) -> bool {
        match self {
            Self::AllSessions => true,
            Self::Session(own) => **own == *session_id,
        }
    }

    /// The one session this scope is limited to, if any.
    pub fn session(&self) -> Option<&Arc<str>> {
        match self {
            Self::AllSessions => None,
            Self::Session(own) => Some(own),
        }
    }
}

impl Caller {
    /// `Ok` if the caller may act for `session_id` (ask, resume, cancel, stream in it).
    ///
    /// # Errors
    ///
    /// 403 for a token scoped to another session.
    pub(crate) fn act_for(&self, session_id: &str) -> Result<(), crate::ApiError> {
        if self.0.scope.allows(session_id) {
            Ok(())
        } else {
            Err(crate::ApiError::forbidden(
                "this token may only act for its own session",
            ))
        }
    }
    /// The session a listing covers: the one asked for, or with a scoped token its own
    /// (which it may also name).
    ///
    /// # Errors
    ///
    /// 403 when a scoped token asks for another session.
    pub(crate) fn listed_session<'a>(
        &'a self,
        asked: Option<&'a str>,
    ) -> Result<Option<&'a str>, crate::ApiError> {
        match (self.0.scope.session(), asked) {
            (Some(own), Some(asked)) if **own != *asked => Err(crate::ApiError::forbidden(
                "this token may only list its own session's requests",
            )),
            (Some(own), _) => Ok(Some(&**own)),
            (None, asked) => Ok(asked),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        // `Authenticate` always inserts it; its absence means the route was mounted without
        // it, and refusing is the safe answer.
        parts
            .extensions
            .get::<Self>()
            .cloned()
            .ok_or_else(|| ApiError::unauthorized("authentication is required"))
    }
}

/// What every protected route sits behind (as a `ValidateRequestHeaderLayer`): it
/// establishes the [`Caller`] from the request's bearer token, or answers 401 before the
/// route runs. A plain synchronous check, so it costs a request no boxed future.
#[derive(Clone)]
pub(crate) struct Authenticate {
    /// The tokens the server accepts; none means every request is allowed.
    tokens: Arc<[AccessToken]>,
}

impl Authenticate {
    pub(crate) fn new(tokens: &[AccessToken]) -> Self {
        Self {
            tokens: tokens.into(),
        }
    }
}

impl<B> ValidateRequest<B> for Authenticate {
    type ResponseBody = Body;

    fn validate(&mut self, request: &mut Request<B>) -> Result<(), Response> {
        let authorized = authorize(&self.tokens, request.headers())
            .map_err(|refused| refused.into_response())?;
        request.extensions_mut().insert(Caller(authorized));
        Ok(())
    }
}

/// Who a request is from, as [`authorize`] established it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorized {
    /// What its token gives access to ([`TokenScope::AllSessions`] without tokens).
    pub scope: TokenScope,
    /// Its token's position in the configured tokens, which names it in accounts and
    /// errors (`token 2`) and takes its share of the stream slots
    /// ([`StreamSlots::try_take_for`](crate::StreamSlots::try_take_for)); `None` without
    /// tokens.
    pub token: Option<usize>,
    /// Who bears the token ([`Identity::local`] without tokens).
    pub identity: Identity,
}

/// Checks a request's bearer token the way every protected route of the API does, for
/// routes served beside [`router`](crate::router) (the MCP endpoint): who the matching
/// token is ([`TokenScope::AllSessions`] and no token when `tokens` is empty).
///
/// # Errors
///
/// [`Unauthorized`] when tokens are configured and the request bears none of them.
pub fn authorize(tokens: &[AccessToken], headers: &HeaderMap) -> Result<Authorized, Unauthorized> {
    if tokens.is_empty() {
        return Ok(Authorized {
            scope: TokenScope::AllSessions,
            token: None,
            identity: Identity::local(),
        });
    }
    bearer(headers)
        .and_then(|candidate| find_token(tokens, candidate))
        .map(|(position, token)| Authorized {
            scope: token.scope.clone(),
            token: Some(position),
            identity: token.identity.clone(),
        })
        .ok_or(Unauthorized)
}

/// A request without a valid bearer token; answers the API's 401 (JSON body,
/// `WWW-Authenticate: Bearer`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unauthorized;

impl IntoResponse for Unauthorized {
    fn into_response(self) -> Response {
        let mut response =
            ApiError::unauthorized("a valid `Authorization: Bearer <token>` header is required")
                .into_response();
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            header::HeaderValue::from_static("Bearer"),
        );
        response
    }
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    let value = headers.get(header::AUTHORIZATION)?.as_bytes();
    let scheme = value.get(..7)?;
    scheme
        .eq_ignore_ascii_case(b"bearer ")
        .then(|| value[7..].trim_ascii())
}

/// The configured token equal to `candidate`, with its position, found in constant time
/// over all tokens.
fn find_token<'a>(tokens: &'a [AccessToken], candidate: &[u8]) -> Option<(usize, &'a AccessToken)> {
    let mut found = None;
    for (position, token) in tokens.iter().enumerate() {
        // No early exit: every token is compared, so the time does not depend on which one
        // (if any) matched.
        if bool::from(secret_eq(token.secret.as_bytes(), candidate)) {
            found = Some((position, token));
        }
    }
    found
}

/// Constant-time equality whose running time depends only on the length of `secret`.
fn secret_eq(secret: &[u8], candidate: &[u8]) -> Choice {
    let mut equal = (secret.len() as u64).ct_eq(&(candidate.len() as u64));
    for (index, byte) in secret.iter().enumerate() {
        equal &= byte.ct_eq(candidate.get(index).unwrap_or(&0));
    }
    equal
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_eq_compares_whole_secrets() {
        let check = |candidate: &[u8], expected: bool| {
            assert_eq!(bool::from(secret_eq(b"s3cret", candidate)), expected);
        };
        check(b"s3cret", true);
        check(b"s3cre", false);
        check(b"s3cret!", false);
        check(b"s3creT", false);
        check(b"", false);
    }
}
