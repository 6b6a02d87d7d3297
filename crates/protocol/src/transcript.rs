//! Per-session transcripts, folded from the bus in the bus's order.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use askbus_bus::{Bus, Envelope, EventId, Lagged, Subscription};
use askbus_question::{
    ApprovalAsked, ApprovalCancelled, ApprovalReplied, ApprovalTimedOut, QuestionAsked,
    QuestionCancelled, QuestionRejected, QuestionReplied, QuestionTimedOut,
};
use futures_util::{FutureExt, StreamExt};

use crate::ProtocolError;
use crate::encode::Encoder;
use crate::frame::Frame;
use crate::history::History;
use crate::record::{AgentStep, Outcome, Record, Request, RequestEvent};
use crate::view::ClientView;

/// Every session's stream frames and history, written from the bus.
///
/// Created on a bus, it folds every event published after its creation that concerns a
/// session ([`AgentStep`], `question.*`) through that session's [`Encoder`], keeping the
/// frames each event produced under the event's id, and the session's [`ClientView`] from
/// which [`history`](Self::history) is rendered. Cloning gives another handle to the same
/// transcripts.
///
/// The policy, in exact words:
///
/// - **One order.** Steps and request events are folded in the bus's publish order, which
///   is the order the agent did things in: a step recorded before `ask()` is called is
///   always before the question.
/// - **Reads are current.** Every read first folds whatever the bus has published, so a
///   history read after a publish returns includes it. No task runs in the background:
///   folding happens on reads (and the HTTP stream reads whenever the bus has news).
/// - **History and stream meet exactly.** [`History::last_event_id`] is the last event
///   folded; [`frames_after`](Self::frames_after) that cursor returns exactly the frames
///   folded later. A [`FrameCursor`] may also point inside one event's frames.
/// - **Memory.** Transcripts are kept in memory, whole, until [`forget`](Self::forget).
///   If nobody reads for longer than the bus's history covers, the unread events are lost
///   to the transcripts and counted by [`lost_events`](Self::lost_events).
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_protocol::{AgentStep, Step, Transcripts};
///
/// let bus = Bus::new();
/// let transcripts = Transcripts::new(&bus);
/// bus.publish(AgentStep::new("s1", Step::User { text: "Hi".into() }));
/// let history = transcripts.history("s1");
/// assert_eq!(history.messages.len(), 1);
/// assert!(transcripts.frames_after("s1", Some(history.last_event_id.into())).is_empty());
/// ```
#[derive(Clone)]
pub struct Transcripts {
    /// Shared by every handle.
    shared: Arc<Mutex<State>>,
}

/// A position in a session's stream: after a whole event's frames, or after one of them.
///
/// Written `evt_…` (after the event) or `evt_….N` (after its frame `N`, counted from 0);
/// this is the `id:` of each SSE frame and the `last_event_id` a client resumes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameCursor {
    /// The event.
    pub event_id: EventId,
    /// The frame within it; `None`: all of them.
    pub frame: Option<usize>,
}

/// A frame with the cursor that follows it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamFrame {
    /// Resuming after this cursor continues with the next frame.
    pub cursor: FrameCursor,
    /// The frame.
    pub frame: Frame,
}

/// What the lock protects.
struct State {
    /// To re-subscribe after a lag.
    bus: Bus,
    /// Every bus event since creation, read on demand.
    subscription: Subscription,
    /// The last event folded (or the bus head at creation).
    cursor: EventId,
    /// The transcripts, by session id.
    sessions: HashMap<Arc<str>, Session>,
    /// Events lost to a lag the bus's history could not cover.
    lost: u64,
}

/// One session's transcript.
#[derive(Default)]
struct Session {
    /// Group and index state of the stream.
    encoder: Encoder,
    /// The blocks so far, rendered as the history.
    view: ClientView,
    /// The frames of each event that produced any, in event order.
    entries: Vec<Entry>,
}

/// The frames one event produced.
struct Entry {
    /// The event.
    event_id: EventId,
    /// Its frames, never empty.
    frames: Vec<Frame>,
}

impl Transcripts {
    /// Transcripts of every session, from the events published on `bus` from now on.
    pub fn new(bus: &Bus) -> Self {
        let subscription = bus.subscribe_all();
        let cursor = subscription.start();
        Self {
            shared: Arc::new(Mutex::new(State {
                bus: bus.clone(),
                subscription,
                cursor,
                sessions: HashMap::new(),
                lost: 0,
            })),
        }
    }

    /// The session's history now; empty (with the current cursor) for a session never seen.
    pub fn history(&self, session_id: &str) -> History {
        let state = self.caught_up();
        match state.sessions.get(session_id) {
            Some(session) => session.view.history(state.cursor),
            None => History {
                messages: Vec::new(),
                last_event_id: state.cursor,
            },
        }
    }

    /// The session's frames after `after`, or all of them for `None`, each with its cursor.
    pub fn frames_after(&self, session_id: &str, after: Option<FrameCursor>) -> Vec<StreamFrame> {
        let state = self.caught_up();
        let Some(session) = state.sessions.get(session_id) else {
            return Vec::new();
        };
        let start = after.map_or(0, |after| {
            session
                .entries
                .partition_point(|entry| entry.event_id < after.event_id)
        });
        let mut frames = Vec::new();
        for entry in &session.entries[start..] {
            let skip = match after {
                Some(after) if after.event_id == entry.event_id => match after.frame {
                    Some(frame) => frame + 1,
                    None => continue,
                },
                _ => 0,
            };
            let last = entry.frames.len() - 1;
            for (position, frame) in entry.frames.iter().enumerate().skip(skip) {
                frames.push(StreamFrame {
                    cursor: FrameCursor {
                        event_id: entry.event_id,
                        frame: (position != last).then_some(position),
                    },
                    frame: frame.clone(),
                });
            }
        }
        frames
    }

    /// Drops a session's transcript; `true` if there was one. Later events of the session
    /// start a new transcript.
    pub fn forget(&self, session_id: &str) -> bool {
        self.caught_up().sessions.remove(session_id).is_some()
    }

    /// How many bus events were lost to the transcripts because nobody read them before
    /// the bus's history dropped them. Non-zero means some transcript may have a gap.
    pub fn lost_events(&self) -> u64 {
        self.caught_up().lost
    }

    /// The state, after folding every event published so far.
    fn caught_up(&self) -> MutexGuard<'_, State> {
        // Every mutation leaves the state consistent, so a poisoned lock is still usable.
        let mut state = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        state.catch_up();
        state
    }
}

impl State {
    /// Folds every event already published. Never waits: the subscription is polled
    /// without a waker, and an event whose publish has returned is already in its buffer.
    fn catch_up(&mut self) {
        while let Some(item) = self.subscription.next().now_or_never() {
            match item {
                None => return,
                Some(Ok(envelope)) => self.fold(&envelope),
                Some(Err(Lagged(missed))) => match self.bus.subscribe_from(self.cursor) {
                    Ok(subscription) => self.subscription = subscription,
                    Err(_) => {
                        self.lost += missed;
                        self.subscription = self.bus.subscribe_all();
                        self.cursor = self.subscription.start();
                    }
                },
            }
        }
    }

    fn fold(&mut self, envelope: &Envelope) {
        self.cursor = envelope.id();
        let Some((session_id, record)) = record_of(envelope) else {
            return;
        };
        let session = self.sessions.entry(session_id).or_default();
        let frames = session.encoder.encode(&record);
        if frames.is_empty() {
            return;
        }
        for frame in &frames {
            session.view.apply(frame);
        }
        session.entries.push(Entry {
            event_id: envelope.id(),
            frames,
        });
    }
}

/// The session and record an event stands for, if it concerns a transcript.
fn record_of(envelope: &Envelope) -> Option<(Arc<str>, Record)> {
    if let Some(step) = envelope.downcast_ref::<AgentStep>() {
        return Some((
            Arc::clone(&step.session_id),
            Record::Step(step.step.clone()),
        ));
    }
    if let Some(asked) = envelope.downcast_ref::<ApprovalAsked>() {
        let request = &asked.request;
        let timeout = timeout_seconds(request.created_at, request.expires_at);
        let request_event = RequestEvent::Asked(Request::approval(request, timeout));
        return Some((
            Arc::clone(&request.session_id),
            Record::Request(request_event),
        ));
    }
    if let Some(asked) = envelope.downcast_ref::<QuestionAsked>() {
        let request = &asked.request;
        let request_event = RequestEvent::Asked(Request::question(
            request.id.to_string(),
            &request.questions,
            timeout_seconds(request.created_at, request.expires_at),
        ));
        return Some((
            Arc::clone(&request.session_id),
            Record::Request(request_event),
        ));
    }
    let (session_id, request_id, outcome) =
        if let Some(replied) = envelope.downcast_ref::<QuestionReplied>() {
            let answers = Outcome::Answered(replied.answers.to_vec());
            (&replied.session_id, replied.request_id, answers)
        } else if let Some(rejected) = envelope.downcast_ref::<QuestionRejected>() {
            let outcome = Outcome::Rejected(rejected.reason.clone());
            (&rejected.session_id, rejected.request_id, outcome)
        } else if let Some(timed_out) = envelope.downcast_ref::<QuestionTimedOut>() {
            (
                &timed_out.session_id,
                timed_out.request_id,
                Outcome::TimedOut,
            )
        } else if let Some(cancelled) = envelope.downcast_ref::<QuestionCancelled>() {
            (
                &cancelled.session_id,
                cancelled.request_id,
                Outcome::Cancelled,
            )
        } else {
            return approval_outcome(envelope);
        };
    let resolved = RequestEvent::Resolved {
        request_id: request_id.to_string(),
        outcome,
    };
    Some((Arc::clone(session_id), Record::Request(resolved)))
}

/// The outcome record of an `approval.*` terminal event, if `envelope` is one.
fn approval_outcome(envelope: &Envelope) -> Option<(Arc<str>, Record)> {
    let (session_id, request_id, outcome) =
        if let Some(replied) = envelope.downcast_ref::<ApprovalReplied>() {
            let decisions = Outcome::Decided(crate::record::same_shape(&replied.reply.decisions));
            (&replied.session_id, replied.request_id, decisions)
        } else if let Some(timed_out) = envelope.downcast_ref::<ApprovalTimedOut>() {
            (
                &timed_out.session_id,
                timed_out.request_id,
                Outcome::TimedOut,
            )
        } else if let Some(cancelled) = envelope.downcast_ref::<ApprovalCancelled>() {
            (
                &cancelled.session_id,
                cancelled.request_id,
                Outcome::Cancelled,
            )
        } else {
            return None;
        };
    let resolved = RequestEvent::Resolved {
        request_id: request_id.to_string(),
        outcome,
    };
    Some((Arc::clone(session_id), Record::Request(resolved)))
}

/// A request's timeout in whole seconds (rounded), from its creation and expiry times.
fn timeout_seconds(created_at: u64, expires_at: Option<u64>) -> Option<u64> {
    expires_at.map(|expires| expires.saturating_sub(created_at).saturating_add(500) / 1000)
}

impl From<EventId> for FrameCursor {
    fn from(event_id: EventId) -> Self {
        Self {
            event_id,
            frame: None,
        }
    }
}

impl fmt::Display for FrameCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.frame {
            None => write!(f, "{}", self.event_id),
            Some(frame) => write!(f, "{}.{frame}", self.event_id),
        }
    }
}

impl FromStr for FrameCursor {
    type Err = ProtocolError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = || ProtocolError::InvalidCursor {
            cursor: text.to_owned(),
        };
        let (event, frame) = match text.split_once('.') {
            None => (text, None),
            Some((event, frame)) => (event, Some(frame.parse().map_err(|_| invalid())?)),
        };
        Ok(Self {
            event_id: event.parse().map_err(|_| invalid())?,
            frame,
        })
    }
}
