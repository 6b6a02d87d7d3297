//! Per-session transcripts: the history and the stream of each session, from its records.

use std::collections::VecDeque;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use askbus_bus::{Bus, Subscription};
use askbus_question::RequestHub;
use askbus_store::{DEFAULT_HISTORY_BYTES, DEFAULT_HISTORY_LIMIT, HistoryPage, Store, StoreError};
use futures_util::StreamExt;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use tokio::sync::{Semaphore, SemaphorePermit};

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
///   the memory bound evicting it), or the cursor is not one of these transcripts' (a
///   record, or a frame of a record, the session does not have), [`follow`](Self::follow)
///   fails with [`ProtocolError::Resync`]: load the history again. A stream whose next
///   records are trimmed before it reads them (its client reads slower than its session
///   records) ends the same way, with [`Follow::next`] answering the resync.
/// - **Records are read a page at a time**, [`PAGE_RECORDS`](Self::PAGE_RECORDS) records
///   of a session per read, and at most [`CONCURRENT_READS`](Self::CONCURRENT_READS) reads
///   at once, by every history and stream together: a history read holds one of them
///   until it has read every page and folded them (and written them, for
///   [`history_json`](Self::history_json)), a stream one per page (the others wait their
///   turn). So what the store does for transcripts at any moment is bounded, whatever
///   clients ask: a SQLite store runs reads on the thread that commits every write, and a
///   write waits for at most that many pages. A history is folded on Tokio's blocking
///   pool, never on the threads that answer everything else.
/// - **Memory.** Nothing keeps whole transcripts: a history read holds the session's
///   records (at most about the per-session limits) until it has folded them, and at most
///   [`CONCURRENT_READS`](Self::CONCURRENT_READS) run at once; an open stream keeps its
///   encoder's state, at most one page of records it has not sent yet, and the frames of
///   one record, whether or not its client reads. Without a store, the records themselves
///   are in memory, within [`HistoryLimits`].
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
/// assert_eq!(serde_json::to_value(&next.frame).unwrap()["type"], "message_start");
/// # }
/// ```
#[derive(Clone)]
pub struct Transcripts {
    /// Where news of every session is published: a stream reads again when its session
    /// has some.
    bus: Bus,
    /// Where the records are, and the turns to read them.
    records: Records,
}

/// How much a hub without a store keeps of its sessions' histories, in memory: in records,
/// and in bytes (each record counted as the JSON of its bus event).
///
/// # Examples
///
/// ```
/// use askbus_protocol::HistoryLimits;
///
/// let limits = HistoryLimits { records_per_session: 200, ..HistoryLimits::default() };
/// assert_eq!(limits.records_in_memory, 100_000);
/// assert_eq!(limits.bytes_in_memory, 256 * 1024 * 1024);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Records each session keeps, about (its oldest are dropped a batch at a time, as a
    /// store does; see `askbus_store`'s `history` module). Default:
    /// [`DEFAULT_HISTORY_LIMIT`]. A store has its own, set when it is opened.
    pub records_per_session: usize,
    /// Bytes each session keeps, about, likewise (but always its newest record). Default:
    /// [`DEFAULT_HISTORY_BYTES`].
    pub bytes_per_session: usize,
    /// Records kept across every session: past it, whole sessions are dropped, those with
    /// nothing pending first, the one that recorded nothing for longest first. Default:
    /// 100,000.
    pub records_in_memory: usize,
    /// Bytes kept across every session: past it, sessions are dropped as past
    /// `records_in_memory`. The records take about as much memory again as they count.
    /// Default: 256 MiB.
    pub bytes_in_memory: usize,
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
///
/// It reads the session's records as its frames are taken, a page at a time: what it holds
/// is its encoder's state, the rest of the page it read last, and the frames of one record.
pub struct Follow {
    /// Where the records are, and the turns to read them.
    records: Records,
    /// The session followed.
    session: Arc<str>,
    /// Every bus event: a stream reads the records again when its session has news (or
    /// it lagged). What it yields is not read.
    news: Subscription,
    /// The encoder's state after the last record folded.
    fold: Fold,
    /// Records read and not folded yet: the rest of one page.
    page: VecDeque<Entry>,
    /// Whether the session may have records after the page: the last read was a full page,
    /// or news came since.
    behind: bool,
    /// Frames folded but not yielded yet: the rest of one record's.
    ready: VecDeque<StreamFrame>,
}

/// Where a session's records are, and the turns to read them: clones share the turns.
#[derive(Clone)]
struct Records {
    /// Where.
    source: Source,
    /// One permit per read that may run now (see the policy on [`Transcripts`]); never
    /// closed.
    reads: Arc<Semaphore>,
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
            bytes_per_session: DEFAULT_HISTORY_BYTES,
            records_in_memory: 100_000,
            bytes_in_memory: 256 * 1024 * 1024,
        }
    }
}

impl Transcripts {
    /// How many records of a session one read asks for (see the policy).
    pub const PAGE_RECORDS: usize = 8;

    /// How many reads of records run at once, by every history and stream of these
    /// transcripts together (see the policy).
    pub const CONCURRENT_READS: usize = 4;

    /// The transcripts of `hub`'s sessions, with the default [`HistoryLimits`].
    pub fn new(hub: &RequestHub) -> Self {
        Self::with_limits(hub, HistoryLimits::default())
    }

    /// The transcripts of `hub`'s sessions: from its store's histories, or, for a hub
    /// without a store, from its bus, keeping within `limits` in memory.
    ///
    /// Without a store only events published from now on are kept, each as it is published
    /// (none is missed, with or without a Tokio runtime).
    pub fn with_limits(hub: &RequestHub, limits: HistoryLimits) -> Self {
        let bus = hub.bus().clone();
        let source = match hub.store() {
            Some(store) => Source::Store(Arc::clone(store)),
            None => Source::Memory(MemoryHistory::start(&bus, limits)),
        };
        let reads = Arc::new(Semaphore::new(Self::CONCURRENT_READS));
        Self {
            bus,
            records: Records { source, reads },
        }
    }

    /// The session's history now: its messages, and the cursor its stream resumes after.
    /// A session that recorded nothing has an empty history, `h0-0`.
    ///
    /// It waits for a turn to read (see the policy), and holds it until it has read every
    /// page and folded them, on Tokio's blocking pool.
    ///
    /// # Errors
    ///
    /// [`StoreError`] if the store cannot be read; [`StoreError::Closed`] if the runtime
    /// shuts down meanwhile.
    pub async fn history(&self, session_id: &str) -> Result<History, StoreError> {
        self.folded(session_id, |history| history).await
    }

    /// The session's [`history`](Self::history) as JSON, for a server to answer with: it
    /// is written within the read's turn too, so no more histories are in memory being
    /// built than there are turns, however many are asked for at once.
    ///
    /// # Errors
    ///
    /// As [`history`](Self::history).
    pub async fn history_json(&self, session_id: &str) -> Result<Vec<u8>, StoreError> {
        let written = self.folded(session_id, |history| serde_json::to_vec(&history));
        written.await?.map_err(|error| {
            StoreError::Corrupt(format!("a history could not be written as JSON: {error}"))
        })
    }

    /// The session's history, read in its turn and folded, then made into what `finish`
    /// makes of it, on the blocking pool: the fold is as long as the history, and the
    /// threads that answer every other request must not wait for it.
    async fn folded<T: Send + 'static>(
        &self,
        session_id: &str,
        finish: impl FnOnce(History) -> T + Send + 'static,
    ) -> Result<T, StoreError> {
        let _turn = self.records.turn().await;
        // Newest first: a page before the oldest record read continues the pages read
        // without a gap, whatever is trimmed meanwhile (trimming takes the oldest).
        let mut pages = Vec::new();
        let mut before = u64::MAX;
        loop {
            let page = self
                .records
                .source
                .page(session_id, HistoryPage::Before(before))
                .await?;
            let last = page.len() < Self::PAGE_RECORDS;
            if let Some(oldest) = page.first() {
                before = oldest.position;
            }
            pages.push(page);
            if last {
                break;
            }
        }
        let folded = tokio::task::spawn_blocking(move || {
            let mut fold = Fold::default();
            let mut view = ClientView::new();
            for entry in pages.iter().rev().flatten() {
                for frame in fold.push(entry) {
                    view.apply(&frame.frame);
                }
            }
            drop(pages);
            let history = view.history(fold.cursor());
            drop(view);
            finish(history)
        });
        match folded.await {
            Ok(finished) => Ok(finished),
            Err(error) => match error.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                // The runtime is shutting down.
                Err(_) => Err(StoreError::Closed),
            },
        }
    }

    /// The session's stream: the frames after `after` (all of them for `None`, or for an
    /// empty history's cursor), then each new one as the session records it.
    ///
    /// Resuming reads the records up to `after` first, a page at a time, keeping only the
    /// encoder's state.
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
        let mut follow = Follow {
            records: self.records.clone(),
            session: session_id.into(),
            // Subscribed before the first read, so news published after it is not missed.
            news: self.bus.subscribe_all(),
            fold: Fold::default(),
            page: VecDeque::new(),
            behind: true,
            ready: VecDeque::new(),
        };
        if let Some(cursor) = after.filter(|cursor| !cursor.is_start()) {
            follow.resume(cursor).await?;
        }
        Ok(follow)
    }
}

impl Follow {
    /// The next frame, waiting for the session to record one; `None` once the hub's bus
    /// is gone.
    ///
    /// # Errors
    ///
    /// [`ProtocolError::Resync`] when the records after the last one read were trimmed
    /// before they could be read (the stream cannot go on: load the history again);
    /// [`ProtocolError::Store`] if the store cannot be read, which a later call tries
    /// again once the session has news.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: a frame is taken from the stream only when it is returned.
    pub async fn next(&mut self) -> Option<Result<StreamFrame, ProtocolError>> {
        loop {
            if let Some(frame) = self.ready.pop_front() {
                return Some(Ok(frame));
            }
            if let Some(entry) = self.page.pop_front() {
                self.ready.extend(self.fold.push(&entry));
                continue;
            }
            if self.behind {
                if let Err(error) = self.read_on().await {
                    self.behind = false;
                    return Some(Err(error));
                }
                continue;
            }
            match self.news.next().await? {
                Ok(envelope) if envelope.session_id() != Some(&*self.session) => {}
                // News of this session, or of sessions it cannot know (it lagged).
                Ok(_) | Err(_) => self.behind = true,
            }
        }
    }

    /// Folds the records up to `cursor`'s, keeping only the encoder's state, and keeps the
    /// frames of that record after `cursor`'s and the rest of its page to yield.
    async fn resume(&mut self, cursor: FrameCursor) -> Result<(), ProtocolError> {
        let resync = |reason| ProtocolError::Resync { reason };
        // The first page is the session's first records: they must start with the
        // cursor's first.
        self.read_on().await?;
        match self.page.front() {
            None => return Err(resync(Resync::CursorTooOld)),
            Some(first) if first.position > cursor.origin => {
                return Err(resync(Resync::CursorTooOld));
            }
            Some(first) if first.position < cursor.origin => {
                return Err(resync(Resync::UnknownCursor));
            }
            Some(_) => {}
        }
        loop {
            let Some(entry) = self.page.pop_front() else {
                if !self.behind {
                    // Every record read, the cursor's not among them.
                    return Err(resync(Resync::UnknownCursor));
                }
                self.read_on().await?;
                continue;
            };
            if entry.position > cursor.record {
                return Err(resync(Resync::UnknownCursor));
            }
            let frames = self.fold.push(&entry);
            if entry.position == cursor.record {
                let sent = match cursor.frame {
                    None => frames.len(),
                    Some(frame) if frame < frames.len() => frame + 1,
                    // A frame the record does not have.
                    Some(_) => return Err(resync(Resync::UnknownCursor)),
                };
                self.ready.extend(frames.into_iter().skip(sent));
                return Ok(());
            }
        }
    }

    /// Reads the page of records after the last one folded (from the session's first
    /// before any) into `page`, with a turn of its own.
    ///
    /// # Errors
    ///
    /// [`ProtocolError::Resync`] when the last record folded is no longer kept: the
    /// records after it may be gone too. [`ProtocolError::Store`] if the store cannot be
    /// read. Either way nothing changed.
    async fn read_on(&mut self) -> Result<(), ProtocolError> {
        let last = self.fold.last;
        let mut page: VecDeque<Entry> = {
            let _turn = self.records.turn().await;
            let page = self
                .records
                .source
                .page(&self.session, HistoryPage::From(last));
            page.await?.into()
        };
        let behind = page.len() == Transcripts::PAGE_RECORDS;
        if last != 0 && page.pop_front().map(|anchor| anchor.position) != Some(last) {
            return Err(ProtocolError::Resync {
                reason: Resync::CursorTooOld,
            });
        }
        self.page = page;
        self.behind = behind;
        Ok(())
    }
}

impl Records {
    /// A turn to read (see the policy on [`Transcripts`]), once one is free.
    async fn turn(&self) -> Option<SemaphorePermit<'_>> {
        // Never closed, so this waits for a permit; without one it would read anyway.
        self.reads.acquire().await.ok()
    }
}

impl Source {
    /// A page of the session's records: [`Transcripts::PAGE_RECORDS`] of them, or fewer at
    /// the end.
    async fn page(&self, session_id: &str, page: HistoryPage) -> Result<Vec<Entry>, StoreError> {
        let limit = Transcripts::PAGE_RECORDS;
        match self {
            Self::Store(store) => Ok(store
                .history(session_id, page, limit)
                .await?
                .into_iter()
                .map(|record| Entry {
                    position: record.position,
                    record: Record::of_change(&record.entry),
                })
                .collect()),
            Self::Memory(memory) => Ok(memory.page(session_id, page, limit)),
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
