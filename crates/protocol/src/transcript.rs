//! Per-session transcripts: the history and the stream of each session, from its records.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use askbus_bus::{Bus, Subscription};
use askbus_question::RequestHub;
use askbus_store::{DEFAULT_HISTORY_LIMIT, Store, StoreError};
use futures_util::StreamExt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ProtocolError;
use crate::encode::Encoder;
use crate::frame::Frame;
use crate::history::History;
use crate::memory::MemoryHistory;
use crate::record::Record;
use crate::view::ClientView;

/// Every session's history and stream, read from the session's records.
///
/// Over a hub with a store ([`RequestHub::store`]) the records are the session's history in
/// the store, written as things happen (see `askbus_store`'s `history` module), so a
/// history is complete however many other events went by, the same after a restart, and
/// the same through every server sharing the store. Over a hub without a store they are
/// kept in memory, from the hub's bus, within [`HistoryLimits`]. Cloning gives another
/// handle to the same transcripts.
///
/// The policy, in exact words:
///
/// - **One order.** A session's records are folded in the order they were recorded, which
///   is the order the agent did things in: a step recorded before `ask()` is called is
///   always before the question.
/// - **Reads are current.** A history read after a step's [`Recording`](crate::Recording)
///   completed, or after a request's change was acknowledged, includes it.
/// - **History and stream meet exactly.** A history's
///   [`last_event_id`](History::last_event_id) is a [`FrameCursor`] naming the first and the
///   last record folded; [`follow`](Self::follow) from it yields exactly the frames of the
///   later records, each once. A [`FrameCursor`] may also point inside one record's frames.
/// - **A cursor that cannot be resumed is said so, never answered with a partial
///   stream.** When the records a cursor was folded from are no longer all kept (a
///   session's oldest records trimmed past its limit, its history deleted by retention,
///   the memory bound evicting it), or the cursor is not one of these transcripts',
///   [`follow`](Self::follow) fails with [`ProtocolError::Resync`]: load the history again.
/// - **Memory.** Nothing keeps whole transcripts: a history read folds the session's
///   records (at most about the per-session limit) and drops them; an open stream keeps
///   only its encoder's state. Without a store, the records themselves are in memory,
///   within [`HistoryLimits`].
///
/// # Examples
///
/// ```
/// use askbus_bus::Bus;
/// use askbus_protocol::{AgentStep, Step, Transcripts};
/// use askbus_question::RequestHub;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let hub = RequestHub::new(Bus::new());
/// let transcripts = Transcripts::new(&hub);
/// AgentStep::new("s1", Step::User { text: "Hi".into() }).record(&hub).await.unwrap();
/// let history = transcripts.history("s1").await.unwrap();
/// assert_eq!(history.messages.len(), 1);
///
/// AgentStep::new("s1", Step::Text { text: "Hello!".into(), is_final: true })
///     .record(&hub)
///     .await
///     .unwrap();
/// let mut stream = transcripts.follow("s1", Some(history.last_event_id)).await.unwrap();
/// let next = stream.next().await.unwrap().unwrap();
/// assert_eq!(serde_json::to_value(&next.frame).unwrap()["type"], "content_block_start");
/// # }
/// ```
#[derive(Clone)]
pub struct Transcripts {
    /// Where news of every session is published: a stream reads again when its session
    /// has some.
    bus: Bus,
    /// Where the records are.
    source: Source,
}

/// How much a hub without a store keeps of its sessions' histories, in memory.
///
/// # Examples
///
/// ```
/// use askbus_protocol::HistoryLimits;
///
/// let limits = HistoryLimits { records_per_session: 200, ..HistoryLimits::default() };
/// assert_eq!(limits.records_in_memory, 100_000);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Records each session keeps, about (its oldest are dropped a batch at a time, as a
    /// store does; see `askbus_store`'s `history` module). Default:
    /// [`DEFAULT_HISTORY_LIMIT`]. A store has its own, set when it is opened.
    pub records_per_session: usize,
    /// Records kept across every session: past it, the histories of the sessions that
    /// recorded nothing for longest are dropped whole. Default: 100,000.
    pub records_in_memory: usize,
}

/// A position in a session's stream: after a whole record's frames, or after one of them,
/// of the history folded from a given first record.
///
/// Written `h<first>-<record>` (after the record) or `h<first>-<record>.N` (after its
/// frame `N`, counted from 0), where the numbers are positions of records in the session's
/// history; `h0-0` is the start of an empty history. This is the `id:` of each SSE frame
/// and the `last_event_id` a client resumes with; clients treat it as opaque. An `evt_…`
/// cursor (what askbus handed out before histories were kept in the store) parses as a
/// [`ProtocolError::Resync`].
///
/// # Examples
///
/// ```
/// use askbus_protocol::FrameCursor;
///
/// let cursor: FrameCursor = "h3-17.2".parse().unwrap();
/// assert_eq!((cursor.origin, cursor.record, cursor.frame), (3, 17, Some(2)));
/// assert_eq!(cursor.to_string(), "h3-17.2");
/// assert!("evt_01JZ6Q3V8R5M2K7D4T9WXYZABC".parse::<FrameCursor>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameCursor {
    /// The position of the first record the history was folded from; `0` for an empty
    /// history.
    pub origin: u64,
    /// The position of the last record folded or streamed; `0` for none.
    pub record: u64,
    /// The frame within that record's frames; `None`: all of them.
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

/// Why a cursor cannot be resumed: the client must load the history again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resync {
    /// Records the cursor was folded from are no longer kept.
    CursorTooOld,
    /// The cursor is not one of these transcripts' (another store, or an older askbus).
    UnknownCursor,
}

/// One session's stream, from [`Transcripts::follow`]: the frames after a cursor, then
/// every new one as the session records it.
pub struct Follow {
    /// Where the records are.
    source: Source,
    /// The session followed.
    session: Arc<str>,
    /// Every bus event: a stream reads the records again when its session has news (or
    /// it lagged). What it yields is not read.
    news: Subscription,
    /// The encoder's state after the last record read.
    fold: Fold,
    /// Frames read but not yielded yet.
    ready: VecDeque<StreamFrame>,
}

/// Where a session's records are.
#[derive(Clone)]
enum Source {
    /// The hub's store.
    Store(Arc<dyn Store>),
    /// Memory, written from the hub's bus.
    Memory(Arc<MemoryHistory>),
}

/// One record of a session, as the transcripts read it.
pub(crate) struct Entry {
    /// Its position in the session's history.
    pub(crate) position: u64,
    /// What it records; `None` for a record that is no part of a timeline, or cannot be
    /// read back (it still moves the cursor).
    pub(crate) record: Option<Record>,
}

/// Records folded through an encoder, and where they started and ended.
#[derive(Default)]
struct Fold {
    /// The grouping and index state after the last record.
    encoder: Encoder,
    /// The first record's position; `0` before any.
    origin: u64,
    /// The last record's position; `0` before any.
    last: u64,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        Self {
            records_per_session: DEFAULT_HISTORY_LIMIT,
            records_in_memory: 100_000,
        }
    }
}

impl Transcripts {
    /// The transcripts of `hub`'s sessions, with the default [`HistoryLimits`].
    pub fn new(hub: &RequestHub) -> Self {
        Self::with_limits(hub, HistoryLimits::default())
    }

    /// The transcripts of `hub`'s sessions: from its store's histories, or, for a hub
    /// without a store, from its bus, keeping within `limits` in memory.
    ///
    /// Without a store only events published from now on are kept, and a task reads them
    /// as they come (when there is a Tokio runtime; otherwise every read catches up first,
    /// and what the bus's history dropped meanwhile is lost, counted by
    /// [`lost_events`](Self::lost_events)).
    pub fn with_limits(hub: &RequestHub, limits: HistoryLimits) -> Self {
        let bus = hub.bus().clone();
        let source = match hub.store() {
            Some(store) => Source::Store(Arc::clone(store)),
            None => Source::Memory(MemoryHistory::start(&bus, limits)),
        };
        Self { bus, source }
    }

    /// The session's history now: its messages, and the cursor its stream resumes after.
    /// A session that recorded nothing has an empty history, `h0-0`.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the store cannot be read.
    pub async fn history(&self, session_id: &str) -> Result<History, StoreError> {
        let mut fold = Fold::default();
        let mut view = ClientView::new();
        for entry in self.source.entries(session_id, 0).await? {
            for frame in fold.push(&entry) {
                view.apply(&frame.frame);
            }
        }
        Ok(view.history(fold.cursor()))
    }

    /// The session's stream: the frames after `after` (all of them for `None`, or for an
    /// empty history's cursor), then each new one as the session records it.
    ///
    /// # Errors
    ///
    /// [`ProtocolError::Resync`] when `after` cannot be resumed (see the policy);
    /// [`ProtocolError::Store`] if the store cannot be read.
    pub async fn follow(
        &self,
        session_id: &str,
        after: Option<FrameCursor>,
    ) -> Result<Follow, ProtocolError> {
        // Subscribed before the read, so news published in between is not missed.
        let news = self.bus.subscribe_all();
        let entries = self.source.entries(session_id, 0).await?;
        let mut fold = Fold::default();
        let mut ready = VecDeque::new();
        match after.filter(|cursor| !cursor.is_start()) {
            None => {
                for entry in &entries {
                    ready.extend(fold.push(entry));
                }
            }
            Some(cursor) => {
                let resumed_at = resume_point(&entries, cursor)?;
                for entry in &entries[..resumed_at] {
                    fold.push(entry);
                }
                let frames = fold.push(&entries[resumed_at]);
                let sent = cursor.frame.map_or(frames.len(), |frame| frame + 1);
                ready.extend(frames.into_iter().skip(sent));
                for entry in &entries[resumed_at + 1..] {
                    ready.extend(fold.push(entry));
                }
            }
        }
        Ok(Follow {
            source: self.source.clone(),
            session: session_id.into(),
            news,
            fold,
            ready,
        })
    }

    /// How many bus events a hub without a store lost to its transcripts because they were
    /// not read before the bus's history dropped them; always `0` over a store.
    pub fn lost_events(&self) -> u64 {
        match &self.source {
            Source::Store(_) => 0,
            Source::Memory(memory) => memory.lost_events(),
        }
    }
}

/// Where in `entries` (a session's records now) the records folded up to `cursor` end.
fn resume_point(entries: &[Entry], cursor: FrameCursor) -> Result<usize, ProtocolError> {
    let resync = |reason| Err(ProtocolError::Resync { reason });
    match entries.first() {
        None => return resync(Resync::CursorTooOld),
        Some(first) if first.position > cursor.origin => return resync(Resync::CursorTooOld),
        Some(first) if first.position < cursor.origin => return resync(Resync::UnknownCursor),
        Some(_) => {}
    }
    match entries.binary_search_by_key(&cursor.record, |entry| entry.position) {
        Ok(index) => Ok(index),
        Err(_) => resync(Resync::UnknownCursor),
    }
}

impl Follow {
    /// The next frame, waiting for the session to record one; `None` once the hub's bus
    /// is gone.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the store cannot be read; a later call tries again.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a frame is taken from the stream only when it is returned.
    pub async fn next(&mut self) -> Option<Result<StreamFrame, StoreError>> {
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return Some(Ok(frame));
            }
            loop {
                match self.news.next().await? {
                    Ok(envelope) if envelope.session_id() != Some(&*self.session) => continue,
                    // News of this session, or of sessions it cannot know (it lagged).
                    Ok(_) | Err(_) => break,
                }
            }
            let entries = match self.source.entries(&self.session, self.fold.last).await {
                Ok(entries) => entries,
                Err(error) => return Some(Err(error)),
            };
            for entry in &entries {
                self.ready.extend(self.fold.push(entry));
            }
        }
    }
}

impl Source {
    /// The session's records after position `after`.
    async fn entries(&self, session_id: &str, after: u64) -> Result<Vec<Entry>, StoreError> {
        match self {
            Self::Store(store) => Ok(store
                .history(session_id, after)
                .await?
                .into_iter()
                .map(|record| Entry {
                    position: record.position,
                    record: Record::of_change(&record.entry),
                })
                .collect()),
            Self::Memory(memory) => Ok(memory.entries(session_id, after)),
        }
    }
}

impl Fold {
    /// Folds `entry`; returns its frames, each with the cursor after it.
    fn push(&mut self, entry: &Entry) -> Vec<StreamFrame> {
        if self.origin == 0 {
            self.origin = entry.position;
        }
        self.last = entry.position;
        let frames = entry
            .record
            .as_ref()
            .map(|record| self.encoder.encode(record))
            .unwrap_or_default();
        let last = frames.len().saturating_sub(1);
        frames
            .into_iter()
            .enumerate()
            .map(|(position, frame)| StreamFrame {
                cursor: FrameCursor {
                    origin: self.origin,
                    record: entry.position,
                    frame: (position != last).then_some(position),
                },
                frame,
            })
            .collect()
    }

    /// The cursor after every record folded.
    fn cursor(&self) -> FrameCursor {
        FrameCursor {
            origin: self.origin,
            record: self.last,
            frame: None,
        }
    }
}

impl FrameCursor {
    /// The cursor of an empty history: before every record.
    pub const START: Self = Self {
        origin: 0,
        record: 0,
        frame: None,
    };

    /// Whether this is [`START`](Self::START).
    fn is_start(&self) -> bool {
        *self == Self::START
    }
}

impl fmt::Display for FrameCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "h{}-{}", self.origin, self.record)?;
        match self.frame {
            None => Ok(()),
            Some(frame) => write!(f, ".{frame}"),
        }
    }
}

impl FromStr for FrameCursor {
    type Err = ProtocolError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.starts_with("evt_") {
            return Err(ProtocolError::Resync {
                reason: Resync::UnknownCursor,
            });
        }
        let invalid = || ProtocolError::InvalidCursor {
            cursor: text.to_owned(),
        };
        let (origin, rest) = text
            .strip_prefix('h')
            .and_then(|rest| rest.split_once('-'))
            .ok_or_else(invalid)?;
        let (record, frame) = match rest.split_once('.') {
            None => (rest, None),
            Some((record, frame)) => (record, Some(frame.parse().map_err(|_| invalid())?)),
        };
        let cursor = Self {
            origin: origin.parse().map_err(|_| invalid())?,
            record: record.parse().map_err(|_| invalid())?,
            frame,
        };
        let well_formed = if cursor.origin == 0 {
            cursor.is_start()
        } else {
            cursor.record >= cursor.origin
        };
        if well_formed {
            Ok(cursor)
        } else {
            Err(invalid())
        }
    }
}

impl Serialize for FrameCursor {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for FrameCursor {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl Resync {
    /// The wire name: `cursor_too_old` or `unknown_cursor` (as `GET /event` says them).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CursorTooOld => "cursor_too_old",
            Self::UnknownCursor => "unknown_cursor",
        }
    }
}

impl fmt::Display for Resync {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
