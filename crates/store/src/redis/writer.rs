//! The writer task: the one sender of writes, and of the reads queued behind them.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisResult, Value};
use tokio::sync::{mpsc, oneshot};

use super::keys::Keys;
use super::pipeline::{Answers, Script, pipeline_for, written};
use crate::ack::AckSender;
use crate::{StoreError, Write};

/// Work for the writer task.
#[expect(
    clippy::large_enum_variant,
    reason = "most jobs are writes: boxing them would allocate once a write to save a read's slot"
)]
pub(super) enum Job {
    /// A write and the ack to complete once Redis executed it.
    Write(Write, AckSender),
    /// A query, run after the writes queued before it.
    Read(ReadJob),
    /// Told once every write queued before it is answered, without holding up the ones
    /// after it: a history page is read on a connection of its own after that.
    Barrier(oneshot::Sender<()>),
}

/// A query of a [`Job::Read`]: run on a connection (or told why there is none), it sends
/// its result to the reader, unless the connection broke on an [`Attempt::First`]: then it
/// is run again.
type ReadJob = Box<dyn FnMut(Result<MultiplexedConnection, StoreError>, Attempt) -> Sending + Send>;

/// A query the writer task sent on its connection, running until its answer is in; it
/// tells whether the connection survived it.
type Sending = Pin<Box<dyn Future<Output = Link> + Send>>;

/// Queued writes sent together, each with the ack its result completes.
type Group = Vec<(Write, AckSender)>;

/// A group the writer task sent on its connection, running until its answer is in.
type InFlight = Pin<Box<dyn Future<Output = Answer> + Send>>;

/// What the answer to a group came to, for the writer.
pub(super) struct Answer {
    /// What it says of the connection.
    link: Link,
    /// Whether Redis answered a call of the changes script that it does not have the
    /// script (`NOSCRIPT`: flushed, or lost without the connection breaking): the next
    /// group loads it again.
    script_lost: bool,
    /// The group, its writes unanswered, when nothing of it was done for want of the
    /// script and it may be sent again (see [`Writer`]), with its number among what the
    /// writer sent.
    undone: Option<(Group, u64)>,
}

impl Answer {
    /// An answer that says only what became of the connection: the group's writes are
    /// answered, and the script is not known lost.
    fn settled(link: Link) -> Self {
        Self {
            link,
            script_lost: false,
            undone: None,
        }
    }
}

/// What became of the writer's connection, as a command's answer shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Link {
    /// Usable (the command may still have failed, for a reason of its own).
    Intact,
    /// Broken (Redis restarted or went away): the writer opens another.
    Lost,
}

impl Link {
    /// What `result` says of the connection it came over.
    pub(super) fn after<T>(result: &Result<T, StoreError>) -> Self {
        match result {
            Err(StoreError::Redis(error)) => Self::after_error(error),
            _ => Self::Intact,
        }
    }

    fn after_error(error: &redis::RedisError) -> Self {
        if error.is_unrecoverable_error() {
            Self::Lost
        } else {
            Self::Intact
        }
    }
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Write(write, _) => f.debug_tuple("Write").field(write).finish(),
            Self::Read(_) => f.write_str("Read"),
            Self::Barrier(_) => f.write_str("Barrier"),
        }
    }
}

/// The writer task: one pipeline per group of queued writes, up to [`MAX_IN_FLIGHT`] of
/// them sent and not yet answered; reads start after the writes queued before them.
///
/// Several groups in flight keep a write from waiting for the previous group's answer
/// before it is even sent. The order holds because a request on a multiplexed connection
/// takes its place in the connection's queue when it is first polled (redis-rs sends it
/// down a channel whose 50 slots this task never fills), and this task polls each group
/// once as it starts it, before it starts the next: the groups reach Redis, which runs one
/// connection's commands in order, in queue order. Reads wait their turn the same way and
/// are awaited here, so nothing else fills the connection's channel.
pub(super) async fn run_writer(mut writer: Writer, mut queue: mpsc::UnboundedReceiver<Job>) {
    loop {
        tokio::select! {
            biased;
            Some(answer) = writer.in_flight.next(), if !writer.in_flight.is_empty() => {
                if let Some(group) = writer.take(answer, Counted::Yes) {
                    writer.send(group, Attempt::Last, Counted::Yes).await;
                }
            }
            job = queue.recv(), if writer.in_flight.len() < MAX_IN_FLIGHT => {
                let Some(job) = job else { break };
                let mut group = Vec::new();
                let mut next = Some(job);
                while let Some(job) = next.take() {
                    match job {
                        Job::Write(write, ack) => group.push((write, ack)),
                        Job::Read(query) => {
                            writer.start(std::mem::take(&mut group)).await;
                            // Queued behind the writes; the writer waits for it, so only
                            // its own groups are ever in flight (see above).
                            writer.run(query).await;
                        }
                        Job::Barrier(answered) => {
                            writer.start(std::mem::take(&mut group)).await;
                            writer.barrier(answered);
                        }
                    }
                    if group.len() < MAX_GROUP {
                        next = queue.try_recv().ok();
                    }
                }
                writer.start(group).await;
            }
        }
    }
    while let Some(answer) = writer.in_flight.next().await {
        if let Some(group) = writer.take(answer, Counted::Yes) {
            writer.send(group, Attempt::Last, Counted::Yes).await;
        }
    }
}

/// The writer task's state: its connection, replaced when it breaks, and what it sent on it.
///
/// A connection that broke (Redis restarted, or closed it) fails the writes that were on
/// their way over it, and the next write opens a new one, once the groups still in flight
/// on the old one have their answers, so nothing sent before the break can reach Redis
/// after what is sent after it. A group the broken connection refused outright (it learns
/// it is broken only when used: Redis restarted while this store was idle) never left this
/// process, so it is sent again, once, on the new connection; a read is run again, once
/// (reads change nothing, and a sweep only repeats itself). While Redis cannot be reached,
/// writes and reads fail with the reason, without waiting: a new connection is tried at
/// most every [`MIN_RECONNECT_PAUSE`], the pause doubling up to [`MAX_RECONNECT_PAUSE`]
/// while attempts fail, and an attempt waits at most redis-rs's connection timeout (1 s).
/// A connection that stops answering without closing is not replaced (its commands time
/// out one by one, after [`RESPONSE_TIMEOUT`], failing their writes with
/// [`StoreError::Unresponsive`]: they may have been done); TCP notices it in the end.
///
/// The changes script is loaded once per connection, by the first group that calls it (a
/// restarted Redis, which may have lost its scripts, is a new connection). A Redis that
/// lost it all the same (`SCRIPT FLUSH`; a failover behind a proxy that kept the
/// connection) answers each call `NOSCRIPT` and does nothing of it; the next group loads it
/// again. A group that got nothing but `NOSCRIPT` answers is sent again, once, if nothing
/// was sent after it (an idle store's next write, say), so its writes still come after
/// everything queued before them and before everything queued after; otherwise those
/// writes fail, not done ([`StoreError::CommitFailed`]), rather than be done out of order.
pub(super) struct Writer {
    /// Opens new connections.
    client: redis::Client,
    /// Key names.
    keys: Arc<Keys>,
    /// The connection writes go on; `None` once it broke, until a new one is open.
    connection: Option<MultiplexedConnection>,
    /// When a new connection may be tried, and why the last attempt failed.
    reconnect: Reconnect,
    /// Groups sent and not yet answered, in the order they were sent.
    in_flight: FuturesOrdered<InFlight>,
    /// Whether a group sent on this connection loaded the changes script: the next ones
    /// count on it.
    script: Script,
    /// How many groups and reads were sent, ever: whether anything went after a group.
    sends: u64,
    /// How many groups were put in flight, ever.
    sent: u64,
    /// How many of those are answered: they are answered in the order they were sent.
    answered: u64,
    /// Barriers waiting for the groups in flight: each is told once `answered` reaches
    /// the count of `sent` it was given.
    barriers: VecDeque<(u64, oneshot::Sender<()>)>,
}

/// The pacing of the [`Writer`]'s attempts to open a connection.
struct Reconnect {
    /// No attempt before this.
    not_before: tokio::time::Instant,
    /// The wait after the next attempt.
    pause: Duration,
    /// Why the last attempt failed; `None` if it succeeded.
    failure: Option<redis::RedisError>,
}

/// Whether a group being sent is in `sent` already: it was in flight, and is sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counted {
    /// No: it goes in flight for the first time.
    No,
    /// Yes: its answer, when it comes, is counted in `answered`.
    Yes,
}

/// Whether a group or read refused by a broken connection may be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Attempt {
    /// The first: a broken connection is replaced and it is tried again.
    First,
    /// The last: whatever happens is its answer.
    Last,
}

impl Writer {
    pub(super) fn new(
        client: redis::Client,
        connection: MultiplexedConnection,
        keys: Arc<Keys>,
    ) -> Self {
        Self {
            client,
            keys,
            connection: Some(connection),
            reconnect: Reconnect {
                not_before: tokio::time::Instant::now(),
                pause: MIN_RECONNECT_PAUSE,
                failure: None,
            },
            in_flight: FuturesOrdered::new(),
            script: Script::Load,
            sends: 0,
            sent: 0,
            answered: 0,
            barriers: VecDeque::new(),
        }
    }

    /// Takes note of `answer`, the answer to a group (the oldest in flight, if `counted`):
    /// hands the group back, unanswered, if it is to be sent again (see [`Writer`]);
    /// otherwise a group counted in `sent` is answered, and the barriers that waited for
    /// it are told.
    fn take(&mut self, answer: Answer, counted: Counted) -> Option<Group> {
        if answer.script_lost {
            self.script = Script::Load;
        }
        if let Some((group, number)) = answer.undone {
            if number == self.sends {
                return Some(group);
            }
            fail(group, missing_script);
        }
        self.note(answer.link);
        if counted == Counted::No {
            return None;
        }
        self.answered += 1;
        while let Some((_, barrier)) = self
            .barriers
            .pop_front_if(|(after, _)| *after <= self.answered)
        {
            // A reader that stopped waiting is not an error.
            let _ = barrier.send(());
        }
        None
    }

    /// Tells `barrier` once every group sent so far is answered (at once if none is in
    /// flight).
    fn barrier(&mut self, barrier: oneshot::Sender<()>) {
        if self.in_flight.is_empty() {
            let _ = barrier.send(());
        } else {
            self.barriers.push_back((self.sent, barrier));
        }
    }

    /// Takes note of what an answer said of the connection.
    fn note(&mut self, link: Link) {
        if link == Link::Lost && self.connection.take().is_some() {
            tracing::warn!("the connection to Redis broke; the next write opens another");
        }
    }

    /// The connection to send on: the current one, or a new one if it broke (and Redis
    /// can be reached).
    async fn connection(&mut self) -> Result<MultiplexedConnection, redis::RedisError> {
        if let Some(connection) = &self.connection {
            return Ok(connection.clone());
        }
        let now = tokio::time::Instant::now();
        if now < self.reconnect.not_before {
            return Err(self.reconnect.failure.clone().unwrap_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::BrokenPipe,
                    "the connection to Redis broke; reconnecting",
                )
                .into()
            }));
        }
        // What the old connection still carries is answered (most likely: failed) first.
        while let Some(answer) = self.in_flight.next().await {
            if let Some(group) = self.take(answer, Counted::Yes) {
                fail(group, missing_script);
                self.answered_now(Link::Intact, Counted::Yes);
            }
        }
        let attempt = connect(&self.client).await;
        let now = tokio::time::Instant::now();
        match attempt {
            Ok(connection) => {
                if self.reconnect.failure.take().is_some() {
                    tracing::info!("Redis can be reached again");
                }
                self.reconnect.pause = MIN_RECONNECT_PAUSE;
                self.reconnect.not_before = now + MIN_RECONNECT_PAUSE;
                self.script = Script::Load;
                self.connection = Some(connection.clone());
                Ok(connection)
            }
            Err(error) => {
                tracing::warn!(
                    "cannot reach Redis to write ({error}); writes fail until it can be"
                );
                self.reconnect.not_before = now + self.reconnect.pause;
                self.reconnect.pause = (self.reconnect.pause * 2).min(MAX_RECONNECT_PAUSE);
                self.reconnect.failure = Some(error.clone());
                Err(error)
            }
        }
    }

    /// Sends `group` (queues it on the connection, see [`run_writer`]) and keeps it in
    /// flight, or fails its writes if there is no connection to send it on.
    async fn start(&mut self, group: Group) {
        if !group.is_empty() {
            self.send(group, Attempt::First, Counted::No).await;
        }
    }

    /// Sends `group`: its first time, or its second ([`Attempt::Last`]) once Redis answered
    /// it `NOSCRIPT` and nothing else (it was in flight: [`Counted::Yes`]).
    async fn send(&mut self, mut group: Group, mut attempt: Attempt, counted: Counted) {
        loop {
            let mut connection = match self.connection().await {
                Ok(connection) => connection,
                Err(error) => {
                    fail(group, || StoreError::Redis(error.clone()));
                    return self.answered_now(Link::Lost, counted);
                }
            };
            let (pipeline, answers) = pipeline_for(&self.keys, &group, self.script);
            if answers
                .iter()
                .any(|answer| matches!(answer, Answers::Changes(_)))
            {
                self.script = Script::Loaded;
            }
            self.sends += 1;
            let number = self.sends;
            let mut replies = Box::pin(async move {
                pipeline
                    .query_async::<Vec<RedisResult<Value>>>(&mut connection)
                    .await
            });
            match poll_once(&mut replies).await {
                // Refused before it was sent: the connection had broken meanwhile (redis-rs
                // fails the first poll only when its driver task is gone; a reply and a
                // break between a send and the first poll of its answer cannot both come
                // while this task is being polled, short of this thread being preempted
                // that long).
                std::task::Poll::Ready(Err(error))
                    if attempt == Attempt::First && Link::after_error(&error) == Link::Lost =>
                {
                    self.note(Link::Lost);
                    attempt = Attempt::Last;
                }
                std::task::Poll::Ready(replies) => {
                    let answer = complete(group, &answers, replies, attempt, number);
                    match self.take(answer, counted) {
                        Some(undone) => {
                            group = undone;
                            attempt = Attempt::Last;
                        }
                        None => return,
                    }
                }
                std::task::Poll::Pending => {
                    if counted == Counted::No {
                        self.sent += 1;
                    }
                    return self.in_flight.push_back(Box::pin(async move {
                        complete(group, &answers, replies.await, attempt, number)
                    }));
                }
            }
        }
    }

    /// Takes note of a group's end that is no answer from Redis (see [`take`](Self::take)).
    fn answered_now(&mut self, link: Link, counted: Counted) {
        // Nothing is handed back: nothing is undone.
        let _ = self.take(Answer::settled(link), counted);
    }

    /// Runs a read on the connection, and once more on a new one if the connection broke.
    async fn run(&mut self, mut query: ReadJob) {
        self.sends += 1;
        let connection = self.connection().await.map_err(StoreError::from);
        let link = query(connection, Attempt::First).await;
        self.note(link);
        if link == Link::Lost {
            let connection = self.connection().await.map_err(StoreError::from);
            let link = query(connection, Attempt::Last).await;
            self.note(link);
        }
    }
}

/// How long a command sent on the writer's connection may wait for its answer: longer than
/// any turn a group takes behind the groups and reads queued before it, under any load
/// (with redis-rs's default, half a second, writes Redis executed were failed by the
/// hundreds), yet not forever, so a Redis that stops answering without closing the
/// connection fails the writes instead of holding them.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection for the writer, or the history reader: answers wait up to
/// [`RESPONSE_TIMEOUT`].
pub(super) async fn connect(client: &redis::Client) -> RedisResult<MultiplexedConnection> {
    let config = AsyncConnectionConfig::new().set_response_timeout(Some(RESPONSE_TIMEOUT));
    client
        .get_multiplexed_async_connection_with_config(&config)
        .await
}

/// The error of writes whose pipeline got no answer: [`StoreError::Unresponsive`] when it
/// timed out (they may or may not have been done), else Redis's error.
fn unanswered(error: &redis::RedisError) -> StoreError {
    if error.is_timeout() {
        StoreError::Unresponsive
    } else {
        StoreError::Redis(error.clone())
    }
}

/// The pause after the first attempt to reach Redis again, and after any that succeeds.
const MIN_RECONNECT_PAUSE: Duration = Duration::from_millis(250);

/// The longest pause between attempts to reach Redis again.
const MAX_RECONNECT_PAUSE: Duration = Duration::from_secs(5);

/// Polls `future` once, in the calling task.
async fn poll_once<F: Future + Unpin>(future: &mut F) -> std::task::Poll<F::Output> {
    std::future::poll_fn(|cx| std::task::Poll::Ready(Pin::new(&mut *future).poll(cx))).await
}

/// Most writes sent in one pipeline.
const MAX_GROUP: usize = 1024;

/// Most pipelines sent and not yet answered.
const MAX_IN_FLIGHT: usize = 4;

/// Completes every ack of `group` with its write's result from `replies`, the answer to
/// the group's pipeline (`answers` from [`pipeline_for`]), sent as the writer's `number`th
/// thing; says what the answer came to. A group whose every command was a call of the
/// changes script that Redis answered `NOSCRIPT` was not done at all: on its first
/// attempt its acks are left for the writer to send it again.
fn complete(
    group: Group,
    answers: &[Answers],
    replies: RedisResult<Vec<RedisResult<Value>>>,
    attempt: Attempt,
    number: u64,
) -> Answer {
    let replies = match replies {
        Ok(replies) if replies.len() == answers.len() => replies,
        Ok(_) => {
            fail(group, || {
                StoreError::Corrupt(
                    "Redis answered a pipeline with the wrong number of replies".into(),
                )
            });
            return Answer::settled(Link::Intact);
        }
        Err(error) => {
            fail(group, || unanswered(&error));
            return Answer::settled(Link::after_error(&error));
        }
    };
    let unloaded = |(reply, answer): (&RedisResult<Value>, &Answers)| {
        matches!(answer, Answers::Changes(_)) && lacks_script(reply)
    };
    let script_lost = replies.iter().zip(answers).any(unloaded);
    if script_lost && attempt == Attempt::First && replies.iter().zip(answers).all(unloaded) {
        return Answer {
            link: Link::Intact,
            script_lost,
            undone: Some((group, number)),
        };
    }
    let mut writes = group.into_iter();
    for (reply, &answer) in replies.into_iter().zip(answers) {
        let count = answer.writes();
        if script_lost && lacks_script(&reply) {
            fail(writes.by_ref().take(count).collect(), missing_script);
            continue;
        }
        let results: Vec<RedisResult<Value>> = match (answer, reply) {
            (Answers::Append, reply) => vec![reply],
            // The call failed as a whole (Redis refused to run it): so did each write.
            (_, Ok(Value::ServerError(error))) => (0..count)
                .map(|_| Ok(Value::ServerError(error.clone())))
                .collect(),
            (_, Ok(Value::Array(results))) if results.len() == count => {
                results.into_iter().map(Ok).collect()
            }
            (_, Ok(other)) => (0..count)
                .map(|_| {
                    Err(redis::RedisError::from((
                        redis::ErrorKind::Parse,
                        "unexpected reply to the changes script",
                        format!("{other:?}"),
                    )))
                })
                .collect(),
            (_, Err(error)) => (0..count).map(|_| Err(error.clone())).collect(),
        };
        for (result, (write, ack)) in results.into_iter().zip(writes.by_ref()) {
            let _ = ack.send(written(&write, result));
        }
    }
    Answer {
        link: Link::Intact,
        script_lost,
        undone: None,
    }
}

/// Whether `reply` says that Redis does not have the script called (`NOSCRIPT`).
fn lacks_script(reply: &RedisResult<Value>) -> bool {
    let no_script = redis::ErrorKind::Server(redis::ServerErrorKind::NoScript);
    match reply {
        Ok(Value::ServerError(error)) => error.kind() == Some(redis::ServerErrorKind::NoScript),
        Err(error) => error.kind() == no_script,
        Ok(_) => false,
    }
}

/// The error of a write that was not done because Redis lost the changes script.
fn missing_script() -> StoreError {
    StoreError::CommitFailed(
        "Redis no longer has the changes script (SCRIPT FLUSH, or lost without this \
         connection breaking); not done, and loaded again for the next write"
            .to_owned(),
    )
}

/// Completes every ack of `group` with the error `error` makes.
fn fail(group: Group, error: impl Fn() -> StoreError) {
    for (_, ack) in group {
        let _ = ack.send(Err(error()));
    }
}
