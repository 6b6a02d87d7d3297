//! The broadcast bus: publish, subscribe, resume from a cursor.

use std::collections::VecDeque;
use std::future::Future;
use std::num::NonZeroUsize;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::{Context, Poll};

use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio_stream::Stream;

use crate::event::RecordedPayload;
use crate::{Envelope, Event, EventId, IdGenerator};

/// A typed, non-blocking broadcast bus with a bounded, replayable history.
///
/// Cloning a `Bus` gives another handle to the same bus. When the last handle is dropped,
/// every subscription ends after yielding what it had buffered.
///
/// # Examples
///
/// ```
/// use askbus_bus::{Bus, Event};
/// use tokio_stream::StreamExt;
///
/// #[derive(Clone, serde::Serialize)]
/// struct Pinged(u32);
/// impl Event for Pinged {
///     const TYPE: &'static str = "demo.pinged";
/// }
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let bus = Bus::new();
/// let mut pings = bus.subscribe::<Pinged>();
/// bus.publish(Pinged(7));
/// assert_eq!(pings.next().await.unwrap().unwrap().0, 7);
/// # }
/// ```
#[derive(Clone)]
pub struct Bus {
    /// Shared by every handle.
    shared: Arc<Shared>,
}

/// Where a bus records what it publishes: the server's durable store, so that a restarted
/// bus can [resume](Bus::resume) with the same history and continue its ids.
///
/// [`record`](Journal::record) is called for every event, under the publish lock, so calls
/// arrive in id order. It must not block (queue the write and return) and cannot fail the
/// publisher: a journal that cannot write reports that its own way.
pub trait Journal: Send + Sync + 'static {
    /// Records one published event.
    fn record(&self, envelope: &Envelope);
}

/// Told of every event as it is published ([`Bus::observe`]): for what must see every
/// event, in order, without a task of its own (counting metrics).
///
/// [`observe`](Observer::observe) is called under the publish lock, like
/// [`Journal::record`], so calls arrive in id order and none is missed, however busy the
/// bus. It must be quick, must not block, and must not publish or subscribe on this bus.
pub trait Observer: Send + Sync + 'static {
    /// Sees one published event.
    fn observe(&self, envelope: &Envelope);
}

/// Sizes of a bus's buffers.
#[derive(Debug, Clone, Copy)]
pub struct BusConfig {
    /// How many recent events are kept for [`Bus::subscribe_from`]. Zero keeps none: every
    /// cursor but the newest is then too old.
    pub history: usize,
    /// How many bytes of their JSON the kept events may take, the newest event always kept
    /// (they take about as much again in memory, as values). `usize::MAX`, the default,
    /// bounds them by [`history`](Self::history) alone, and makes no event's JSON for it
    /// (a [`Journal`]'s record or an SSE client makes it; the envelope then keeps it while
    /// it is kept): a bus whose events come from untrusted clients (a server's) should set
    /// it, or a few thousand large requests stay in memory after they ended.
    pub history_bytes: usize,
    /// How many events a subscriber may fall behind before it is told it [`Lagged`],
    /// rounded up to a power of two (the live channel's buffer size): with an effective
    /// capacity of `n`, a subscriber that reads nothing while `n + k` events are published
    /// is told it missed exactly `k`, then gets the newest `n`.
    pub subscriber_capacity: NonZeroUsize,
}

/// A subscriber fell behind and `0` events were dropped for it.
///
/// Returning `Lagged` does **not** close the subscription: the next item is the oldest event
/// still buffered. A consumer that needs every event resyncs (snapshot, then replay).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("subscriber lagged behind and missed {0} events")]
pub struct Lagged(pub u64);

/// Why [`Bus::subscribe_from`] cannot resume after a cursor.
///
/// Either way the consumer must resync from a snapshot: a partial replay would silently lose
/// events, which is worse than an explicit error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    /// The cursor is older than the oldest event still in the history.
    #[error(
        "cursor {cursor} is older than the retained history (oldest resumable cursor: {oldest})"
    )]
    CursorTooOld {
        /// The cursor asked for.
        cursor: EventId,
        /// The oldest cursor that can still be resumed from.
        oldest: EventId,
    },
    /// The cursor is not one this bus issued (another process, or a restart).
    #[error("cursor {cursor} was not issued by this bus")]
    UnknownCursor {
        /// The cursor asked for.
        cursor: EventId,
    },
}

/// A stream of every event as [`Envelope`]s, optionally starting with a replay.
///
/// Yields `Ok(envelope)` in publish order, or `Err(Lagged(n))` when `n` events were dropped
/// for this subscriber; ends when the last [`Bus`] handle is gone.
pub struct Subscription {
    /// Events after the resume cursor that were already published at subscribe time.
    replay: VecDeque<Envelope>,
    /// Events published after subscribe time.
    live: Live,
    /// The cursor this subscription starts after: every later event is yielded.
    start: EventId,
}

/// A stream of the events of one type `E`; see [`Subscription`] for ordering and lag.
///
/// `Lagged(n)` counts missed envelopes of every type: the bus cannot tell which types the
/// dropped events had.
pub struct TypedSubscription<E> {
    /// The untyped stream being filtered.
    all: Subscription,
    /// `fn() -> E` keeps the subscription `Send + Sync` for any `E`.
    event: std::marker::PhantomData<fn() -> E>,
}

/// The live side of a subscription. Buffered events are taken with `try_recv`, which costs
/// no allocation; only a subscriber that has caught up parks its receiver in a boxed `recv`
/// future until the next event arrives.
enum Live {
    /// Holding the receiver, ready to take buffered events.
    Ready(broadcast::Receiver<Envelope>),
    /// Caught up and waiting; the future hands the receiver back with the next event.
    Waiting(NextEnvelope),
    /// Every bus handle is gone and the buffer is drained.
    Closed,
}

/// A caught-up receiver waiting for the next event; yields the receiver back with it.
type NextEnvelope = Pin<
    Box<
        dyn Future<Output = (Result<Envelope, RecvError>, broadcast::Receiver<Envelope>)>
            + Send
            + Sync,
    >,
>;

/// State behind every handle of one bus.
struct Shared {
    /// Taken for every publish and subscribe; held only for id assignment, the history push
    /// and the channel send, never across an `.await`.
    state: Mutex<State>,
    /// The live channel; sending never waits for receivers.
    sender: broadcast::Sender<Envelope>,
    /// Where every published event is recorded, if anywhere.
    journal: Option<Arc<dyn Journal>>,
}

/// What the publish lock protects. Id assignment, history and channel send happen under one
/// lock so that ids, history order and delivery order are the same order: a subscriber that
/// takes the lock sees a history that ends exactly where its live channel begins.
struct State {
    /// Source of event ids.
    ids: IdGenerator,
    /// The most recent events, oldest first, at most `history_capacity` long and
    /// `history_bytes_limit` bytes of JSON (the newest always kept).
    history: VecDeque<Envelope>,
    /// Maximum length of `history`.
    history_capacity: usize,
    /// Maximum bytes of JSON of `history`; `usize::MAX` for none.
    history_bytes_limit: usize,
    /// The bytes of JSON `history` takes, counted only under a limit.
    history_bytes: usize,
    /// The cursor just before `history[0]`: the id of the last evicted event, or the bus's
    /// origin id (made at creation, before any event) while nothing has been evicted.
    floor: EventId,
    /// Who sees every event as it is published; each forgotten once dropped.
    observers: Vec<Weak<dyn Observer>>,
}

impl State {
    /// Keeps `envelope`, the newest event, for replay, forgetting the oldest past the
    /// history's length or bytes; with no history, it is the new floor at once.
    fn remember(&mut self, envelope: Envelope) {
        if self.history_capacity == 0 {
            self.floor = envelope.id();
            return;
        }
        self.history_bytes += self.bytes_of(&envelope);
        self.history.push_back(envelope);
        while self.history.len() > self.history_capacity
            || (self.history_bytes > self.history_bytes_limit && self.history.len() > 1)
        {
            let Some(evicted) = self.history.pop_front() else {
                break;
            };
            self.history_bytes -= self.bytes_of(&evicted);
            self.floor = evicted.id();
        }
    }

    /// What `envelope` counts toward the history's bytes: its JSON's length under a limit
    /// (made once, and kept for every reader), nothing without one.
    fn bytes_of(&self, envelope: &Envelope) -> usize {
        if self.history_bytes_limit == usize::MAX {
            0
        } else {
            envelope.json().len()
        }
    }
}

impl Default for BusConfig {
    fn default() -> Self {
        Self {
            history: 4096,
            history_bytes: usize::MAX,
            subscriber_capacity: NonZeroUsize::new(1024).unwrap_or(NonZeroUsize::MIN),
        }
    }
}

impl Default for Bus {
    fn default() -> Self {
        Self::new()
    }
}

/// Tokio's broadcast channel refuses capacities above `usize::MAX / 2`; nobody means that.
const MAX_SUBSCRIBER_CAPACITY: usize = 1 << 24;

impl Bus {
    /// A bus with the default [`BusConfig`].
    pub fn new() -> Self {
        Self::with_config(BusConfig::default())
    }

    /// A bus with the given buffer sizes. `subscriber_capacity` is rounded up to a power of
    /// two, and one above 2^24 is lowered to it.
    pub fn with_config(config: BusConfig) -> Self {
        let mut ids = IdGenerator::new();
        let origin = ids.next_id();
        let history = VecDeque::with_capacity(config.history.min(4096));
        Self::from_parts(config, ids, history, origin, None)
    }

    /// A bus that continues a recorded one: `recorded` are the newest recorded events,
    /// oldest first (at most `config.history + 1` are used), and every event published from
    /// now on is passed to `journal`.
    ///
    /// The newest `config.history` of them form the history, so a client that saw one of
    /// them before a restart resumes after it with no gap. The one before them, if given,
    /// becomes the oldest resumable cursor; without it the history is taken to be complete
    /// (`recorded` holds every event ever recorded). New ids continue above the newest
    /// recorded one, even if the clock went back.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use askbus_bus::{Bus, BusConfig, Envelope, Event, Journal};
    /// use tokio_stream::StreamExt;
    ///
    /// #[derive(Clone, serde::Serialize)]
    /// struct Pinged(u32);
    /// impl Event for Pinged {
    ///     const TYPE: &'static str = "demo.pinged";
    /// }
    ///
    /// /// Keeps what it is given; a real journal writes to a store.
    /// #[derive(Default)]
    /// struct Kept(Mutex<Vec<(String, String, String)>>);
    /// impl Journal for Kept {
    ///     fn record(&self, envelope: &Envelope) {
    ///         let row = (envelope.id().to_string(), envelope.event_type().to_owned(), envelope.properties_json().to_owned());
    ///         self.0.lock().unwrap().push(row);
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let kept = Arc::new(Kept::default());
    /// let first_run = Bus::resume(BusConfig::default(), Vec::new(), kept.clone());
    /// let seen = first_run.publish(Pinged(1));
    /// first_run.publish(Pinged(2));
    /// drop(first_run);
    ///
    /// // After a restart: the recorded events come back, and a client resumes after `seen`.
    /// let recorded = kept.0.lock().unwrap().iter().map(|(id, event_type, properties)| {
    ///     Envelope::recorded(id.parse().unwrap(), event_type, None, properties).unwrap()
    /// }).collect();
    /// let second_run = Bus::resume(BusConfig::default(), recorded, kept.clone());
    /// let mut resumed = second_run.subscribe_from(seen).unwrap();
    /// let next = resumed.next().await.unwrap().unwrap();
    /// assert_eq!(next.json(), format!(r#"{{"id":"{}","type":"demo.pinged","properties":2}}"#, next.id()));
    /// assert!(second_run.publish(Pinged(3)) > next.id());
    /// # }
    /// ```
    pub fn resume(config: BusConfig, recorded: Vec<Envelope>, journal: Arc<dyn Journal>) -> Self {
        let keep = recorded.len().min(config.history);
        let mut recorded = VecDeque::from(recorded);
        let older = recorded.len() - keep;
        let floor = recorded
            .drain(..older)
            .next_back()
            .map_or(EventId::from_ulid(ulid::Ulid::nil()), |envelope| {
                envelope.id()
            });
        let newest = recorded.back().map_or(floor, Envelope::id);
        let ids = IdGenerator::after(newest.ulid());
        Self::from_parts(config, ids, recorded, floor, Some(journal))
    }

    fn from_parts(
        config: BusConfig,
        ids: IdGenerator,
        history: VecDeque<Envelope>,
        floor: EventId,
        journal: Option<Arc<dyn Journal>>,
    ) -> Self {
        // Tokio's channel rounds its buffer up to a power of two anyway; doing it here makes
        // the effective capacity the documented one.
        let capacity = config
            .subscriber_capacity
            .get()
            .min(MAX_SUBSCRIBER_CAPACITY)
            .next_power_of_two();
        let (sender, _) = broadcast::channel(capacity);
        let mut state = State {
            ids,
            history: VecDeque::with_capacity(history.len()),
            history_capacity: config.history,
            history_bytes_limit: config.history_bytes,
            history_bytes: 0,
            floor,
            observers: Vec::new(),
        };
        for envelope in history {
            state.remember(envelope);
        }
        Self {
            shared: Arc::new(Shared {
                state: Mutex::new(state),
                sender,
                journal,
            }),
        }
    }

    /// Publishes `event` to every current subscriber and the history; returns its id.
    ///
    /// Never blocks on subscribers and never fails: having no subscriber is normal, and a
    /// slow subscriber is told it lagged instead of slowing the publisher.
    pub fn publish<E: Event>(&self, event: E) -> EventId {
        self.publish_with(|id, cause| Envelope::new(id, event, cause))
    }

    /// Publishes an event known only as JSON (one another process published, read back
    /// from a record it shares): like [`publish`](Self::publish), but the envelope is a
    /// [recorded](Envelope::recorded) one, which typed subscriptions skip and JSON readers
    /// see as given.
    ///
    /// # Errors
    ///
    /// `properties` is not valid JSON; nothing is published.
    pub fn publish_recorded(
        &self,
        event_type: &str,
        session_id: Option<&str>,
        properties: &str,
    ) -> serde_json::Result<EventId> {
        let payload = RecordedPayload::new(event_type, session_id, properties)?;
        Ok(self.publish_with(|id, cause| Envelope::with_payload(id, payload, cause)))
    }

    /// Publishes the envelope `make` builds around the next id and the id of the request
    /// being served, if any (see the `cause` module).
    fn publish_with(&self, make: impl FnOnce(EventId, Option<Arc<str>>) -> Envelope) -> EventId {
        let cause = crate::cause::current_request_id();
        let mut state = self.shared.lock();
        let id = state.ids.next_id();
        let envelope = make(id, cause);
        state.remember(envelope.clone());
        if let Some(journal) = &self.shared.journal {
            // Under the lock, so the record's order is the id order.
            journal.record(&envelope);
        }
        if !state.observers.is_empty() {
            state.observers.retain(|observer| {
                observer
                    .upgrade()
                    .map(|observer| observer.observe(&envelope))
                    .is_some()
            });
        }
        // An error only means nobody is subscribed right now.
        let _ = self.shared.sender.send(envelope);
        id
    }

    /// Tells `observer` of every event published from now on, until it is dropped: the bus
    /// holds it weakly. See [`Observer`].
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicUsize, Ordering};
    /// use askbus_bus::{Bus, Envelope, Event, Observer};
    ///
    /// #[derive(Clone, serde::Serialize)]
    /// struct Pinged;
    /// impl Event for Pinged {
    ///     const TYPE: &'static str = "demo.pinged";
    /// }
    ///
    /// #[derive(Default)]
    /// struct Count(AtomicUsize);
    /// impl Observer for Count {
    ///     fn observe(&self, _: &Envelope) {
    ///         self.0.fetch_add(1, Ordering::Relaxed);
    ///     }
    /// }
    ///
    /// let bus = Bus::new();
    /// let count = Arc::new(Count::default());
    /// bus.observe(&(count.clone() as Arc<dyn Observer>));
    /// bus.publish(Pinged);
    /// bus.publish(Pinged);
    /// assert_eq!(count.0.load(Ordering::Relaxed), 2);
    /// ```
    pub fn observe(&self, observer: &Arc<dyn Observer>) {
        self.shared.lock().observers.push(Arc::downgrade(observer));
    }

    /// Every event published from now on.
    pub fn subscribe_all(&self) -> Subscription {
        let state = self.shared.lock();
        Subscription {
            replay: VecDeque::new(),
            live: Live::Ready(self.shared.sender.subscribe()),
            start: state.newest(),
        }
    }

    /// Every event after `cursor`, then every event published from now on, with no gap and
    /// no duplicate even while other tasks publish.
    ///
    /// # Errors
    ///
    /// [`ReplayError`] when the events after `cursor` are no longer all in the history, or
    /// `cursor` was never issued by this bus; the caller should resync instead.
    pub fn subscribe_from(&self, cursor: EventId) -> Result<Subscription, ReplayError> {
        let state = self.shared.lock();
        let replay_from = if cursor == state.floor {
            0
        } else {
            match state.history.binary_search_by_key(&cursor, Envelope::id) {
                Ok(index) => index + 1,
                Err(_) if cursor < state.floor => {
                    return Err(ReplayError::CursorTooOld {
                        cursor,
                        oldest: state.floor,
                    });
                }
                Err(_) => return Err(ReplayError::UnknownCursor { cursor }),
            }
        };
        Ok(Subscription {
            replay: state.history.range(replay_from..).cloned().collect(),
            live: Live::Ready(self.shared.sender.subscribe()),
            start: cursor,
        })
    }

    /// Events of type `E` published from now on.
    pub fn subscribe<E: Event>(&self) -> TypedSubscription<E> {
        TypedSubscription {
            all: self.subscribe_all(),
            event: std::marker::PhantomData,
        }
    }

    /// The id of the newest event, or the bus's origin cursor if nothing was published yet.
    /// Resuming from it yields exactly the events published after this call.
    pub fn head(&self) -> EventId {
        self.shared.lock().newest()
    }

    /// How many subscriptions are currently open.
    pub fn subscriber_count(&self) -> usize {
        self.shared.sender.receiver_count()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // The state is consistent after every statement that mutates it, so a panic in
        // another thread (which cannot happen while holding this lock) leaves it usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    fn newest(&self) -> EventId {
        self.history.back().map_or(self.floor, Envelope::id)
    }
}

impl Subscription {
    /// The cursor this subscription started after. Every event with a greater id is (or
    /// will be) yielded, so a client that stores this cursor can resume without a gap.
    pub fn start(&self) -> EventId {
        self.start
    }
}

impl Stream for Subscription {
    type Item = Result<Envelope, Lagged>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if let Some(envelope) = self.replay.pop_front() {
            return Poll::Ready(Some(Ok(envelope)));
        }
        self.live.poll_next(cx)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.replay.len(), None)
    }
}

impl Live {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Envelope, Lagged>>> {
        loop {
            match std::mem::replace(self, Self::Closed) {
                Self::Ready(mut receiver) => {
                    let item = match receiver.try_recv() {
                        Ok(envelope) => Ok(envelope),
                        Err(TryRecvError::Lagged(missed)) => Err(Lagged(missed)),
                        Err(TryRecvError::Closed) => return Poll::Ready(None),
                        Err(TryRecvError::Empty) => {
                            *self = Self::Waiting(Box::pin(async move {
                                let received = receiver.recv().await;
                                (received, receiver)
                            }));
                            continue;
                        }
                    };
                    *self = Self::Ready(receiver);
                    return Poll::Ready(Some(item));
                }
                Self::Waiting(mut waiting) => {
                    let Poll::Ready((received, receiver)) = waiting.as_mut().poll(cx) else {
                        *self = Self::Waiting(waiting);
                        return Poll::Pending;
                    };
                    let item = match received {
                        Ok(envelope) => Ok(envelope),
                        Err(RecvError::Lagged(missed)) => Err(Lagged(missed)),
                        Err(RecvError::Closed) => return Poll::Ready(None),
                    };
                    *self = Self::Ready(receiver);
                    return Poll::Ready(Some(item));
                }
                Self::Closed => return Poll::Ready(None),
            }
        }
    }
}

impl<E: Event> Stream for TypedSubscription<E> {
    type Item = Result<E, Lagged>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            match Pin::new(&mut self.all).poll_next(cx) {
                Poll::Ready(Some(Ok(envelope))) => {
                    if let Some(event) = envelope.downcast_ref::<E>() {
                        return Poll::Ready(Some(Ok(event.clone())));
                    }
                }
                Poll::Ready(Some(Err(lagged))) => return Poll::Ready(Some(Err(lagged))),
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}
