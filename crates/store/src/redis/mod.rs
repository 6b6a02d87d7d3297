//! The Redis store: one record shared by several server instances.
//!
//! [`RedisStore`] is the handle; behind it, one module per responsibility:
//!
//! - `location`: the `redis://…?prefix=` URL, shown without its credentials;
//! - `keys`: the name of every key under the prefix;
//! - `schema`: the stored schema version and the upgrades to this build's;
//! - `writer`: the one task that sends queued writes (and reads, in their turn) on one
//!   connection, replacing it when it breaks;
//! - `pipeline`: how a group of writes becomes one pipeline of the changes script
//!   (`lua/apply.lua`), and its replies the writes' results;
//! - `queries`: [`Store`](crate::Store) for [`RedisStore`]: the reads;
//! - `follower`: the change log reader ([`ChangeLog`](crate::ChangeLog)), on a connection
//!   of its own;
//! - `outbox` and `retention`: claiming deliveries, and the sweeps that forget what is
//!   settled.
//!
//! The Lua scripts are `lua/*.lua`, each documented (its `KEYS` and `ARGV`) where the
//! Rust code includes it.

mod follower;
mod keys;
mod location;
mod outbox;
mod pipeline;
mod queries;
mod retention;
mod schema;
mod writer;

use std::future::Future;
use std::sync::{Arc, PoisonError};

use redis::aio::MultiplexedConnection;
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::history::SharedHistoryLimit;
use crate::write_room::WriteRoom;
use crate::{BoxFuture, StoreError};
use follower::Follower;
use keys::Keys;
use writer::{Attempt, Job, Link, Writer, connect, run_writer};

pub use location::RedisLocation;

/// A [`Store`] in Redis, shared by every server instance that opens it with
/// the same URL and prefix.
///
/// One task per store sends queued writes as one pipeline per group, in queue order; each
/// write is a single command or Lua script, so it is atomic in Redis, and a resolution is
/// decided there: of concurrent attempts from any instances, one script finds the request
/// pending. The insert and resolve scripts append what they changed to the change log (a
/// stream) in the same step, so every instance learns of every request and of the one
/// outcome of each, in one order ([`ChangeLog`]). Reads run on the writer task after the
/// writes queued before them; following the log uses a connection of its own, since a
/// blocking `XREAD` holds its connection. History pages (the reads clients ask for most,
/// and the biggest) use a connection of their own too, once a barrier in the writer's
/// queue says every write queued before them is answered: the writer never waits for
/// them, so neither does any acknowledgement. The change log's head (read before every
/// read over HTTP) goes on that connection at once: the changes it must count are those
/// made before it was asked for, which Redis has answered by then.
///
/// Keys, all under the prefix: `schema` (the schema version), `req:{id}` (a hash per
/// request), `pending:{kind}` and `resolved:{kind}` (sorted sets of ids, ordered by id),
/// `calls:{kind}` (a hash from `[session, call_id]` to the newest request id),
/// `resolved_at` (a sorted set of the resolved ids of both kinds, by the time they were
/// resolved, for [`Store::forget_resolved`]), `log` (the change log, a stream trimmed to
/// about [`LOG_RETENTION`] entries, whose entry ids are `0-<n>` for the `n`th change),
/// `log:seq` (the number of the last change), `events` (the bus's record, a stream trimmed
/// to about [`RedisStore::EVENT_RETENTION`] entries), `hist:{session}` (a session's history:
/// a stream whose entry ids are the numbers of its changes in the log, trimmed to about the
/// history limit), `histories` (a sorted set of the sessions with a history, by the time of
/// their newest record), `history_bytes` (a hash from each session with a history to the
/// bytes of its records), `waiting` (a hash from each session with pending requests to
/// how many), `audit` (the audit log, a stream never trimmed, whose entry ids are `0-<n>`
/// for the `n`th entry, each a `draft` field), `audit:seq` (the number of the last entry)
/// and `audit:seals` (a hash from an entry's number to its seal). The outbox: each
/// delivery is a hash `dlv:{message_id}\t{target}` (its member name, below: the message id,
/// a tab, the target), and three sorted sets of members: `outbox:due` (the pending ones, by
/// when they are next due, a claimed one's lease end), `outbox:settled` (the delivered or
/// abandoned ones, by their last attempt's time, for [`Store::forget_deliveries`]) and
/// `outbox:order` (all of them, score 0, so that their names' order, the message ids'
/// order, which is their creation order, then the targets', pages them newest first).
/// Durability is Redis's own: enable `appendonly` with `appendfsync always` (or
/// `everysec`) for writes to survive a Redis restart, and keep `maxmemory-policy
/// noeviction` (the default): a key Redis evicts is a request, or a record, lost. A
/// counter found behind its stream all the same (its key lost while the stream was kept)
/// wedges nothing: the next change or audit entry is numbered past the stream's newest
/// entry (see `pipeline`), and until then the log's head is its newest entry.
///
/// The outbox is written by the same scripts as the requests, in queue order: a winning
/// resolution adds its message's deliveries in its own step, and only a winning one.
/// Claiming ([`Store::claim_deliveries`]) is one script too, so two instances never claim
/// the same delivery within one lease: the first re-scores it in `outbox:due` to its
/// lease's end, past the second's `now`.
///
/// # Examples
///
/// ```no_run
/// use askbus_store::{RedisStore, Store};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let store = RedisStore::open("redis://127.0.0.1:6379", "askbus").await.unwrap();
/// let history = store.recent_events(100).await.unwrap();
/// # }
/// ```
///
/// [`Store`]: crate::Store
/// [`ChangeLog`]: crate::ChangeLog
/// [`Store::forget_resolved`]: crate::Store::forget_resolved
/// [`LOG_RETENTION`]: crate::LOG_RETENTION
/// [`Store::forget_deliveries`]: crate::Store::forget_deliveries
/// [`Store::claim_deliveries`]: crate::Store::claim_deliveries
#[derive(Debug, Clone)]
pub struct RedisStore {
    /// Queue of the writer task, which stops when every clone is dropped.
    jobs: mpsc::UnboundedSender<Job>,
    /// What the queue may still take of writes (reads and barriers are small).
    room: WriteRoom,
    /// Key names.
    keys: Arc<Keys>,
    /// Opens the follower's connection.
    client: redis::Client,
    /// The connection that follows the change log, opened on the first read and dropped
    /// after any error (the next read opens another and checks the log again).
    follower: Arc<Mutex<Option<Follower>>>,
    /// The connection history pages are read on, opened on the first and dropped when it
    /// breaks: not the writer's, whose acknowledgements would wait behind a page.
    reader: Arc<Mutex<Option<MultiplexedConnection>>>,
}

impl RedisStore {
    /// The key prefix of a [`RedisLocation`] that names none.
    pub const DEFAULT_PREFIX: &'static str = "askbus";

    /// Connects to the store at `location`; see [`open`](Self::open).
    ///
    /// # Errors
    ///
    /// As [`open`](Self::open).
    pub async fn open_at(location: &RedisLocation) -> Result<Self, StoreError> {
        Self::open(&location.url, &location.prefix).await
    }

    /// How many events the history stream keeps, approximately (Redis trims lazily).
    pub const EVENT_RETENTION: usize = 100_000;

    /// Connects to Redis at `url` (`redis://HOST:PORT[/DB]`), checks the schema version
    /// under `prefix`, and starts the writer task on the current Tokio runtime.
    ///
    /// # Errors
    ///
    /// [`StoreError::Redis`] if Redis cannot be reached, [`StoreError::NewerSchema`] if a
    /// newer askbus wrote the keys under `prefix`.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    pub async fn open(url: &str, prefix: &str) -> Result<Self, StoreError> {
        let client = redis::Client::open(url)?;
        let mut connection = connect(&client).await?;
        let keys = Arc::new(Keys {
            prefix: prefix.to_owned(),
            history_limit: SharedHistoryLimit::default(),
        });
        schema::migrate(&mut connection, &keys).await?;
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run_writer(
            Writer::new(client.clone(), connection, Arc::clone(&keys)),
            queue,
        ));
        Ok(Self {
            jobs,
            room: WriteRoom::new(),
            keys,
            client,
            follower: Arc::new(Mutex::new(None)),
            reader: Arc::new(Mutex::new(None)),
        })
    }

    /// Holds at most `mib` MiB of writes queued for Redis and unanswered (at least one;
    /// [`DEFAULT_QUEUED_WRITES_MIB`](crate::DEFAULT_QUEUED_WRITES_MIB) otherwise): past it
    /// a write fails at once with [`StoreError::Overloaded`]. Bounds what clients that
    /// hang up make the server hold while Redis does not answer.
    #[must_use]
    pub fn with_queued_writes_mib(self, mib: u32) -> Self {
        self.room.set_limit_mib(mib);
        self
    }

    /// Keeps about the newest `limit` records of each session's history (at least one);
    /// see the `history` module docs. Applies to the records written from now on.
    #[must_use]
    pub fn with_history_limit(self, limit: usize) -> Self {
        self.keys.history_limit.set_records(limit);
        self
    }

    /// Keeps about `bytes` bytes of each session's history at most, each record counted as
    /// the length of its JSON (but always the newest record); see the `history` module
    /// docs. Applies to the records written from now on.
    #[must_use]
    pub fn with_history_bytes(self, bytes: usize) -> Self {
        self.keys.history_limit.set_bytes(bytes);
        self
    }

    /// Completes once every write queued before the call is answered (executed, or failed).
    ///
    /// # Errors
    ///
    /// [`StoreError::Closed`] if the writer stopped.
    async fn written_before(&self) -> Result<(), StoreError> {
        let (sender, answered) = oneshot::channel();
        self.jobs
            .send(Job::Barrier(sender))
            .map_err(|_| StoreError::Closed)?;
        answered.await.map_err(|_| StoreError::Closed)
    }

    /// The connection history pages are read on, opened if there is none.
    async fn reader(&self) -> Result<MultiplexedConnection, StoreError> {
        let mut reader = self.reader.lock().await;
        if let Some(connection) = &*reader {
            return Ok(connection.clone());
        }
        let connection = connect(&self.client).await?;
        *reader = Some(connection.clone());
        Ok(connection)
    }

    /// Runs `query` on the reader's connection (not after the writes queued before it:
    /// see [`written_before`](Self::written_before)), and once more on a new connection if
    /// that one broke (Redis restarted while it was idle): a read changes nothing.
    async fn read_aside<T, F>(
        &self,
        query: impl Fn(MultiplexedConnection) -> F,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = redis::RedisResult<T>>,
    {
        let mut attempt = Attempt::First;
        loop {
            match query(self.reader().await?).await {
                Err(error) if error.is_unrecoverable_error() => {
                    self.reader.lock().await.take();
                    if attempt == Attempt::Last {
                        return Err(error.into());
                    }
                    attempt = Attempt::Last;
                }
                result => return result.map_err(StoreError::from),
            }
        }
    }

    /// Runs `query` on the writer task after every write queued before it (twice if the
    /// connection broke under the first run: see [`Writer`]).
    fn read<T, F>(
        &self,
        query: impl Fn(MultiplexedConnection, Arc<Keys>) -> F + Send + Sync + 'static,
    ) -> BoxFuture<'static, T>
    where
        T: Send + 'static,
        F: Future<Output = Result<T, StoreError>> + Send + 'static,
    {
        let (sender, receiver) = oneshot::channel();
        let keys = Arc::clone(&self.keys);
        let query = Arc::new(query);
        let sender = Arc::new(std::sync::Mutex::new(Some(sender)));
        let job = Job::Read(Box::new(move |connection, attempt| {
            let (query, keys, sender) =
                (Arc::clone(&query), Arc::clone(&keys), Arc::clone(&sender));
            Box::pin(async move {
                let result = match connection {
                    Ok(connection) => query(connection, keys).await,
                    Err(error) => Err(error),
                };
                let link = Link::after(&result);
                if link == Link::Lost && attempt == Attempt::First {
                    return link;
                }
                let sender = sender.lock().unwrap_or_else(PoisonError::into_inner).take();
                // A reader that stopped waiting is not an error.
                if let Some(sender) = sender {
                    let _ = sender.send(result);
                }
                link
            })
        }));
        let queued = self.jobs.send(job).is_ok();
        Box::pin(async move {
            if !queued {
                return Err(StoreError::Closed);
            }
            receiver.await.unwrap_or(Err(StoreError::Closed))
        })
    }
}
