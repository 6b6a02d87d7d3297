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

use std::collections::HashMap;
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
/// let first = hub.questions().submit("s1", question(), None, Timeout::Never).unwrap();
///
/// let refused = hub.questions().submit("s1", question(), None, Timeout::Never).unwrap_err();
/// assert!(matches!(refused, SubmitError::OverQuota(QuotaExceeded::Session { .. })));
/// // Another session has room; and once the first request ends, so has s1.
/// assert!(hub.questions().submit("s2", question(), None, Timeout::Never).is_ok());
/// drop(first);
/// assert!(hub.questions().submit("s1", question(), None, Timeout::Never).is_ok());
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
}

/// Who a new request is charged to: its session, and its asker's account if any.
pub(crate) struct Charge {
    /// The request's session.
    pub(crate) session: Arc<str>,
    /// The account of the handle it was made through.
    pub(crate) account: Option<Arc<str>>,
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
    /// Pending requests per session; sessions with none are removed.
    sessions: HashMap<Arc<str>, usize>,
    /// Pending requests per account; accounts with none are removed.
    accounts: HashMap<Arc<str>, usize>,
}

impl Default for PendingLimits {
    fn default() -> Self {
        Self {
            per_session: 1_000,
            per_account: usize::MAX,
            total: 100_000,
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
                sessions: HashMap::new(),
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
        *counts
            .sessions
            .entry(Arc::clone(&charge.session))
            .or_default() += 1;
        if let Some(account) = &charge.account {
            *counts.accounts.entry(Arc::clone(account)).or_default() += 1;
        }
        Ok(())
    }

    /// Counts a request that exists already (read from the store), whatever the limits.
    pub(crate) fn count(&self, session: &str) {
        let mut counts = self.lock();
        counts.total += 1;
        match counts.sessions.get_mut(session) {
            Some(count) => *count += 1,
            None => {
                counts.sessions.insert(session.into(), 1);
            }
        }
    }

    /// Frees the slot of a request of `session` (charged to `account`) that ended.
    pub(crate) fn release(&self, session: &str, account: Option<&Arc<str>>) {
        let mut counts = self.lock();
        counts.total = counts.total.saturating_sub(1);
        decrement(&mut counts.sessions, session);
        if let Some(account) = account {
            decrement(&mut counts.accounts, account);
        }
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
