//! [`RequestType`]: what a kind of request (question, approval) plugs into the registry.
//!
//! The registry is generic over it, and so is its record in a store (`record`): both
//! depend on this trait, neither on the other's internals. The two implementations live
//! beside their services (`Questions` in `service`, `Approvals` in
//! `approval`), which is where the rules of each kind are.

use std::sync::Arc;

use askbus_bus::{Bus, Id, IdKind};
use askbus_store::{RequestKind, SessionEvent};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::follow_up::Due;
use crate::identity::Identity;
use crate::ids::RequestId;
use crate::model::OnTimeout;
use crate::notify::EventSink;
use crate::outcome::{Outcome, OutcomeKind, Vote};
use crate::quota::Weight;
use crate::registry::id_source::SharedIds;

/// What a kind of request (question, approval) plugs into the registry.
pub(crate) trait RequestType: Send + Sync + Sized + 'static {
    /// The id prefix of this kind.
    type IdPrefix: IdKind;
    /// The request as asked; immutable once registered. Its JSON is its stored record.
    type Request: Serialize + DeserializeOwned + Send + Sync + 'static;
    /// A validated answer.
    type Reply: Serialize + DeserializeOwned + Clone + Send + Sync + 'static;
    /// What a rejection of a whole request holds (see [`Outcome`]).
    type Rejection: Serialize + Clone + Send + Sync + 'static;

    /// What a store calls this kind.
    const RECORD_KIND: RequestKind;

    /// Lookup state of this kind beyond ids (the seeds' keys), kept under the registry
    /// lock.
    type Index: Send + 'static;

    /// A new, empty index, over the id source the registry shares (whose key counters the
    /// kinds of one hub share, so that no key names a request of each).
    fn new_index(ids: &SharedIds) -> Self::Index;

    /// The request's id.
    fn id(request: &Self::Request) -> Id<Self::IdPrefix>;
    /// The id as either kind's.
    fn request_id(id: Id<Self::IdPrefix>) -> RequestId;
    /// The session the request belongs to.
    fn session_id(request: &Self::Request) -> &Arc<str>;
    /// The tool call that asked, if any: a second ask of the same call in the same session
    /// joins the first request instead of asking again, if it asks the same.
    fn call_id(request: &Self::Request) -> Option<&str>;
    /// What an ask of this kind asks the human (the questions; the calls to review), from
    /// which [`register`](Registry::register) builds the request.
    type Content;
    /// What `content` weighs (see [`Weight`]); the same as [`weight`](Self::weight) of the
    /// request built from it.
    fn content_weight(content: &Self::Content) -> Weight;
    /// What `request`'s content weighs.
    fn weight(request: &Self::Request) -> Weight;
    /// Whether `request` asked the human exactly `content`, so that a second ask of the
    /// same tool call may take its outcome. Compared as data (JSON arguments as values,
    /// so the order of object keys does not matter).
    fn asks(request: &Self::Request, content: &Self::Content) -> bool;
    /// When the request times out, milliseconds since the Unix epoch.
    fn expires_at(request: &Self::Request) -> Option<u64>;
    /// Who asked the request (`None` for requests recorded before identities were).
    fn asked_by(request: &Self::Request) -> Option<&Identity>;
    /// Adds `request`, read back from a store, to `index`.
    fn remember(index: &mut Self::Index, request: &Self::Request);
    /// Drops what `index` holds for `request`, which the registry no longer remembers.
    fn forget(index: &mut Self::Index, request: &Self::Request);
    /// Announces a newly registered request (to the bus, or to the outbox's notice).
    fn announce_asked(to: &mut impl EventSink, request: &Arc<Self::Request>);
    /// Announces a request's terminal outcome, decided `by` someone (`None`: a timeout).
    fn announce_outcome(
        to: &mut impl EventSink,
        request: &Arc<Self::Request>,
        outcome: &OutcomeOf<Self>,
        by: Option<&Identity>,
    );
    /// Announces that the store refused the outcome (`outcome`) announced before for
    /// `request`, which therefore does not stand.
    fn announce_not_recorded(
        to: &mut impl EventSink,
        request: &Arc<Self::Request>,
        outcome: OutcomeKind,
    );

    /// When `request`'s reminder and escalation fall due, milliseconds since the Unix epoch
    /// (see the `follow_up` module).
    fn follow_up_at(request: &Self::Request) -> (Option<u64>, Option<u64>);
    /// Whether `request` escalates to `by` (who may then decide it).
    fn escalates_to(request: &Self::Request, by: &Identity) -> bool;
    /// The fallback `request` applies on expiry, when it names one.
    fn on_timeout(request: &Self::Request) -> Option<&OnTimeout>;
    /// The outcome `request` reaches on expiry: [`Outcome::TimedOut`], or its fallback.
    fn timeout_outcome(request: &Self::Request) -> OutcomeOf<Self>;
    /// The outcome a stored rejection (with the human's `reason`) reads back as.
    fn read_rejection(reason: Option<String>) -> OutcomeOf<Self>;
    /// Announces a follow-up step of `request` (a reminder or an escalation).
    fn announce_follow_up(to: &mut impl EventSink, request: &Arc<Self::Request>, due: Due);

    // A quorum: requests of a kind that can need several replies. Questions cannot, and
    // take the defaults (a quorum of 1: the first reply decides, no vote is ever cast).

    /// How many distinct identities must reply alike before a reply ends `request`; at
    /// most 1 means the first reply does. Above 1, each reply is a [`Vote`].
    fn quorum(_request: &Self::Request) -> u32 {
        1
    }
    /// Whether `request` lets `by` decide it: `by` is one of the deciders it names, if it
    /// names any.
    fn names_decider(_request: &Self::Request, _by: &Identity) -> bool {
        true
    }
    /// Whether a vote with `reply` ends the request at once, whatever the quorum.
    fn vetoes(_reply: &Self::Reply) -> bool {
        true
    }
    /// Whether `reply` was given by a standing grant, with no human looking.
    fn granted(_reply: &Self::Reply) -> bool {
        false
    }
    /// Whether two votes count toward the same outcome.
    fn agree(_one: &Self::Reply, _other: &Self::Reply) -> bool {
        false
    }
    /// The reply that ends the request: `deciding`, the reply of the vote that the quorum
    /// (or a veto) decided, listing `votes`.
    fn settle(deciding: &Self::Reply, _votes: &[Vote<Self::Reply>]) -> Self::Reply {
        deciding.clone()
    }
    /// The record of `vote` (with `agreeing` votes alike so far) in its session's history,
    /// and in a shared store's log, from which every instance counts it.
    fn vote_record(
        _request: &Self::Request,
        _vote: &Vote<Self::Reply>,
        _agreeing: u32,
    ) -> Option<SessionEvent> {
        None
    }
    /// The request a [`vote_record`](Self::vote_record) is for, and its vote; `None` for a
    /// session event that is no vote of this kind.
    fn read_vote(_event: &SessionEvent) -> Option<VoteOn<Self>> {
        None
    }
    /// Announces `vote` on `request`, with `agreeing` votes alike so far.
    fn publish_vote(
        _bus: &Bus,
        _request: &Arc<Self::Request>,
        _vote: &Vote<Self::Reply>,
        _agreeing: u32,
    ) {
    }
}

/// The outcome of a request of kind `K`.
pub(crate) type OutcomeOf<K> = Outcome<<K as RequestType>::Reply, <K as RequestType>::Rejection>;

/// A vote and the request it is on.
pub(crate) type VoteOn<K> = (
    Id<<K as RequestType>::IdPrefix>,
    Vote<<K as RequestType>::Reply>,
);
