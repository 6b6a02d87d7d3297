//! Who asks and who decides: identities, their roles, and the one rule about both.
//!
//! The product's promise is that nothing consequential happens unless the right human saw
//! exactly it. An agent is untrusted relative to the human who reviews it, so the
//! credential an agent holds must never be the one that answers its request. That rule is
//! kept here, in [`Duties`], and checked in exactly two places of the registry:
//! `Registry::register` (may this identity ask?) and `Registry::check_decider` (may it
//! decide this request? which also keeps a request's own rules: the reviewers it names,
//! and one vote per reviewer under a quorum). Every way into a request (the services, HTTP, MCP, the tools, the
//! guard, the web UI, resume) goes through those two, so none can walk around it: each
//! reaches the registry through a handle acting as its caller (see below), the HTTP
//! routes through their `AppState::hub_for`, MCP as its `McpCaller`, the tools and the
//! guard through the services they were given, resume and a session's reject through the
//! hub. No entry checks roles itself, so none can differ.
//!
//! An identity is a name and a [`Role`]. The HTTP server gives each bearer token one; an
//! embedding runtime acts as [`Identity::local`] unless it hands a service handle another
//! ([`RequestHub::acting_as`](crate::RequestHub::acting_as)). Requests record who asked
//! them (`asked_by`) and outcomes who decided them (`answered_by` on the wire).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// What an identity may do with requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Makes requests, reads and waits on them, cancels its own session's; never decides
    /// one (reply, reject, approve, edit, resume).
    Agent,
    /// Reads, answers, rejects and reviews requests; never makes one.
    Reviewer,
    /// May do everything, but with separation of duties on, never decides a request it
    /// asked itself.
    Admin,
}

/// Who asked or decided a request.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Identity {
    /// The name the credential was configured with (`alice`, `agent-1`), or `local`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub name: Arc<str>,
    /// What it may do.
    pub role: Role,
}

impl Identity {
    /// The name of [`Identity::local`].
    pub const LOCAL: &'static str = "local";

    /// An identity with `name` and `role`.
    pub fn new(name: impl Into<Arc<str>>, role: Role) -> Self {
        Self {
            name: name.into(),
            role,
        }
    }

    /// The anonymous identity of a caller that needs no credential: an embedding runtime,
    /// or an HTTP client of a server without tokens (which only listens on loopback). It
    /// may do everything.
    pub fn local() -> Self {
        Self::new(Self::LOCAL, Role::Admin)
    }

    /// Whether this identity's role lets it make requests.
    pub fn may_ask(&self) -> bool {
        self.role != Role::Reviewer
    }

    /// Whether this identity's role lets it decide requests (answer, reject, review).
    pub fn may_decide(&self) -> bool {
        self.role != Role::Agent
    }
}

impl Default for Identity {
    fn default() -> Self {
        Self::local()
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let role = match self.role {
            Role::Agent => "agent",
            Role::Reviewer => "reviewer",
            Role::Admin => "admin",
        };
        write!(f, "{} ({role})", self.name)
    }
}

/// Why an identity may not do what it tried; HTTP answers 403 with the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotAllowed {
    /// A reviewer tried to make a request.
    #[error("{0} may not make requests: reviewers answer them, agents make them")]
    MayNotAsk(Identity),
    /// An agent tried to decide a request.
    #[error("{0} may not answer, reject or review requests: that is a reviewer's")]
    MayNotDecide(Identity),
    /// The identity that asked a request tried to decide it.
    #[error("{0} asked this request, so it may not decide it: another reviewer must")]
    OwnRequest(Identity),
    /// The request names its reviewers, and this identity is not one of them.
    #[error("{0} is not one of the reviewers this request names")]
    NotNamed(Identity),
    /// The request needs several reviewers, and this one has decided already.
    #[error("{0} has decided this request already: it needs the decisions of other reviewers")]
    AlreadyDecided(Identity),
}

/// The separation-of-duties policy of a hub: whether the identity that asked a request may
/// decide it. Roles are always checked; this adds the asker rule, which a server turns on
/// whenever it has agent or reviewer credentials (with one shared `--token` everyone is
/// the same identity, and the rule would stop everything).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Duties {
    /// Refuse a decision by the identity that asked the request.
    pub never_the_asker: bool,
}

impl Duties {
    /// May `identity` make a request?
    ///
    /// # Errors
    ///
    /// [`NotAllowed::MayNotAsk`] for a reviewer.
    pub fn check_ask(self, identity: &Identity) -> Result<(), NotAllowed> {
        if identity.may_ask() {
            Ok(())
        } else {
            Err(NotAllowed::MayNotAsk(identity.clone()))
        }
    }

    /// May `identity` decide (answer, reject, review) a request `asked_by` asked?
    ///
    /// # Errors
    ///
    /// [`NotAllowed::MayNotDecide`] for an agent; [`NotAllowed::OwnRequest`] for the
    /// asker itself while [`never_the_asker`](Self::never_the_asker) is on.
    pub fn check_decide(
        self,
        identity: &Identity,
        asked_by: Option<&Identity>,
    ) -> Result<(), NotAllowed> {
        if !identity.may_decide() {
            return Err(NotAllowed::MayNotDecide(identity.clone()));
        }
        if self.never_the_asker && asked_by.is_some_and(|asker| asker.name == identity.name) {
            return Err(NotAllowed::OwnRequest(identity.clone()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_and_the_asker_rule() {
        let agent = Identity::new("agent-1", Role::Agent);
        let alice = Identity::new("alice", Role::Reviewer);
        let admin = Identity::new("ops", Role::Admin);
        let open = Duties::default();
        let separated = Duties {
            never_the_asker: true,
        };
        assert_eq!(
            open.check_ask(&alice),
            Err(NotAllowed::MayNotAsk(alice.clone()))
        );
        assert!(open.check_ask(&agent).is_ok() && open.check_ask(&admin).is_ok());
        assert_eq!(
            open.check_decide(&agent, None),
            Err(NotAllowed::MayNotDecide(agent.clone()))
        );
        assert!(open.check_decide(&admin, Some(&admin)).is_ok());
        assert_eq!(
            separated.check_decide(&admin, Some(&admin)),
            Err(NotAllowed::OwnRequest(admin.clone()))
        );
        assert!(separated.check_decide(&alice, Some(&agent)).is_ok());
        assert!(separated.check_decide(&alice, None).is_ok());
    }
}
