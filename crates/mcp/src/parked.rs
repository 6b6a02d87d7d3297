//! Requests that outlive the tool call that made them: how an answer slower than a host's
//! request timeout still reaches the agent.
//!
//! MCP hosts time tool calls out, and on their SDKs' defaults that is 60 s (the TypeScript
//! SDK's `DEFAULT_REQUEST_TIMEOUT_MSEC`), progress notwithstanding. A human takes longer.
//! So a held-open call waits at most [`McpConfig::answer_wait`](crate::McpConfig), then
//! returns an ordinary tool result saying the request is still waiting, with its id; the
//! agent calls `wait_for_answer` with that id, which waits the same bound again, and so on
//! until the request resolves.
//!
//! The request must survive the call that returned, so it is not owned by the call: each
//! held-open request is **parked** here, driven by a task of its own (the request's future,
//! and the elicitation form or link offered for it), which publishes the tool result once
//! the request resolves. Calls only watch for that result.
//!
//! Policy, in exact words:
//!
//! - **Returning a waiting handle cancels nothing.** The request stays pending.
//! - **Cancelling a waiting call cancels the request** (`notifications/cancelled` on the
//!   first call or on any `wait_for_answer`), as it did when calls were held open.
//! - **The MCP session ending cancels its requests.** A request belongs to the
//!   [`Connection`] (MCP session) that asked it, or that waited for it last (a client
//!   that makes each call in a session of its own, as the MCP Inspector's CLI does, keeps
//!   its request alive by waiting); when the last handle of that connection is dropped
//!   (stdio closed, Streamable HTTP session deleted or expired), its parked requests are
//!   cancelled. A request asked over the stateless 2026-07-28 transport has no
//!   session: it stays until it resolves or times out, like an `input_required` round.
//! - **A result is delivered once**, then forgotten; one not collected is forgotten
//!   [`KEEP_RESOLVED`] after it resolved, so what a client can make the server hold is
//!   bounded by the hub's pending limits.
//! - **Only the asker waits.** `wait_for_answer` finds a request only in the askbus
//!   session and for the caller that asked it (ids are not secrets).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use askbus_question::{Identity, RequestId};
use rmcp::model::CallToolResult;
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// How long a resolved result nobody collected is kept.
pub(crate) const KEEP_RESOLVED: Duration = Duration::from_secs(10 * 60);

/// Every parked request of one server, by request id.
#[derive(Default)]
pub(crate) struct ParkedCalls {
    /// The parked requests. The lock is never held across `.await`.
    calls: Mutex<HashMap<RequestId, Parked>>,
    /// The last [`Connection`] id handed out.
    connections: AtomicU64,
}

/// One MCP session (stdio, or a stateful Streamable HTTP session) of a server: dropping
/// the last handle of it cancels the requests it parked.
pub(crate) struct Connection {
    /// Its id, unique within the server.
    id: u64,
    /// Where its requests are parked.
    parked: Arc<ParkedCalls>,
}

/// A request parked by a held-open call.
struct Parked {
    /// Who may wait for it: the askbus session and the caller that asked.
    owner: Owner,
    /// The MCP session that asked it, if it had one (see the module docs).
    connection: Option<u64>,
    /// `Some` with the tool result once the request resolved.
    outcome: watch::Receiver<Option<CallToolResult>>,
    /// The task driving the request: aborting it drops the request's future, which
    /// cancels a request that is still pending.
    driver: AbortHandle,
}

/// Whose parked request it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Owner {
    /// The askbus session it was asked in.
    pub(crate) session: Arc<str>,
    /// The caller that asked it (see [`McpCaller`](crate::McpCaller)).
    pub(crate) caller: Identity,
}

/// What looking up a parked request for a waiter found.
pub(crate) enum Lookup {
    /// The request: watch this until it holds the result.
    Found(watch::Receiver<Option<CallToolResult>>),
    /// Nothing the caller may wait for is parked under this id.
    Unknown,
}

impl ParkedCalls {
    /// A new connection's handle.
    pub(crate) fn connect(self: &Arc<Self>) -> Connection {
        Connection {
            id: self.connections.fetch_add(1, Ordering::Relaxed) + 1,
            parked: Arc::clone(self),
        }
    }

    /// Parks `request`, driven by `driver` (which publishes into the sender whose
    /// receiver is `outcome`), for `owner`, in `connection` if it has one. Returns the
    /// watch to wait on, and whether `owner` owns the parked request (may cancel it).
    ///
    /// A request already parked was joined: a retry of the same tool call (an approval's
    /// `tool_use_id`) gets the same request, and its future only watches it. The first
    /// park stays, its driver the asker's (stopping it would cancel the request for both),
    /// and the joining driver is stopped, which cancels nothing: both calls wait on the
    /// first's watch. A joiner that is not the first's owner (another caller in the same
    /// session sending the same call) may wait, but its cancel must not cancel the owner's
    /// request.
    pub(crate) fn park(
        &self,
        request: RequestId,
        owner: Owner,
        connection: Option<&Connection>,
        outcome: watch::Receiver<Option<CallToolResult>>,
        driver: AbortHandle,
    ) -> (watch::Receiver<Option<CallToolResult>>, bool) {
        let Ok(mut calls) = self.calls.lock() else {
            return (outcome, true);
        };
        if let Some(parked) = calls.get(&request) {
            driver.abort();
            return (parked.outcome.clone(), parked.owner == owner);
        }
        let parked = Parked {
            owner,
            connection: connection.map(|connection| connection.id),
            outcome: outcome.clone(),
            driver,
        };
        calls.insert(request, parked);
        (outcome, true)
    }

    /// The result watch of `request`, if `owner` parked it. A waiter from another MCP
    /// session (`connection`) takes the request over: the session that waited last owns it.
    pub(crate) fn lookup(
        &self,
        request: RequestId,
        owner: &Owner,
        connection: Option<&Connection>,
    ) -> Lookup {
        let Ok(mut calls) = self.calls.lock() else {
            return Lookup::Unknown;
        };
        match calls.get_mut(&request) {
            Some(parked) if &parked.owner == owner => {
                if let (Some(_), Some(connection)) = (parked.connection, connection) {
                    parked.connection = Some(connection.id);
                }
                Lookup::Found(parked.outcome.clone())
            }
            _ => Lookup::Unknown,
        }
    }

    /// Forgets `request` and stops its driver: a request still pending is cancelled (the
    /// call waiting for it was cancelled); a resolved one (delivered, or kept long enough)
    /// is only forgotten.
    pub(crate) fn remove(&self, request: RequestId) {
        let removed = self
            .calls
            .lock()
            .ok()
            .and_then(|mut calls| calls.remove(&request));
        if let Some(parked) = removed {
            parked.driver.abort();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        let Ok(mut calls) = self.parked.calls.lock() else {
            return;
        };
        calls.retain(|_, parked| {
            let ours = parked.connection == Some(self.id);
            if ours {
                // Dropping the request's future cancels it (a resolved one is unaffected).
                parked.driver.abort();
            }
            !ours
        });
    }
}

#[cfg(test)]
mod tests {
    use askbus_question::{ApprovalIdPrefix, Identity, Role};

    use super::*;

    fn owner(name: &str) -> Owner {
        Owner {
            session: "s".into(),
            caller: Identity::new(name, Role::Agent),
        }
    }

    #[tokio::test]
    async fn only_the_owner_of_a_joined_request_may_cancel_it() {
        let calls = ParkedCalls::default();
        let request =
            RequestId::Approval(askbus_bus::IdGenerator::new().next_id::<ApprovalIdPrefix>());
        let driver = || tokio::spawn(std::future::pending::<()>()).abort_handle();
        let park = |who: &str| {
            let (_, outcome) = watch::channel(None);
            calls.park(request, owner(who), None, outcome, driver()).1
        };
        assert!(park("agent-1"), "the first to park owns it");
        assert!(park("agent-1"), "its own retry may cancel it");
        assert!(!park("agent-2"), "another caller's same call only watches");
    }
}
