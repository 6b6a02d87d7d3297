//! Caps on how many requests callers may leave pending: per session, per account and in
//! total, questions and approvals counted together.
//!
//! A pending request costs memory until a human answers it or it times out, and nobody
//! but its asker decides how many there are. A hub serving clients it does not control (the
//! askbus server) therefore caps them with [`PendingLimits`], given to
//! [`RequestHub::with_pending_limits`](crate::RequestHub::with_pending_limits). The caps are
//! kept where every request passes, the registry's `register`, so every way in (the
//! services, HTTP, MCP, the tools, the guard) is refused alike.
//!
//! The policy, in exact words, is on [`PendingLimits`]. The counts live in one [`Quota`]
//! the hub's two registries share (as they share their id source), taken under a registry
//! lock only (registry → quota), so a check and the insert it allows are one step: racing
//! creates cannot pass a limit between them.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// How many requests may be pending at once, questions and approvals together.
///
/// Given to [`RequestHub::with_pending_limits`](crate::RequestHub::with_pending_limits).
/// Without limits (the library's default) nothing is counted: an embedder's own agents are
/// trusted code, and pay nothing for caps they do not need.
///
/// Policy, in exact words:
///
/// - **A new request is refused** ([`SubmitError::OverQuota`](crate::SubmitError::OverQuota))
///   when its session already has `per_session` pending requests, its account
///   `per_account`, or the hub `total`. A refused request changes nothing: no id is taken,
///   no event is published, nothing is written to the store.
/// - **A request that joins an earlier one** by its tool call is not new: it is never
///   refused for quota and counts nothing.
/// - **A slot frees when the request ends**, whatever its outcome (replied, rejected,
///   timed out, cancelled, withdrawn).
/// - **Requests that exist already count but are never refused**: those restored from the
///   store at start, and those another instance sharing the store asked. Over a shared store
///   the counts are what this instance knows: every instance follows every request, so each
///   counts them all, but two instances may admit a request each at the same moment, so
///   the total over the store can pass a limit by as many requests as were made at once.
/// - **Accounts are the caller's names** for who asks (the server: one per bearer token).
///   A handle from [`RequestHub::for_account`](crate::RequestHub::for_account) charges its
///   new requests to its account too. A request read from the store has no account.
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_question::{PendingLimits, QuotaExceeded, RequestHub, SubmitError, Timeout};
/// use askbus_question::{QuestionInfo, QuestionOption};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let question = || vec![QuestionInfo::new("Ship?", "Ship", [QuestionOption::new("Yes", "")])];
/// let defaults = PendingLimits::default();
/// assert_eq!((defaults.per_session, defaults.total), (1_000, 100_000));
/// assert_eq!(defaults.per_account, usize::MAX);
///
/// let limits = PendingLimits { per_session: 1, ..defaults };
/// let hub = RequestHub::new(Bus::new()).with_pending_limits(limits);
/// let first = hub.questions().ask("s1", question()).timeout(Timeout::Never).submit().unwrap();
///
/// let refused = hub.questions().ask("s1", question()).timeout(Timeout::Never).submit().unwrap_err();
/// assert!(matches!(refused, SubmitError::OverQuota(QuotaExceeded::Session { .. })));
/// // Another session has room; and once the first request ends, so has s1.
/// assert!(hub.questions().ask("s2", question()).timeout(Timeout::Never).submit().is_ok());
/// drop(first);
/// assert!(hub.questions().ask("s1", question()).timeout(Timeout::Never).submit().is_ok());
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingLimits {
    /// Pending requests of one session. Default: 1,000.
    pub per_session: usize,
    /// Pending requests of one account. Default: `usize::MAX` (no limit).
    pub per_account: usize,
    /// Pending requests of the hub. Default: 100,000.
    pub total: usize,
    /// The weight of all pending requests together: about the memory they take,
    /// in bytes. Default: 256 MiB. Resolved requests the registries remember (for late
    /// readers, `409` answers and retries of a tool call) are forgotten, oldest first, once
    /// theirs passes a quarter of it, in each kind.
    pub bytes: usize,
    /// JSON values in one request's content (its questions; its calls' arguments and
    /// review configs). Default: 2,000. A parsed value costs far more memory than its
    /// text (`[{},{},…]` takes some 30 times its size), so a body within the size limit can
    /// still be a heavy request: this bounds one, and [`bytes`](Self::bytes) all of them.
    pub values_per_request: usize,
}

/// What a request's content costs to hold: its size as JSON, and how many JSON values it
/// has; together, its [`bytes`](Self::bytes), an estimate of the memory it takes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Weight {
    /// The length of its JSON text.
    pub(crate) json: usize,
    /// Its JSON values (each object, array, string, number, boolean and null).
    pub(crate) values: usize,
}

/// Which limit a new request would pass; its message names it and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuotaExceeded {
    /// The session has `limit` pending requests.
    #[error(
        "session {session:?} already has {limit} pending requests, its limit: wait for answers \
         (or cancel some) before asking more"
    )]
    Session {
        /// The session of the refused request.
        session: Arc<str>,
        /// Its limit ([`PendingLimits::per_session`]).
        limit: usize,
    },
    /// The account has `limit` pending requests.
    #[error(
        "{account} already holds {limit} pending requests, its limit: wait for answers \
         (or cancel some) before asking more"
    )]
    Account {
        /// The account the refused request was charged to.
        account: Arc<str>,
        /// Its limit ([`PendingLimits::per_account`]).
        limit: usize,
    },
    /// The hub has `limit` pending requests.
    #[error(
        "{limit} requests are already pending, the limit of this server: wait for answers \
         before asking more"
    )]
    Total {
        /// The limit ([`PendingLimits::total`]).
        limit: usize,
    },
    /// The pending requests weigh as much as they may ([`PendingLimits::bytes`]).
    #[error(
        "the pending requests already take the memory this server gives them ({} MiB): wait \
         for answers, or ask with less content, before asking more",
        limit / (1024 * 1024)
    )]
    Bytes {
        /// The limit ([`PendingLimits::bytes`]).
        limit: usize,
    },
}

/// Who a new request is charged to: its session, and its asker's account if any.
pub(crate) struct Charge {
    /// The request's session.
    pub(crate) session: Arc<str>,
    /// The account of the handle it was made through.
    pub(crate) account: Option<Arc<str>>,
    /// What its content weighs (measured only when a quota is installed).
    pub(crate) weight: usize,
}

/// The counts and limits of one hub, shared by its two registries (taken under a registry
/// lock, never the other way round).
pub(crate) struct Quota {
    /// Everything mutable.
    state: Mutex<Counts>,
}

/// What the quota lock protects.
struct Counts {
    /// The limits in force.
    limits: PendingLimits,
    /// Pending requests in all.
    total: usize,
    /// Their weight, in all.
    bytes: usize,
    /// Pending requests per session; sessions with none are removed.
    sessions: HashMap<Arc<str>, usize>,
    /// The sessions that have had two requests pending at once since they last had none
    /// (see [`Quota::crowded`]); a subset of `sessions`' keys.
    crowded: HashSet<Arc<str>>,
    /// Pending requests per account; accounts with none are removed.
    accounts: HashMap<Arc<str>, usize>,
}

impl Default for PendingLimits {
    fn default() -> Self {
        Self {
            per_session: 1_000,
            per_account: usize::MAX,
            total: 100_000,
            bytes: 256 * 1024 * 1024,
            values_per_request: 2_000,
        }
    }
}

impl Quota {
    /// A quota with nothing counted yet.
    pub(crate) fn new(limits: PendingLimits) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(Counts {
                limits,
                total: 0,
                bytes: 0,
                sessions: HashMap::new(),
                crowded: HashSet::new(),
                accounts: HashMap::new(),
            }),
        })
    }

    /// Replaces the limits; what is counted stays.
    pub(crate) fn set_limits(&self, limits: PendingLimits) {
        self.lock().limits = limits;
    }

    /// Counts a new request of `charge`, unless that passes a limit; then counts nothing.
    pub(crate) fn admit(&self, charge: &Charge) -> Result<(), QuotaExceeded> {
        let mut counts = self.lock();
        let limits = counts.limits;
        if counts.total >= limits.total {
            return Err(QuotaExceeded::Total {
                limit: limits.total,
            });
        }
        if counts.bytes.saturating_add(charge.weight) > limits.bytes {
            return Err(QuotaExceeded::Bytes {
                limit: limits.bytes,
            });
        }
        if counts.sessions.get(&*charge.session).copied().unwrap_or(0) >= limits.per_session {
            return Err(QuotaExceeded::Session {
                session: Arc::clone(&charge.session),
                limit: limits.per_session,
            });
        }
        if let Some(account) = &charge.account
            && counts.accounts.get(&**account).copied().unwrap_or(0) >= limits.per_account
        {
            return Err(QuotaExceeded::Account {
                account: Arc::clone(account),
                limit: limits.per_account,
            });
        }
        counts.total += 1;
        counts.bytes += charge.weight;
        let pending = counts
            .sessions
            .entry(Arc::clone(&charge.session))
            .or_default();
        *pending += 1;
        if *pending > 1 {
            counts.crowded.insert(Arc::clone(&charge.session));
        }
        if let Some(account) = &charge.account {
            *counts.accounts.entry(Arc::clone(account)).or_default() += 1;
        }
        Ok(())
    }

    /// Counts a request of `session` weighing `weight` that exists already (read from the
    /// store), whatever the limits.
    pub(crate) fn count(&self, session: &str, weight: usize) {
        let mut counts = self.lock();
        counts.total += 1;
        counts.bytes += weight;
        match counts.sessions.get_mut(session) {
            Some(count) => {
                *count += 1;
                counts.crowded.insert(session.into());
            }
            None => {
                counts.sessions.insert(session.into(), 1);
            }
        }
    }

    /// Frees the slot of a request of `session` (charged to `account`, weighing `weight`)
    /// that ended.
    pub(crate) fn release(&self, session: &str, account: Option<&Arc<str>>, weight: usize) {
        let mut counts = self.lock();
        counts.total = counts.total.saturating_sub(1);
        counts.bytes = counts.bytes.saturating_sub(weight);
        decrement(&mut counts.sessions, session);
        if !counts.sessions.contains_key(session) {
            counts.crowded.remove(session);
        }
        if let Some(account) = account {
            decrement(&mut counts.accounts, account);
        }
    }

    /// Whether `session` has had two requests pending at once, of either kind, since it
    /// last had none: then "its interrupt" has named more than one request, and which one
    /// a checkpoint-less resume answers is for its caller to say, not for the server to
    /// guess (the one a human looked at may have ended before the answer landed).
    pub(crate) fn crowded(&self, session: &str) -> bool {
        self.lock().crowded.contains(session)
    }

    /// The limits in force.
    pub(crate) fn limits(&self) -> PendingLimits {
        self.lock().limits
    }

    fn lock(&self) -> MutexGuard<'_, Counts> {
        // Every update is complete before the lock is released and nothing under it can
        // panic midway: a poisoned lock is still a sound one.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Takes one from `key`'s count, removing it at zero so the map holds only keys with
/// pending requests.
fn decrement(counts: &mut HashMap<Arc<str>, usize>, key: &str) {
    if let Some(count) = counts.get_mut(key) {
        *count -= 1;
        if *count == 0 {
            counts.remove(key);
        }
    }
}

impl Weight {
    /// What `content` weighs, measured on its JSON: as [`serde_json`] writes it, the
    /// structural characters outside strings count its values (every `{` or `[` one child,
    /// every `,` one more, an empty `{}` or `[]` none).
    pub(crate) fn of<T: serde::Serialize + ?Sized>(content: &T) -> Self {
        let mut counter = JsonCounter::default();
        // Writing to a counter cannot fail, and the content types serialise infallibly.
        let _ = serde_json::to_writer(&mut counter, content);
        Self {
            json: counter.bytes,
            values: counter.values + 1,
        }
    }

    /// The memory estimate: the JSON text, plus one parsed [`serde_json::Value`] per
    /// value.
    pub(crate) fn bytes(self) -> usize {
        self.json
            .saturating_add(self.values.saturating_mul(size_of::<serde_json::Value>()))
    }
}

/// Counts the bytes and values of the JSON written to it.
#[derive(Default)]
struct JsonCounter {
    /// Bytes written.
    bytes: usize,
    /// Values below the top one: each `{` or `[` opens one child, each `,` one more, and
    /// a container closed at once had none.
    values: usize,
    /// The last byte written outside strings.
    last: u8,
    /// Whether the writer is inside a string.
    in_string: bool,
    /// Whether the last byte inside a string was an unescaped backslash.
    escaped: bool,
}

impl std::io::Write for JsonCounter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.bytes += bytes.len();
        for &byte in bytes {
            if self.in_string {
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => {
                        self.in_string = false;
                        self.last = b'"';
                    }
                    _ => {}
                }
            } else {
                match (self.last, byte) {
                    (_, b'"') => self.in_string = true,
                    (_, b'{' | b'[' | b',') => self.values += 1,
                    (b'{', b'}') | (b'[', b']') => self.values -= 1,
                    _ => {}
                }
                self.last = byte;
            }
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Weight;

    #[test]
    fn a_weight_counts_the_json_values() {
        let check = |value: serde_json::Value, values: usize| {
            let weight = Weight::of(&value);
            assert_eq!(weight.values, values, "{value}");
            assert_eq!(weight.json, value.to_string().len(), "{value}");
        };
        check(json!(1), 1);
        check(json!([]), 1);
        check(json!({}), 1);
        check(json!([1, 2, 3]), 4);
        check(json!([{}, {}, []]), 4);
        check(json!({"a": 1, "b": [true, null]}), 5);
        check(json!({"a,[{": "}],\"\\", "b": {}}), 3);
        check(json!([[[]]]), 3);
    }
}
