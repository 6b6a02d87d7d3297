//! What every request to the server passes before anything else: the host it names, and,
//! for a request that changes something, the site it comes from.
//!
//! A server on loopback without a token trusts whoever can reach it, and a browser can be
//! made to reach it: a page served as `attacker.example`, whose name the attacker then
//! points at 127.0.0.1 (DNS rebinding), is same-origin with the server in the browser's
//! eyes and can read every pending request and answer it; a page of any origin can send
//! "simple" requests (a form, a bodyless or `text/plain` `fetch` in `no-cors` mode) that
//! the browser delivers without asking. [`guarded`] puts [`SiteGuard`] in front of
//! everything the server serves (the API, the web UI, `/mcp`), so no route can miss it.
//!
//! Policy, in exact words:
//!
//! - **No header larger than [`MAX_HEADER_BYTES`].** It is `431 header_too_large`.
//! - **No route acts for a foreign `Host`.** A request's `Host` (and the authority of an
//!   absolute-form target) must name the listen address, a loopback name (`localhost`,
//!   `127.0.0.1`, `[::1]`) with the listen port, or a configured [`AllowedHost`]; anything
//!   else is `421 misdirected_request`, before any route runs. A request without a `Host`
//!   cannot come from a browser and passes. So do the probes, `GET /health` and
//!   `GET /ready`, which orchestrators send by IP address and which reveal nothing, and,
//!   on a server that requires tokens, `GET /metrics`, which scrapers send to each pod's
//!   address and which answers an admin's token only.
//! - **No cross-site request changes anything.** A request other than `GET`, `HEAD` or
//!   `OPTIONS` whose `Origin` is neither the server's own (the `Host` it named) nor a
//!   configured CORS origin, or that the browser marks `Sec-Fetch-Site: cross-site`, is
//!   `403 forbidden`. Reads from another site are refused the same way, except top-level
//!   navigations (`Sec-Fetch-Mode: navigate` to a `document`: a link to the web UI still
//!   opens it; a frame does not), so a page elsewhere cannot hold the server's streams
//!   either.
//! - **A body that changes something is JSON.** Such a request with a body whose
//!   `Content-Type` is not JSON (a form, `text/plain`), or with a body and no
//!   `Content-Type`, is `415 unsupported_media_type`: the bodies a browser may send
//!   anywhere without a preflight are never accepted. The one exception is
//!   `POST /slack/interactivity`, which Slack sends as a form: it passes with a form body
//!   (still not cross-site), and the route itself refuses (`401`) whatever does not carry
//!   Slack's signature under the app's signing secret, which no page can make.
//!
//! Clients that are not browsers send neither `Origin` nor `Sec-Fetch-*`, and name the
//! address they connect to, so they are not affected.
//!
//! ```
//! use askbus_http::{AllowedHost, HttpConfig, SiteGuard, guarded};
//!
//! let config = HttpConfig {
//!     allowed_hosts: vec!["askbus.internal".parse::<AllowedHost>().unwrap()],
//!     ..HttpConfig::default()
//! };
//! let app = axum::Router::new().route("/", axum::routing::get(|| async { "hello" }));
//! let app = guarded(app, SiteGuard::new("127.0.0.1:4717".parse().unwrap(), &config));
//! # drop(app);
//! ```

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::uri::Authority;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, header};
use axum::response::{IntoResponse, Response};
use tower::ServiceBuilder;
use tower_http::validate_request::{ValidateRequest, ValidateRequestHeaderLayer};

use crate::error::{ApiError, ErrorCode};
use crate::extract::not_json;
use crate::{AccessLog, HttpConfig, questions};

/// The header by which a browser says whose page sent a request, looked up in every
/// request: as a name made once, since a name given as a string is parsed at each lookup.
const SEC_FETCH_SITE: HeaderName = HeaderName::from_static("sec-fetch-site");

/// The largest request header a route sees, in bytes (names, values and their line
/// breaks). hyper's own limit (about 400 KiB) holds only as far as the header arrives in
/// pieces: one that arrives whole can pass it.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;

/// A name the server answers for beside its listen address and the loopback names
/// (`--allowed-host`): `NAME` (any port), `NAME:PORT`, or `*` (any host at all, for a
/// server behind a proxy that passes clients' own `Host`; only sensible with tokens, which
/// a rebinding page does not have).
///
/// # Examples
///
/// ```
/// use askbus_http::AllowedHost;
///
/// let host: AllowedHost = "Askbus.Example.com:8443".parse().unwrap();
/// assert_eq!(host.to_string(), "askbus.example.com:8443");
/// assert_eq!("*".parse::<AllowedHost>().unwrap(), AllowedHost::Any);
/// assert!("https://askbus.example.com".parse::<AllowedHost>().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllowedHost {
    /// Any host.
    Any,
    /// One name (lower case), on any port or on one.
    Name {
        /// The host name or IP address (`[…]` around an IPv6 address).
        name: String,
        /// The port, if only that one.
        port: Option<u16>,
    },
}

/// A string that is not an [`AllowedHost`]; displays why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHost(String);

/// The check [`guarded`] puts in front of every route; see the module docs.
#[derive(Debug, Clone)]
pub struct SiteGuard {
    /// Shared by the clones each connection gets.
    rules: Arc<Rules>,
}

/// What a [`SiteGuard`] allows.
#[derive(Debug)]
struct Rules {
    /// The listen port: the loopback names and the listen address are allowed on it only.
    port: u16,
    /// The names allowed on `port`: the loopback names and the listen address, lower case.
    own_names: Vec<String>,
    /// `own_names` with the port, as clients name them (`127.0.0.1:4717`): nearly every
    /// request names one of these exactly, which a comparison answers where parsing the
    /// authority cost a request about 1,500 instructions.
    own_hosts: Vec<String>,
    /// `--allowed-host` names.
    allowed: Vec<AllowedHost>,
    /// Origins whose pages may call the API (CORS), exactly.
    cors_origins: Vec<HeaderValue>,
    /// Whether the server requires tokens: then `/metrics` answers an admin's token only,
    /// which a rebinding page does not hold, and a scraper may name a pod's address.
    tokens_required: bool,
}

/// `app` behind a [`SiteGuard`], with every error answer of `app` (and of the guard) in
/// the API's `{code, message}` shape: apply it once, over everything the server serves.
pub fn guarded(app: Router, guard: SiteGuard) -> Router {
    app.layer(
        ServiceBuilder::new()
            .layer(crate::error_shape::JsonErrors)
            .layer(ValidateRequestHeaderLayer::custom(guard)),
    )
}

/// [`guarded`], and every request logged in front of the guard ([`AccessLog`]: an access
/// line, the guard's refusals included, and the request run as the work of its id), as the
/// `askbus` binary serves. One layer where `guarded` and then `AccessLog` would be two:
/// each `Router::layer` wraps every route in one more boxed service, which costs every
/// request about 1,200 instructions.
pub fn guarded_and_logged(app: Router, guard: SiteGuard) -> Router {
    app.layer(
        ServiceBuilder::new()
            .layer(AccessLog)
            .layer(crate::error_shape::JsonErrors)
            .layer(ValidateRequestHeaderLayer::custom(guard)),
    )
}

impl SiteGuard {
    /// The guard of a server listening on `listen`, with `config`'s allowed hosts and CORS
    /// origins.
    pub fn new(listen: SocketAddr, config: &HttpConfig) -> Self {
        let mut own_names: Vec<String> = ["localhost", "127.0.0.1", "[::1]"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        if !listen.ip().is_unspecified() {
            let listen_name = match listen {
                SocketAddr::V4(v4) => v4.ip().to_string(),
                SocketAddr::V6(v6) => format!("[{}]", v6.ip()),
            };
            if !own_names.contains(&listen_name) {
                own_names.push(listen_name);
            }
        }
        let port = listen.port();
        let own_hosts = own_names
            .iter()
            .map(|name| format!("{name}:{port}"))
            .collect();
        Self {
            rules: Arc::new(Rules {
                port,
                own_names,
                own_hosts,
                allowed: config.allowed_hosts.clone(),
                cors_origins: config
                    .cors_origins
                    .iter()
                    .map(|origin| origin.header_value().clone())
                    .collect(),
                tokens_required: !config.tokens.is_empty(),
            }),
        }
    }

    /// Whether `request` may name any host: it reads `/health` or `/ready`, which say
    /// nothing worth a rebinding page's while (up or not, and the version) and which probes
    /// send by IP address; or, on a server that requires tokens, `/metrics`, which answers
    /// an admin's token only and which a scraper sends to each pod's address (through a
    /// Service, the replicas' counters would interleave).
    fn may_name_any_host<B>(&self, request: &Request<B>) -> bool {
        matches!(*request.method(), Method::GET | Method::HEAD)
            && match request.uri().path() {
                "/health" | "/ready" => true,
                "/metrics" => self.rules.tokens_required,
                _ => false,
            }
    }

    /// `Ok`, or the answer that refuses `request`; see the module docs.
    fn check<B>(&self, request: &Request<B>) -> Result<(), ApiError> {
        let headers = request.headers();
        let header_bytes: usize = headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len() + 4)
            .sum();
        if header_bytes > MAX_HEADER_BYTES {
            return Err(ApiError::new(
                ErrorCode::HeaderTooLarge,
                format!(
                    "the request header is larger than the server reads ({} KiB)",
                    MAX_HEADER_BYTES / 1024
                ),
            ));
        }
        let host = headers.get(header::HOST);
        // Every `Host` a request carries (a browser sends one; a second could disagree).
        // Probes name the address they reach (a pod's IP), and read nothing to protect.
        let named_hosts = headers
            .get_all(header::HOST)
            .iter()
            .map(HeaderValue::as_bytes)
            .chain(request.uri().authority().map(|a| a.as_str().as_bytes()))
            .filter(|_| !self.may_name_any_host(request));
        for named in named_hosts {
            if !self.rules.answers_for(named) {
                return Err(ApiError::new(
                    ErrorCode::MisdirectedRequest,
                    format!(
                        "this server does not answer for the host {:?}; it answers for its \
                         listen address and loopback names (and the names given with \
                         --allowed-host)",
                        String::from_utf8_lossy(named)
                            .chars()
                            .take(100)
                            .collect::<String>()
                    ),
                ));
            }
        }
        let origin = headers.get(header::ORIGIN);
        let cors_allowed = origin.is_some_and(|origin| self.rules.cors_origins.contains(origin));
        let cross_site = !cors_allowed
            && (headers
                .get(&SEC_FETCH_SITE)
                .is_some_and(|site| site.as_bytes().eq_ignore_ascii_case(b"cross-site"))
                || origin.is_some_and(|origin| !same_origin(origin, host)));
        let changes_state = !matches!(
            *request.method(),
            Method::GET | Method::HEAD | Method::OPTIONS
        );
        if changes_state {
            if cross_site {
                return Err(ApiError::forbidden(
                    "a request from another site may not change anything here; a web UI on \
                     another origin must be listed with --cors-origin",
                ));
            }
            if has_body(headers) && !questions::is_json(headers) && !is_slack_form(request) {
                return Err(not_json());
            }
        } else if cross_site && !is_navigation(headers) {
            return Err(ApiError::forbidden(
                "a page on another site may not read from this server; a web UI on another \
                 origin must be listed with --cors-origin",
            ));
        }
        Ok(())
    }
}

impl Rules {
    /// Whether `named` (a `Host` value or an authority) is a host this server answers for.
    fn answers_for(&self, named: &[u8]) -> bool {
        if self
            .own_hosts
            .iter()
            .any(|own| own.as_bytes().eq_ignore_ascii_case(named))
        {
            return true;
        }
        let Ok(authority) = std::str::from_utf8(named).map(Authority::from_str) else {
            return false;
        };
        let Ok(authority) = authority else {
            return false;
        };
        let Some(port) = port_of(&authority) else {
            return false;
        };
        // `localhost.` is `localhost`.
        let name = authority.host().trim_end_matches('.').to_ascii_lowercase();
        (port == self.port && self.own_names.contains(&name))
            || self.allowed.iter().any(|allowed| match allowed {
                AllowedHost::Any => true,
                AllowedHost::Name {
                    name: allowed,
                    port: allowed_port,
                } => *allowed == name && allowed_port.is_none_or(|only| only == port),
            })
    }
}

impl<B> ValidateRequest<B> for SiteGuard {
    type ResponseBody = Body;

    fn validate(&mut self, request: &mut Request<B>) -> Result<(), Response> {
        self.check(request).map_err(IntoResponse::into_response)
    }
}

/// Whether `origin` (`http://host:port`) is the origin of the `host` the request named.
fn same_origin(origin: &HeaderValue, host: Option<&HeaderValue>) -> bool {
    let origin = origin.as_bytes();
    let authority = origin
        .strip_prefix(b"http://")
        .or_else(|| origin.strip_prefix(b"https://"));
    matches!((authority, host), (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host.as_bytes()))
}

/// The port `authority` names (80, HTTP's, when it names none); `None` when it is not a
/// port number.
fn port_of(authority: &Authority) -> Option<u16> {
    // What follows the host: nothing, or `:` and the port (`Authority::port` would read
    // `:notaport` as no port at all).
    match authority.as_str().get(authority.host().len()..)? {
        "" => Some(80),
        after => after.strip_prefix(':')?.parse().ok(),
    }
}

/// Whether `request` is Slack's form post to its interactivity route, which checks Slack's
/// signature itself.
fn is_slack_form<B>(request: &Request<B>) -> bool {
    request.method() == Method::POST
        && request.uri().path() == "/slack/interactivity"
        && request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.split(';').next())
            .is_some_and(|mime| {
                mime.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
}

/// Whether the request carries a body (a non-zero `Content-Length`, or chunks).
fn has_body(headers: &HeaderMap) -> bool {
    headers.contains_key(header::TRANSFER_ENCODING)
        || headers
            .get(header::CONTENT_LENGTH)
            .is_some_and(|length| length.as_bytes() != b"0")
}

/// Whether the browser marks the request as a top-level navigation: a page opened in a
/// tab or window, not in a frame (a frame of another site could hold a stream open).
fn is_navigation(headers: &HeaderMap) -> bool {
    let marked = |name: &str, value: &[u8]| {
        headers
            .get(name)
            .is_some_and(|got| got.as_bytes().eq_ignore_ascii_case(value))
    };
    marked("sec-fetch-mode", b"navigate") && marked("sec-fetch-dest", b"document")
}

impl FromStr for AllowedHost {
    type Err = InvalidHost;

    fn from_str(text: &str) -> Result<Self, InvalidHost> {
        let text = text.trim();
        if text == "*" {
            return Ok(Self::Any);
        }
        let invalid = || InvalidHost(text.to_owned());
        let authority = Authority::from_str(text).map_err(|_| invalid())?;
        if authority.as_str().contains('@')
            || authority.host().is_empty()
            || port_of(&authority).is_none()
        {
            return Err(invalid());
        }
        Ok(Self::Name {
            name: authority.host().trim_end_matches('.').to_ascii_lowercase(),
            port: authority.port_u16(),
        })
    }
}

impl fmt::Display for AllowedHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Any => f.write_str("*"),
            Self::Name { name, port: None } => f.write_str(name),
            Self::Name {
                name,
                port: Some(port),
            } => write!(f, "{name}:{port}"),
        }
    }
}

impl fmt::Display for InvalidHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} is not a host: expected a name or address with an optional port \
             (askbus.example.com, askbus.example.com:8443, 10.0.0.5, [fd00::5]:4717), or `*`",
            self.0
        )
    }
}

impl std::error::Error for InvalidHost {}
