//! The Redis store: one record shared by several server instances.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, PoisonError};
use std::time::Duration;

use futures_util::StreamExt;
use futures_util::stream::FuturesOrdered;
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisResult, Value};
use tokio::sync::{Mutex, mpsc, oneshot};

use crate::ack::AckSender;
use crate::history::SharedHistoryLimit;
use crate::log::{LogEntry, check_continues};
use crate::{
    Ack, AuditRecord, BoxFuture, Change, ChangeKind, ChangeLog, Delivery, DeliveryQuery,
    EventRecord, HistoryPage, HistoryRecord, LOG_RETENTION, Loaded, LogPosition, OutboxMessage,
    OutcomeRecord, RequestKind, RequestRecord, Store, StoreError, StoredRequest, Write, Written,
    now_ms,
};

/// A [`Store`] in Redis, shared by every server instance that opens it with the same URL
/// and prefix.
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
/// them, so neither does any acknowledgement.
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
/// `everysec`) for writes to survive a Redis restart.
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
#[derive(Debug, Clone)]
pub struct RedisStore {
    /// Queue of the writer task, which stops when every clone is dropped.
    jobs: mpsc::UnboundedSender<Job>,
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

/// Where a [`RedisStore`] keeps its keys: a Redis server (`redis://[USER:PASSWORD@]HOST:PORT[/DB]`;
/// this build speaks no TLS) and a key prefix, written together as one URL with an optional
/// `prefix` query parameter: `redis://127.0.0.1:6379/0?prefix=team-a`. The prefix defaults
/// to [`RedisStore::DEFAULT_PREFIX`]; servers that share requests use the same one, and
/// deployments that must not see each other's requests use different ones.
///
/// Shown (`Display`, `Debug`) without the URL's credentials, so it can be logged.
///
/// # Examples
///
/// ```
/// use askbus_store::RedisLocation;
///
/// let location: RedisLocation = "redis://:secret@10.0.0.5:6379/2?prefix=team-a".parse().unwrap();
/// assert_eq!(location.prefix(), "team-a");
/// assert_eq!(location.to_string(), "redis://***@10.0.0.5:6379/2 (keys under team-a:)");
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct RedisLocation {
    /// The URL without the prefix parameter, as the Redis client takes it.
    url: String,
    /// Prepended, with a `:`, to every key.
    prefix: String,
}

/// The change log reader's own connection.
#[derive(Debug)]
struct Follower {
    /// Used only for `XREAD BLOCK` (and `XINFO STREAM`).
    connection: MultiplexedConnection,
    /// Whether the next read must first check that the log has not gone back behind the
    /// reader's position (Redis lost its data: numbering starts again at 1, and a gap
    /// check alone would not see it). Set on a new connection: a restarted Redis is one.
    check_rewound: bool,
}

/// Key names under one prefix, and the one setting the scripts take from the store.
#[derive(Debug)]
struct Keys {
    /// Prepended, with a `:`, to every key and channel.
    prefix: String,
    /// How much a session's history keeps.
    history_limit: SharedHistoryLimit,
}

/// Work for the writer task.
enum Job {
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

/// Something the writer task sent on its connection (a group of writes, a query), running
/// until its answer is in; it tells whether the connection survived it.
type Sending = Pin<Box<dyn Future<Output = Link> + Send>>;

/// What became of the writer's connection, as a command's answer shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Link {
    /// Usable (the command may still have failed, for a reason of its own).
    Intact,
    /// Broken (Redis restarted or went away): the writer opens another.
    Lost,
}

impl Link {
    /// What `result` says of the connection it came over.
    fn after<T>(result: &Result<T, StoreError>) -> Self {
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

/// The schema version this build writes; `{prefix}:schema` holds the stored one.
///
/// - 1: change log entries as hash fields (`op`, `id`, the request's fields).
/// - 2: each change log entry is one `change` field, the change's JSON. The keys of
///   requests are as in 1; a version 1 prefix is upgraded by setting its version, because
///   no reader ever reads an entry older than the log's head when it opened (followers
///   start at the head, and a reader that falls behind loads the requests again). Servers
///   of version 1 must be stopped first: their entries are unreadable to version 2.
/// - 3: every resolved request is also in `resolved_at`, by the time it was resolved, for
///   [`Store::forget_resolved`]; the upgrade adds the requests resolved before it. Servers
///   of version 2 should be stopped first: the requests they resolve are never forgotten.
/// - 4: session histories (`hist:{session}`, `histories`) and the count of each session's
///   pending requests (`waiting`), which keeps a waiting session's history from being
///   forgotten; the upgrade counts the requests pending before it. Histories start empty.
///   Servers of version 3 should be stopped first: they write no history, and their
///   followers cannot read the agent steps of version 4 in the log.
/// - 5: histories are trimmed by bytes too, counted in `history_bytes`; a history of
///   version 4 is counted whole at its next record (no upgrade step). Servers of version 4
///   should be stopped first: they neither count nor trim by bytes.
/// - 6: a request's hash names who decided its outcome (`decided_by`), and a winning
///   resolution may append an entry to the audit log (`audit`, `audit:seq`, sealed in
///   `audit:seals`); no upgrade step (the log starts empty). Servers of version 5 should be
///   stopped first: their resolutions leave no audit entry, and the scripts' arguments
///   changed.
/// - 7: the outbox (`dlv:{message}\t{target}` hashes, `outbox:due`, `outbox:settled`,
///   `outbox:order`), written by the changes script; no upgrade step (the outbox starts
///   empty). Servers of version 6 should be stopped first: their resolutions add no
///   message to the outbox, so receivers would not hear of them.
const SCHEMA_VERSION: i64 = 7;

/// Sets the schema version unless a newer one is there; answers the version found (or
/// the one set, on a fresh prefix). KEYS: the schema key. ARGV: this build's version.
const CLAIM_SCHEMA: &str = r"
local found = tonumber(redis.call('GET', KEYS[1]) or '0')
if found < tonumber(ARGV[1]) then
  redis.call('SET', KEYS[1], ARGV[1])
  return tonumber(ARGV[1])
end
return found
";

/// Applies a run of changes in order, each atomically, and logs each that took effect as
/// the next change, and as the next record of its session's history: one script call per
/// run, so the Lua call's own cost (about as much as the commands of one change) is paid
/// once per group of writes, not once per write. A change that fails returns its error in
/// its place; the others go on.
///
/// A session's history is trimmed here too (not with `XADD`'s `MAXLEN`, which cannot
/// count bytes): once it is a batch over its limit of records or of bytes, its oldest
/// entries are deleted until it is within both, keeping its newest (see the `history`
/// module docs). Its bytes are counted in `history_bytes`; a history written before they
/// were (schema 4) is counted whole at its next record.
///
/// The outbox's writes are changes of this script too (they are not logged: they change no
/// request), so they keep the queue's order among the others. A delivery's hash key is its
/// member name (message id, tab, target) after the delivery prefix, made here. Its commands
/// that can fail on a key of the wrong type run before anything of the change is written.
///
/// KEYS: the change log, its counter, the `resolved_at` set, the `histories` set, the
/// `waiting` hash, the `history_bytes` hash, the audit stream, its counter, the outbox's
/// `due`, `settled` and `order` sets, then three keys per request change (insert:
/// request hash, pending set, calls hash; resolve: request hash, pending set, resolved
/// set). A session's history key is its name after the history prefix, made here (a
/// resolution learns its session from the request's hash).
/// ARGV: the log's length, the history key prefix, the time now, a history's records
/// limit and the count that makes it trimmed, its bytes limit and the count that makes it
/// trimmed, the delivery key prefix, then per change:
/// - insert: `i`, id, calls field (`''` for none), session, n, n hash field/value items, log
///   entry; answers 1 (inserted) or 0 (the id exists);
/// - resolve: `r`, id, kind, state, outcome, resolved_at, decided by (`-` for nobody, or
///   `+` and the JSON: a JSON may be any text, the empty one too), audit draft (`-` for
///   none, or `+` and the draft: appended to the audit stream as entry `0-<n>`, `n` from
///   its counter, if the resolution wins), log entry, then its outbox message: `-` for
///   none, or its number of targets n, id, created, payload and the n targets (added to
///   the outbox if the resolution wins); answers `resolved`, `not_found`, or the state it
///   already has. Only a pending request of the right kind changes, so exactly one of any
///   number of attempts, from any instance, is `resolved`;
/// - event: `e`, session, log entry; answers 1;
/// - enqueue: `q`, n, message id, created, payload, n targets: one pending delivery per
///   target, due at `created`, unless there is one already; answers 1;
/// - attempted: `a`, delivery member, the state after it, next due time (`''` when
///   settled), the attempt's time and JSON; a pending delivery takes them (and one more
///   attempt), a settled one stays as it is; answers `appended`, or `not_found`.
const APPLY: &str = r"
local results = {}
local key, arg = 12, 9
local records_limit, records_trimmed = tonumber(ARGV[4]), tonumber(ARGV[5])
local bytes_limit, bytes_trimmed = tonumber(ARGV[6]), tonumber(ARGV[7])
local function size(history, session, entry)
  if redis.call('HEXISTS', KEYS[6], session) == 1 then
    return redis.call('HINCRBY', KEYS[6], session, #entry)
  end
  local bytes = 0
  for _, item in ipairs(redis.call('XRANGE', history, '-', '+')) do
    bytes = bytes + #item[2][2]
  end
  redis.call('HSET', KEYS[6], session, bytes)
  return bytes
end
local function trim(history, session, records, bytes)
  local from, cut = '-', nil
  while records > 1 and (records > records_limit or bytes > bytes_limit) do
    local oldest = redis.call('XRANGE', history, from, '+', 'COUNT', 64)
    if #oldest == 0 then break end
    for _, item in ipairs(oldest) do
      if records <= 1 or (records <= records_limit and bytes <= bytes_limit) then break end
      cut = item[1]
      records = records - 1
      bytes = bytes - #item[2][2]
    end
    from = '(' .. cut
  end
  if cut then
    redis.call('XTRIM', history, 'MINID', '0-' .. (tonumber(string.sub(cut, 3)) + 1))
    redis.call('HSET', KEYS[6], session, bytes)
  end
end
local function log(session, entry)
  local change = '0-' .. redis.call('INCR', KEYS[2])
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], change, 'change', entry)
  local history = ARGV[2] .. session
  redis.call('XADD', history, change, 'change', entry)
  local records = redis.call('XLEN', history)
  local bytes = size(history, session, entry)
  if records > records_trimmed or bytes > bytes_trimmed then
    trim(history, session, records, bytes)
  end
  redis.call('ZADD', KEYS[4], ARGV[3], session)
end
local function insert(request, pending, calls, id, field, session, first, last, entry)
  if redis.call('EXISTS', request) == 1 then return 0 end
  redis.call('HSET', request, unpack(ARGV, first, last))
  redis.call('ZADD', pending, 0, id)
  if field ~= '' then redis.call('HSET', calls, field, id) end
  redis.call('HINCRBY', KEYS[5], session, 1)
  log(session, entry)
  return 1
end
-- Fails (on a key of the wrong type) before anything is written: the outbox's writes
-- below cannot fail after them.
local function outbox_ready()
  redis.call('ZCARD', KEYS[9])
  redis.call('ZCARD', KEYS[11])
end
local function enqueue(id, created, payload, first, last)
  outbox_ready()
  for i = first, last do
    local member = id .. '\t' .. ARGV[i]
    local delivery = ARGV[8] .. member
    if redis.call('EXISTS', delivery) == 0 then
      redis.call('ZADD', KEYS[9], created, member)
      redis.call('ZADD', KEYS[11], 0, member)
      redis.call('HSET', delivery, 'message', id, 'target', ARGV[i], 'payload', payload,
        'created', created, 'state', 'pending', 'attempts', 0, 'next', created)
    end
  end
  return 1
end
local function attempted(member, state, next_at, at, last)
  local delivery = ARGV[8] .. member
  local found = redis.call('HGET', delivery, 'state')
  if not found then return 'not_found' end
  -- A settled delivery stays settled (a sender whose lease ran out, late).
  if found ~= 'pending' then return 'appended' end
  if state == 'pending' then
    redis.call('ZADD', KEYS[9], next_at, member)
    redis.call('HSET', delivery, 'next', next_at)
  else
    redis.call('ZADD', KEYS[10], at, member)
    redis.call('ZREM', KEYS[9], member)
    redis.call('HDEL', delivery, 'next')
  end
  redis.call('HSET', delivery, 'state', state, 'last', last)
  redis.call('HINCRBY', delivery, 'attempts', 1)
  return 'appended'
end
local function resolve(request, pending, resolved, id, kind, state, outcome, at, by, audit,
    entry, message)
  local found = redis.call('HMGET', request, 'kind', 'state', 'session')
  if not found[1] or found[1] ~= kind then return 'not_found' end
  if found[2] ~= 'pending' then return found[2] end
  local targets = tonumber(ARGV[message])
  if targets then outbox_ready() end
  -- First: a script's writes are not undone when a later command fails, so an entry that
  -- cannot be appended must stop the resolution before anything of it is written.
  if string.sub(audit, 1, 1) == '+' then
    local seq = redis.call('INCR', KEYS[8])
    redis.call('XADD', KEYS[7], '0-' .. seq, 'draft', string.sub(audit, 2))
  end
  if targets then
    enqueue(ARGV[message + 1], ARGV[message + 2], ARGV[message + 3], message + 4,
      message + 3 + targets)
  end
  redis.call('HSET', request, 'state', state, 'outcome', outcome, 'resolved_at', at)
  if string.sub(by, 1, 1) == '+' then
    redis.call('HSET', request, 'decided_by', string.sub(by, 2))
  end
  redis.call('ZREM', pending, id)
  redis.call('ZADD', resolved, 0, id)
  redis.call('ZADD', KEYS[3], at, id)
  if redis.call('HINCRBY', KEYS[5], found[3], -1) <= 0 then
    redis.call('HDEL', KEYS[5], found[3])
  end
  log(found[3], entry)
  return 'resolved'
end
local function event(session, entry)
  log(session, entry)
  return 1
end
while arg <= #ARGV do
  local ok, result
  if ARGV[arg] == 'i' then
    local n = tonumber(ARGV[arg + 4])
    ok, result = pcall(insert, KEYS[key], KEYS[key + 1], KEYS[key + 2], ARGV[arg + 1],
      ARGV[arg + 2], ARGV[arg + 3], arg + 5, arg + 4 + n, ARGV[arg + 5 + n])
    arg = arg + 6 + n
    key = key + 3
  elseif ARGV[arg] == 'r' then
    ok, result = pcall(resolve, KEYS[key], KEYS[key + 1], KEYS[key + 2], ARGV[arg + 1],
      ARGV[arg + 2], ARGV[arg + 3], ARGV[arg + 4], ARGV[arg + 5], ARGV[arg + 6], ARGV[arg + 7],
      ARGV[arg + 8], arg + 9)
    local targets = tonumber(ARGV[arg + 9])
    arg = arg + 10 + (targets and 3 + targets or 0)
    key = key + 3
  elseif ARGV[arg] == 'q' then
    local targets = tonumber(ARGV[arg + 1])
    ok, result = pcall(enqueue, ARGV[arg + 2], ARGV[arg + 3], ARGV[arg + 4], arg + 5,
      arg + 4 + targets)
    arg = arg + 5 + targets
  elseif ARGV[arg] == 'a' then
    ok, result = pcall(attempted, ARGV[arg + 1], ARGV[arg + 2], ARGV[arg + 3], ARGV[arg + 4],
      ARGV[arg + 5])
    arg = arg + 6
  else
    ok, result = pcall(event, ARGV[arg + 1], ARGV[arg + 2])
    arg = arg + 3
  end
  if ok then
    results[#results + 1] = result
  else
    results[#results + 1] = { err = tostring(result) }
  end
end
return results
";

/// The script, with its SHA1 for `EVALSHA`: a call sends 40 bytes instead of the script,
/// and Redis looks the compiled script up instead of hashing its text each time.
static APPLY_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(APPLY));

/// Claims up to a number of due deliveries for a lease, the longest due first (ties by
/// member name: message id, then target): each is re-scored in `outbox:due` to the lease's
/// end, so no claimer, of any instance, finds it due again before then; answers the
/// claimed deliveries' hashes, then the members found due that are no pending delivery
/// (their hash gone or damaged), which are taken out of `outbox:due`.
///
/// KEYS: `outbox:due`. ARGV: the time now, the lease's end, the most to claim, the
/// delivery key prefix.
const CLAIM_DELIVERIES: &str = r"
local claimed, unreadable = {}, {}
local due = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[3])
for _, member in ipairs(due) do
  local delivery = ARGV[4] .. member
  if redis.pcall('HGET', delivery, 'state') == 'pending' then
    redis.call('ZADD', KEYS[1], ARGV[2], member)
    redis.call('HSET', delivery, 'next', ARGV[2])
    claimed[#claimed + 1] = redis.call('HGETALL', delivery)
  else
    redis.call('ZREM', KEYS[1], member)
    unreadable[#unreadable + 1] = member
  end
end
return { claimed, unreadable }
";

/// [`CLAIM_DELIVERIES`], sent by its SHA1 (and loaded when Redis does not have it).
static CLAIM_DELIVERIES_SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(CLAIM_DELIVERIES));

/// Deletes up to a number of settled deliveries whose last attempt was before a time, the
/// oldest first (ties by member name); answers how many.
///
/// KEYS: `outbox:settled`, `outbox:due`, `outbox:order`. ARGV: the time, the most to
/// delete, the delivery key prefix.
const FORGET_DELIVERIES: &str = r"
local settled = redis.call('ZRANGE', KEYS[1], '-inf', '(' .. ARGV[1], 'BYSCORE', 'LIMIT', 0,
  ARGV[2])
for _, member in ipairs(settled) do
  redis.call('DEL', ARGV[3] .. member)
  redis.call('ZREM', KEYS[1], member)
  redis.call('ZREM', KEYS[2], member)
  redis.call('ZREM', KEYS[3], member)
end
return #settled
";

/// [`FORGET_DELIVERIES`], sent by its SHA1 (and loaded when Redis does not have it).
static FORGET_DELIVERIES_SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(FORGET_DELIVERIES));

/// How much longer than its `BLOCK` a follower's read may take before it is given up
/// (and its connection dropped): a Redis that answers nothing is a broken connection.
const FOLLOW_SLACK: Duration = Duration::from_secs(5);

impl RedisLocation {
    /// The key prefix.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The URL with its credentials (`user:password@`) hidden.
    fn redacted(&self) -> String {
        Self::redact(&self.url)
    }

    /// `url` with its credentials (`user:password@`) hidden.
    fn redact(url: &str) -> String {
        match url.split_once("://") {
            Some((scheme, rest)) => {
                let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
                match rest[..authority_end].rfind('@') {
                    Some(at) => format!("{scheme}://***{}", &rest[at..]),
                    None => url.to_owned(),
                }
            }
            None => url.to_owned(),
        }
    }
}

impl std::str::FromStr for RedisLocation {
    type Err = StoreError;

    /// Reads `redis://…`, taking the `prefix` query parameter off.
    ///
    /// # Errors
    ///
    /// [`StoreError::UnsupportedUrl`] for another scheme (`rediss://` included: this build
    /// has no TLS) or an empty prefix; [`StoreError::Redis`] for a URL the Redis client
    /// cannot read.
    fn from_str(text: &str) -> Result<Self, StoreError> {
        let text = text.trim();
        if text.starts_with("rediss://") {
            return Err(StoreError::UnsupportedUrl(format!(
                "{} (TLS is not built in: reach Redis with redis:// on a private network or \
                 through a TLS tunnel)",
                Self::redact(text)
            )));
        }
        if !text.starts_with("redis://") {
            return Err(StoreError::UnsupportedUrl(text.to_owned()));
        }
        let (base, query) = text.split_once('?').unwrap_or((text, ""));
        let mut prefix = None;
        let mut kept = Vec::new();
        for pair in query.split('&').filter(|pair| !pair.is_empty()) {
            match pair.strip_prefix("prefix=") {
                Some(value) => prefix = Some(value.to_owned()),
                None => kept.push(pair),
            }
        }
        let prefix = prefix.unwrap_or_else(|| RedisStore::DEFAULT_PREFIX.to_owned());
        if prefix.is_empty() || prefix.contains(char::is_whitespace) {
            return Err(StoreError::UnsupportedUrl(format!(
                "{text} (the prefix must be a non-empty word)"
            )));
        }
        let url = if kept.is_empty() {
            base.to_owned()
        } else {
            format!("{base}?{}", kept.join("&"))
        };
        // Parsed, not connected: a URL the client cannot use is refused up front.
        redis::Client::open(url.as_str())?;
        Ok(Self { url, prefix })
    }
}

impl std::fmt::Display for RedisLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (keys under {}:)", self.redacted(), self.prefix)
    }
}

impl std::fmt::Debug for RedisLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLocation")
            .field("url", &self.redacted())
            .field("prefix", &self.prefix)
            .finish()
    }
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
        // The upgrades are done before the version says so, so that an upgrade cut short
        // is done again by the next opener (each is idempotent).
        let stored: Option<i64> = redis::cmd("GET")
            .arg(keys.schema())
            .query_async(&mut connection)
            .await?;
        if stored.is_some_and(|version| version < 3) {
            add_resolved_times(&mut connection, &keys).await?;
        }
        if stored.is_some_and(|version| version < 4) {
            count_waiting_sessions(&mut connection, &keys).await?;
        }
        // A fresh or older prefix gets this version (see `SCHEMA_VERSION` for the
        // upgrades); a newer one keeps its own, and this build refuses it.
        let version: i64 = redis::Script::new(CLAIM_SCHEMA)
            .key(keys.schema())
            .arg(SCHEMA_VERSION)
            .invoke_async(&mut connection)
            .await?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::NewerSchema {
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        let (jobs, queue) = mpsc::unbounded_channel();
        tokio::spawn(run_writer(
            Writer::new(client.clone(), connection, Arc::clone(&keys)),
            queue,
        ));
        Ok(Self {
            jobs,
            keys,
            client,
            follower: Arc::new(Mutex::new(None)),
            reader: Arc::new(Mutex::new(None)),
        })
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

impl Store for RedisStore {
    fn write(&self, write: Write) -> Ack {
        let (sender, ack) = Ack::channel();
        match self.jobs.send(Job::Write(write, sender)) {
            Ok(()) => ack,
            Err(_) => Ack::ready(Err(StoreError::Closed)),
        }
    }

    fn requests(&self, kind: RequestKind, retain_resolved: usize) -> BoxFuture<'_, Loaded> {
        self.read(move |mut connection, keys| async move {
            let pending_ids: Vec<String> = redis::cmd("ZRANGE")
                .arg(keys.pending(kind))
                .arg("-")
                .arg("+")
                .arg("BYLEX")
                .query_async(&mut connection)
                .await?;
            let mut resolved_ids: Vec<String> = if retain_resolved == 0 {
                Vec::new()
            } else {
                redis::cmd("ZRANGE")
                    .arg(keys.resolved(kind))
                    .arg("+")
                    .arg("-")
                    .arg("BYLEX")
                    .arg("REV")
                    .arg("LIMIT")
                    .arg(0)
                    .arg(retain_resolved)
                    .query_async(&mut connection)
                    .await?
            };
            resolved_ids.reverse();
            Ok(Loaded {
                pending: fetch_requests(&mut connection, &keys, &pending_ids).await?,
                resolved: fetch_requests(&mut connection, &keys, &resolved_ids).await?,
            })
        })
    }

    fn find_by_call<'a>(
        &'a self,
        kind: RequestKind,
        session_id: &'a str,
        call_id: &'a str,
    ) -> BoxFuture<'a, Option<StoredRequest>> {
        let field = call_field(session_id, call_id);
        self.read(move |mut connection, keys| {
            let field = field.clone();
            async move {
                let id: Option<String> = redis::cmd("HGET")
                    .arg(keys.calls(kind))
                    .arg(field)
                    .query_async(&mut connection)
                    .await?;
                let Some(id) = id else { return Ok(None) };
                Ok(fetch_requests(&mut connection, &keys, &[id])
                    .await?
                    .into_iter()
                    .next())
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Option<StoredRequest>> {
        let id = id.to_owned();
        self.read(move |mut connection, keys| {
            let id = id.clone();
            async move {
                Ok(fetch_requests(&mut connection, &keys, &[id])
                    .await?
                    .into_iter()
                    .next())
            }
        })
    }

    fn recent_events(&self, limit: usize) -> BoxFuture<'_, Vec<EventRecord>> {
        self.read(move |mut connection, keys| async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let entries: Vec<(String, HashMap<String, String>)> = redis::cmd("XREVRANGE")
                .arg(keys.events())
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(limit)
                .query_async(&mut connection)
                .await?;
            entries
                .into_iter()
                .rev()
                .map(|(_, mut fields)| {
                    let mut take = |name: &str| {
                        fields
                            .remove(name)
                            .ok_or_else(|| StoreError::Corrupt(format!("event without {name}")))
                    };
                    Ok(EventRecord {
                        id: take("id")?,
                        event_type: take("type")?,
                        properties: take("properties")?,
                        session_id: fields.remove("session"),
                    })
                })
                .collect()
        })
    }

    fn forget_resolved(&self, resolved_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.read(move |mut connection, keys| async move {
            forget_resolved(&mut connection, &keys, resolved_before_ms, limit).await
        })
    }

    fn history<'a>(
        &'a self,
        session_id: &'a str,
        page: HistoryPage,
        limit: usize,
    ) -> BoxFuture<'a, Vec<HistoryRecord>> {
        let key = self.keys.history(session_id);
        Box::pin(async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let limit = i64::try_from(limit).unwrap_or(i64::MAX);
            self.written_before().await?;
            let mut connection = self.reader().await?;
            let (command, start, end) = match page {
                HistoryPage::From(from) => ("XRANGE", format!("0-{from}"), "+"),
                HistoryPage::Before(before) => ("XREVRANGE", format!("(0-{before}"), "-"),
            };
            let mut command = redis::cmd(command);
            command.arg(key).arg(start).arg(end).arg("COUNT").arg(limit);
            let entries: Vec<(String, Vec<String>)> =
                match command.query_async(&mut connection).await {
                    Ok(entries) => entries,
                    Err(error) => {
                        if error.is_unrecoverable_error() {
                            self.reader.lock().await.take();
                        }
                        return Err(error.into());
                    }
                };
            let mut records = entries
                .into_iter()
                .map(|(id, fields)| {
                    let change = read_change(&id, fields)?;
                    Ok(HistoryRecord {
                        position: change.position.0,
                        entry: change.kind,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            if let HistoryPage::Before(_) = page {
                records.reverse();
            }
            Ok(records)
        })
    }

    fn forget_quiet_histories(&self, quiet_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.read(move |mut connection, keys| async move {
            forget_quiet_histories(&mut connection, &keys, quiet_before_ms, limit).await
        })
    }

    fn audit_entries(&self, after_seq: u64, limit: usize) -> BoxFuture<'_, Vec<AuditRecord>> {
        self.read(move |mut connection, keys| async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let entries: Vec<(String, Vec<String>)> = redis::cmd("XRANGE")
                .arg(keys.audit())
                .arg(format!("(0-{after_seq}"))
                .arg("+")
                .arg("COUNT")
                .arg(i64::try_from(limit).unwrap_or(i64::MAX))
                .query_async(&mut connection)
                .await?;
            if entries.is_empty() {
                return Ok(Vec::new());
            }
            let mut seals = redis::cmd("HMGET");
            seals.arg(keys.audit_seals());
            let mut records = Vec::with_capacity(entries.len());
            for (id, fields) in entries {
                let seq = id
                    .strip_prefix("0-")
                    .and_then(|number| number.parse::<u64>().ok())
                    .ok_or_else(|| StoreError::Corrupt(format!("{id:?} is no audit entry id")))?;
                let draft = match <[String; 2]>::try_from(fields) {
                    Ok([name, draft]) if name == "draft" => draft,
                    _ => {
                        return Err(StoreError::Corrupt(format!(
                            "audit entry {seq} has no draft"
                        )));
                    }
                };
                seals.arg(seq);
                records.push(AuditRecord {
                    seq,
                    draft,
                    seal: None,
                });
            }
            let found: Vec<Option<String>> = seals.query_async(&mut connection).await?;
            for (record, seal) in records.iter_mut().zip(found) {
                record.seal = seal;
            }
            Ok(records)
        })
    }

    fn seal_audit(&self, seals: Vec<(u64, String)>) -> BoxFuture<'_, ()> {
        let seals = Arc::new(seals);
        self.read(move |mut connection, keys| {
            let seals = Arc::clone(&seals);
            async move {
                if seals.is_empty() {
                    return Ok(());
                }
                // `HSETNX`: the first seal of an entry stays, whichever instance set it.
                let mut pipeline = redis::pipe();
                for (seq, seal) in seals.iter() {
                    pipeline
                        .cmd("HSETNX")
                        .arg(keys.audit_seals())
                        .arg(seq)
                        .arg(seal)
                        .ignore();
                }
                pipeline.query_async::<()>(&mut connection).await?;
                Ok(())
            }
        })
    }

    fn claim_deliveries(
        &self,
        now_ms: u64,
        lease_ms: u64,
        limit: usize,
    ) -> BoxFuture<'_, Vec<Delivery>> {
        self.read(move |mut connection, keys| async move {
            if limit == 0 {
                return Ok(Vec::new());
            }
            let (claimed, unreadable): (Vec<HashMap<String, String>>, Vec<String>) =
                CLAIM_DELIVERIES_SCRIPT
                    .key(keys.outbox_due())
                    .arg(now_ms)
                    .arg(now_ms.saturating_add(lease_ms))
                    .arg(i64::try_from(limit).unwrap_or(i64::MAX))
                    .arg(keys.delivery_prefix())
                    .invoke_async(&mut connection)
                    .await?;
            for member in unreadable {
                tracing::warn!(
                    "outbox entry {member:?} is due but is no pending delivery (its record \
                     is gone or damaged): taken off the due ones"
                );
            }
            // Leased all the same, so it does not hold up the ones behind it: it is passed
            // over once a lease, with its reason, until it is repaired.
            Ok(claimed
                .into_iter()
                .filter_map(|fields| {
                    read_delivery(fields)
                        .inspect_err(|error| {
                            tracing::warn!("a claimed delivery is passed over: {error}");
                        })
                        .ok()
                })
                .collect())
        })
    }

    fn deliveries(&self, query: DeliveryQuery) -> BoxFuture<'_, Vec<Delivery>> {
        let query = Arc::new(query);
        self.read(move |mut connection, keys| {
            let query = Arc::clone(&query);
            async move { deliveries(&mut connection, &keys, &query).await }
        })
    }

    fn pending_deliveries(&self) -> BoxFuture<'_, u64> {
        self.read(|mut connection, keys| async move {
            Ok(redis::cmd("ZCARD")
                .arg(keys.outbox_due())
                .query_async(&mut connection)
                .await?)
        })
    }

    fn forget_deliveries(&self, settled_before_ms: u64, limit: usize) -> BoxFuture<'_, usize> {
        self.read(move |mut connection, keys| async move {
            if limit == 0 {
                return Ok(0);
            }
            Ok(FORGET_DELIVERIES_SCRIPT
                .key(keys.outbox_settled())
                .key(keys.outbox_due())
                .key(keys.outbox_order())
                .arg(settled_before_ms)
                .arg(i64::try_from(limit).unwrap_or(i64::MAX))
                .arg(keys.delivery_prefix())
                .invoke_async(&mut connection)
                .await?)
        })
    }

    fn change_log(&self) -> Option<&dyn ChangeLog> {
        Some(self)
    }
}

impl ChangeLog for RedisStore {
    fn head(&self) -> BoxFuture<'_, LogPosition> {
        self.read(|mut connection, keys| async move {
            logged(&mut connection, &keys.log_counter()).await
        })
    }

    fn read_after(
        &self,
        after: LogPosition,
        limit: usize,
        wait: Duration,
    ) -> BoxFuture<'_, Vec<Change>> {
        Box::pin(async move {
            let mut slot = self.follower.lock().await;
            // Taken out for the read and put back only after a good one: a broken
            // connection (or a read given up on) is dropped, and the next read opens a new
            // one and checks the log again.
            let mut follower = match slot.take() {
                Some(follower) => follower,
                None => Follower::open(&self.client).await?,
            };
            let changes = tokio::time::timeout(
                wait + FOLLOW_SLACK,
                follower.read(&self.keys, after, limit, wait),
            )
            .await
            .map_err(|_| StoreError::Unresponsive)??;
            *slot = Some(follower);
            Ok(changes)
        })
    }
}

impl Follower {
    async fn open(client: &redis::Client) -> Result<Self, StoreError> {
        // No response timeout of the client's own: a blocking read is meant to wait, and
        // `read_after` bounds it.
        let config = AsyncConnectionConfig::new().set_response_timeout(None);
        Ok(Self {
            connection: client
                .get_multiplexed_async_connection_with_config(&config)
                .await?,
            check_rewound: true,
        })
    }

    /// Up to `limit` changes after `after`, waiting up to `wait`.
    async fn read(
        &mut self,
        keys: &Keys,
        after: LogPosition,
        limit: usize,
        wait: Duration,
    ) -> Result<Vec<Change>, StoreError> {
        if self.check_rewound {
            if logged(&mut self.connection, &keys.log_counter()).await? < after {
                return Err(StoreError::LogTrimmed { after });
            }
            self.check_rewound = false;
        }
        let block_ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
        type Entries = Vec<(String, Vec<String>)>;
        let reply: Option<Vec<(String, Entries)>> = redis::cmd("XREAD")
            .arg("COUNT")
            .arg(limit)
            .arg("BLOCK")
            .arg(block_ms)
            .arg("STREAMS")
            .arg(keys.log())
            .arg(format!("0-{}", after.0))
            .query_async(&mut self.connection)
            .await?;
        let changes = reply
            .into_iter()
            .flatten()
            .flat_map(|(_, entries)| entries)
            .map(|(id, fields)| read_change(&id, fields))
            .collect::<Result<Vec<_>, _>>()?;
        check_continues(after, &changes)?;
        Ok(changes)
    }
}

/// The upgrade to schema version 3: puts every resolved request in `resolved_at`, by the
/// time it was resolved, a batch at a time.
async fn add_resolved_times(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
) -> Result<(), StoreError> {
    for kind in RequestKind::ALL {
        let resolved = keys.resolved(kind);
        each_request_field(
            connection,
            keys,
            &resolved,
            "resolved_at",
            |ids, times: Vec<Option<u64>>| {
                let mut adds = redis::pipe();
                let mut gone = 0;
                for (id, time) in ids.iter().zip(times) {
                    match time {
                        Some(time) => adds.zadd(keys.resolved_at(), id, time).ignore(),
                        // Its request was deleted by hand (or evicted): nothing to keep.
                        None => {
                            gone += 1;
                            adds.zrem(&resolved, id).ignore()
                        }
                    };
                }
                (adds, gone)
            },
        )
        .await?;
    }
    Ok(())
}

/// The upgrade to schema version 4: counts every session's pending requests into
/// `waiting`, a batch at a time (from scratch, so an upgrade cut short and done again
/// counts each request once).
async fn count_waiting_sessions(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
) -> Result<(), StoreError> {
    redis::cmd("DEL")
        .arg(keys.waiting())
        .query_async::<()>(&mut *connection)
        .await?;
    for kind in RequestKind::ALL {
        let pending = keys.pending(kind);
        each_request_field(
            connection,
            keys,
            &pending,
            "session",
            |_, sessions: Vec<Option<String>>| {
                let mut counts = redis::pipe();
                for session in sessions.into_iter().flatten() {
                    counts.hincr(keys.waiting(), session, 1).ignore();
                }
                (counts, 0)
            },
        )
        .await?;
    }
    Ok(())
}

/// Reads `field` of the request of every id in the sorted set `set`, a thousand at a time,
/// and runs the pipeline `batch` makes of each thousand; `batch` also answers how many of
/// them it takes out of `set`, so the next thousand starts where they end.
async fn each_request_field<T: redis::FromRedisValue>(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    set: &str,
    field: &str,
    mut batch: impl FnMut(&[String], Vec<Option<T>>) -> (redis::Pipeline, isize),
) -> Result<(), StoreError> {
    const BATCH: isize = 1000;
    let mut start = 0;
    loop {
        let ids: Vec<String> = redis::cmd("ZRANGE")
            .arg(set)
            .arg(start)
            .arg(start + BATCH - 1)
            .query_async(&mut *connection)
            .await?;
        if ids.is_empty() {
            return Ok(());
        }
        let mut reads = redis::pipe();
        for id in &ids {
            reads.cmd("HGET").arg(keys.request(id)).arg(field);
        }
        let values: Vec<Option<T>> = reads.query_async(&mut *connection).await?;
        let (writes, removed) = batch(&ids, values);
        writes.query_async::<()>(&mut *connection).await?;
        start += BATCH - removed;
    }
}

/// Deletes the histories of up to `limit` quiet sessions (see
/// [`Store::forget_quiet_histories`]): the candidates come from `histories` by the time of
/// their newest record, a page at a time, and one script per page deletes those still
/// quiet and not waiting; a page's waiting sessions are passed over for the next page.
async fn forget_quiet_histories(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    before_ms: u64,
    limit: usize,
) -> Result<usize, StoreError> {
    let mut forgotten = 0;
    let mut skipped = 0;
    while forgotten < limit {
        let page = limit - forgotten;
        let sessions: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys.histories())
            .arg("-inf")
            .arg(format!("({before_ms}"))
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(skipped)
            .arg(page)
            .query_async(&mut *connection)
            .await?;
        if sessions.is_empty() {
            break;
        }
        let mut script = FORGET_HISTORIES_SCRIPT.key(keys.histories());
        script
            .key(keys.waiting())
            .key(keys.history_bytes())
            .arg(before_ms);
        for session in &sessions {
            script.key(keys.history(session)).arg(session);
        }
        let deleted: usize = script.invoke_async(&mut *connection).await?;
        forgotten += deleted;
        skipped += sessions.len() - deleted;
        if sessions.len() < page {
            break;
        }
    }
    Ok(forgotten)
}

/// Deletes the histories of sessions still quiet (newest record before ARGV[1]) with no
/// pending request; answers how many.
///
/// KEYS: `histories`, `waiting`, `history_bytes`, then each session's history. ARGV: the
/// time, then each session.
const FORGET_HISTORIES: &str = r"
local forgotten = 0
for i = 2, #ARGV do
  local session = ARGV[i]
  local newest = tonumber(redis.call('ZSCORE', KEYS[1], session) or ARGV[1])
  if newest < tonumber(ARGV[1]) and not redis.call('HGET', KEYS[2], session) then
    redis.call('DEL', KEYS[i + 2])
    redis.call('ZREM', KEYS[1], session)
    redis.call('HDEL', KEYS[3], session)
    forgotten = forgotten + 1
  end
end
return forgotten
";

/// [`FORGET_HISTORIES`], sent by its SHA1 (and loaded when Redis does not have it).
static FORGET_HISTORIES_SCRIPT: LazyLock<redis::Script> =
    LazyLock::new(|| redis::Script::new(FORGET_HISTORIES));

/// Deletes up to `limit` of the requests resolved before `before_ms`, the longest resolved
/// first (see [`Store::forget_resolved`]): the ids come from `resolved_at`, each request's
/// kind and tool call from its hash, and one script deletes them all.
async fn forget_resolved(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    before_ms: u64,
    limit: usize,
) -> Result<usize, StoreError> {
    let ids: Vec<String> = redis::cmd("ZRANGE")
        .arg(keys.resolved_at())
        .arg("-inf")
        .arg(format!("({before_ms}"))
        .arg("BYSCORE")
        .arg("LIMIT")
        .arg(0)
        .arg(i64::try_from(limit).unwrap_or(i64::MAX))
        .query_async(&mut *connection)
        .await?;
    if ids.is_empty() {
        return Ok(0);
    }
    let mut reads = redis::pipe();
    for id in &ids {
        reads
            .cmd("HMGET")
            .arg(keys.request(id))
            .arg("kind")
            .arg("session")
            .arg("call");
    }
    let found: Vec<(Option<String>, Option<String>, Option<String>)> =
        reads.query_async(&mut *connection).await?;
    let mut script = FORGET_SCRIPT.key(keys.resolved_at());
    for (id, (kind, session, call)) in ids.iter().zip(found) {
        // A request whose hash is gone is only taken out of `resolved_at`.
        let kind = kind
            .and_then(|kind| kind.parse().ok())
            .unwrap_or(RequestKind::Question);
        let field = session
            .zip(call)
            .map(|(session, call)| call_field(&session, &call))
            .unwrap_or_default();
        script
            .key(keys.request(id))
            .key(keys.resolved(kind))
            .key(keys.calls(kind))
            .arg(id)
            .arg(field);
    }
    Ok(script.invoke_async(&mut *connection).await?)
}

/// Deletes resolved requests: the hash, its place in the resolved set, its tool call's
/// entry (unless the call has asked again since), and its place in `resolved_at`; answers
/// how many it took out of `resolved_at` (a sweep running beside another finds some gone).
/// A request still pending is left alone.
///
/// KEYS: `resolved_at`, then per request its hash, resolved set and calls hash. ARGV: per
/// request its id and calls field (`''` for none).
const FORGET: &str = r"
local forgotten = 0
for i = 1, #ARGV, 2 do
  local id, field = ARGV[i], ARGV[i + 1]
  local key = 2 + 3 * (i - 1) / 2
  if redis.call('HGET', KEYS[key], 'state') ~= 'pending' then
    redis.call('DEL', KEYS[key])
    redis.call('ZREM', KEYS[key + 1], id)
    if field ~= '' and redis.call('HGET', KEYS[key + 2], field) == id then
      redis.call('HDEL', KEYS[key + 2], field)
    end
  end
  forgotten = forgotten + redis.call('ZREM', KEYS[1], id)
end
return forgotten
";

/// [`FORGET`], sent by its SHA1 (and loaded when Redis does not have it).
static FORGET_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(FORGET));

/// The deliveries `query` names (see [`Store::deliveries`]): members of `outbox:order` from
/// the newest down, a batch at a time, their hashes read and filtered by state, until the
/// page is full. A member whose hash is gone (forgotten meanwhile) is skipped.
async fn deliveries(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    query: &DeliveryQuery,
) -> Result<Vec<Delivery>, StoreError> {
    let mut page = Vec::new();
    if query.limit == 0 {
        return Ok(page);
    }
    // Without a state to match, every member read is kept: read no more than the page.
    let batch = if query.state.is_some() {
        query.limit.clamp(100, 1000)
    } else {
        query.limit.min(1000)
    };
    // A member is its message id and a tab then its target: below `before` in lexical
    // order exactly when its message id is (no message id holds a tab).
    let mut below = query
        .before
        .as_ref()
        .map_or_else(|| "+".to_owned(), |before| format!("({before}"));
    loop {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys.outbox_order())
            .arg(&below)
            .arg("-")
            .arg("BYLEX")
            .arg("REV")
            .arg("LIMIT")
            .arg(0)
            .arg(batch)
            .query_async(&mut *connection)
            .await?;
        let Some(last) = members.last() else { break };
        below = format!("({last}");
        let mut reads = redis::pipe();
        for member in &members {
            reads.cmd("HGETALL").arg(keys.delivery(member));
        }
        let hashes: Vec<HashMap<String, String>> = reads.query_async(&mut *connection).await?;
        for fields in hashes.into_iter().filter(|fields| !fields.is_empty()) {
            let delivery = read_delivery(fields)?;
            if query.state.is_none_or(|state| delivery.state == state) {
                page.push(delivery);
                if page.len() == query.limit {
                    break;
                }
            }
        }
        if page.len() == query.limit || members.len() < batch {
            break;
        }
    }
    // Newest message first, a message's deliveries by target.
    page.sort_by(|a, b| {
        b.message_id
            .cmp(&a.message_id)
            .then_with(|| a.target.cmp(&b.target))
    });
    Ok(page)
}

/// A delivery's hash back as a delivery.
fn read_delivery(mut fields: HashMap<String, String>) -> Result<Delivery, StoreError> {
    let message_id = fields.remove("message").unwrap_or_default();
    let target = fields.remove("target").unwrap_or_default();
    let what = || format!("the delivery of {message_id:?} to {target:?}");
    let mut take = |name: &str| {
        fields
            .remove(name)
            .ok_or_else(|| StoreError::Corrupt(format!("{} has no {name}", what())))
    };
    let payload = take("payload")?;
    let created = take("created")?;
    let state = take("state")?;
    let attempts = take("attempts")?;
    let next = fields.remove("next");
    let last = fields.remove("last");
    let number = |text: &str| {
        text.parse::<u64>()
            .map_err(|_| StoreError::Corrupt(format!("{}: {text:?} is not a number", what())))
    };
    if message_id.is_empty() {
        return Err(StoreError::Corrupt(format!("{} names no message", what())));
    }
    let state = state.parse()?;
    Ok(Delivery {
        payload,
        created_at_ms: number(&created)?,
        state,
        attempts: u32::try_from(number(&attempts)?)
            .map_err(|_| StoreError::Corrupt(format!("{}: too many attempts", what())))?,
        next_attempt_ms: next.as_deref().map(number).transpose()?,
        last_attempt: last
            .map(|json| {
                serde_json::from_str(&json)
                    .map_err(|error| StoreError::Corrupt(format!("{}: {error}", what())))
            })
            .transpose()?,
        message_id,
        target,
    })
}

/// The name of a delivery in the outbox's sets: its message id, a tab, its target. Message
/// ids hold no tab, so the names sort as the message ids do, then as the targets.
fn delivery_member(message_id: &str, target: &str) -> String {
    format!("{message_id}\t{target}")
}

/// The number of the last change logged (the change counter), `START` before any.
async fn logged(
    connection: &mut MultiplexedConnection,
    counter: &str,
) -> Result<LogPosition, StoreError> {
    let count: Option<u64> = redis::cmd("GET")
        .arg(counter)
        .query_async(connection)
        .await?;
    Ok(LogPosition(count.unwrap_or(0)))
}
/// A change log entry back as a change: its position from the entry id, what changed from
/// its one `change` field. An entry that cannot be read is a change nobody can apply
/// ([`ChangeKind::Unreadable`]), not an error: a reader must be able to go past it.
fn read_change(id: &str, fields: Vec<String>) -> Result<Change, StoreError> {
    let position = id
        .strip_prefix("0-")
        .and_then(|number| number.parse().ok())
        .map(LogPosition)
        .ok_or_else(|| StoreError::Corrupt(format!("{id:?} is not a change log entry id")))?;
    let kind = match fields.as_slice() {
        [name, entry] if name == "change" => ChangeKind::read(entry),
        other => ChangeKind::Unreadable(format!("unexpected fields {other:?}")),
    };
    Ok(Change { position, kind })
}

impl Keys {
    fn schema(&self) -> String {
        format!("{}:schema", self.prefix)
    }

    fn request(&self, id: &str) -> String {
        format!("{}:req:{id}", self.prefix)
    }

    fn pending(&self, kind: RequestKind) -> String {
        format!("{}:pending:{}", self.prefix, kind.as_str())
    }

    fn resolved(&self, kind: RequestKind) -> String {
        format!("{}:resolved:{}", self.prefix, kind.as_str())
    }

    fn resolved_at(&self) -> String {
        format!("{}:resolved_at", self.prefix)
    }

    fn calls(&self, kind: RequestKind) -> String {
        format!("{}:calls:{}", self.prefix, kind.as_str())
    }

    fn events(&self) -> String {
        format!("{}:events", self.prefix)
    }

    fn log(&self) -> String {
        format!("{}:log", self.prefix)
    }

    fn log_counter(&self) -> String {
        format!("{}:log:seq", self.prefix)
    }

    /// What a session's history key is named after: the session id follows.
    fn history_prefix(&self) -> String {
        format!("{}:hist:", self.prefix)
    }

    fn history(&self, session_id: &str) -> String {
        format!("{}:hist:{session_id}", self.prefix)
    }

    fn histories(&self) -> String {
        format!("{}:histories", self.prefix)
    }

    fn waiting(&self) -> String {
        format!("{}:waiting", self.prefix)
    }

    fn history_bytes(&self) -> String {
        format!("{}:history_bytes", self.prefix)
    }

    fn audit(&self) -> String {
        format!("{}:audit", self.prefix)
    }

    fn audit_counter(&self) -> String {
        format!("{}:audit:seq", self.prefix)
    }

    fn audit_seals(&self) -> String {
        format!("{}:audit:seals", self.prefix)
    }

    fn outbox_due(&self) -> String {
        format!("{}:outbox:due", self.prefix)
    }

    fn outbox_settled(&self) -> String {
        format!("{}:outbox:settled", self.prefix)
    }

    fn outbox_order(&self) -> String {
        format!("{}:outbox:order", self.prefix)
    }

    /// What a delivery's hash key is named after: its member name follows (see
    /// [`delivery_member`]).
    fn delivery_prefix(&self) -> String {
        format!("{}:dlv:", self.prefix)
    }

    fn delivery(&self, member: &str) -> String {
        format!("{}:dlv:{member}", self.prefix)
    }
}

/// An optional text as one script argument: `-` for `None`, `+` and the text for `Some`, so
/// that every text, the empty one too, is told apart from none.
fn optional_arg(text: Option<&str>) -> String {
    text.map_or_else(|| "-".to_owned(), |text| format!("+{text}"))
}

/// The `calls:{kind}` field of a tool call: JSON, so no session or call id can collide.
fn call_field(session_id: &str, call_id: &str) -> String {
    serde_json::json!([session_id, call_id]).to_string()
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
async fn run_writer(mut writer: Writer, mut queue: mpsc::UnboundedReceiver<Job>) {
    loop {
        tokio::select! {
            biased;
            Some(link) = writer.in_flight.next(), if !writer.in_flight.is_empty() => {
                writer.answered(link);
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
    while writer.in_flight.next().await.is_some() {}
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
/// [`StoreError::Unresponsive`]: they may have been done); TCP notices it in the end. A restarted Redis may have lost its script
/// cache; every group loads the script it calls (see [`pipeline_for`]).
struct Writer {
    /// Opens new connections.
    client: redis::Client,
    /// Key names.
    keys: Arc<Keys>,
    /// The connection writes go on; `None` once it broke, until a new one is open.
    connection: Option<MultiplexedConnection>,
    /// When a new connection may be tried, and why the last attempt failed.
    reconnect: Reconnect,
    /// Groups sent and not yet answered, in the order they were sent.
    in_flight: FuturesOrdered<Sending>,
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

/// Whether a group or read refused by a broken connection may be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Attempt {
    /// The first: a broken connection is replaced and it is tried again.
    First,
    /// The last: whatever happens is its answer.
    Last,
}

impl Writer {
    fn new(client: redis::Client, connection: MultiplexedConnection, keys: Arc<Keys>) -> Self {
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
            sent: 0,
            answered: 0,
            barriers: VecDeque::new(),
        }
    }

    /// Takes note of the answer to the oldest group in flight, and tells the barriers that
    /// waited for it.
    fn answered(&mut self, link: Link) {
        self.note(link);
        self.answered += 1;
        while let Some((_, barrier)) = self
            .barriers
            .pop_front_if(|(after, _)| *after <= self.answered)
        {
            // A reader that stopped waiting is not an error.
            let _ = barrier.send(());
        }
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
        while let Some(link) = self.in_flight.next().await {
            self.answered(link);
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
    async fn start(&mut self, group: Vec<(Write, AckSender)>) {
        if group.is_empty() {
            return;
        }
        let (pipeline, answers_for) = pipeline_for(&self.keys, &group);
        let pipeline = Arc::new(pipeline);
        let mut attempt = Attempt::First;
        loop {
            let mut connection = match self.connection().await {
                Ok(connection) => connection,
                Err(error) => return fail(group, || StoreError::Redis(error.clone())),
            };
            let sending = Arc::clone(&pipeline);
            let mut replies = Box::pin(async move {
                sending
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
                    let link = complete(group, &answers_for, replies);
                    return self.note(link);
                }
                std::task::Poll::Pending => {
                    self.sent += 1;
                    return self.in_flight.push_back(Box::pin(async move {
                        complete(group, &answers_for, replies.await)
                    }));
                }
            }
        }
    }

    /// Runs a read on the connection, and once more on a new one if the connection broke.
    async fn run(&mut self, mut query: ReadJob) {
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
async fn connect(client: &redis::Client) -> RedisResult<MultiplexedConnection> {
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

/// The pipeline that applies `group`, and how many of the group's writes each of its
/// commands answers for.
///
/// Consecutive changes (requests and session events) go into one call of [`APPLY`], appends
/// to the bus's record are `XADD`s in their places, so the pipeline keeps the queue's order. A group that calls the script
/// loads it first (a lookup when Redis has it): a Redis that restarted and lost its script
/// cache then never fails an `EVALSHA` with NOSCRIPT, and no write is retried out of order.
fn pipeline_for(keys: &Keys, group: &[(Write, AckSender)]) -> (redis::Pipeline, Vec<usize>) {
    let mut commands: Vec<Command<'_>> = Vec::new();
    for (write, _) in group {
        match (write, commands.last_mut()) {
            (Write::Append(event), _) => commands.push(Command::Append(event)),
            (change, Some(Command::Changes(run))) => run.push(change),
            (change, _) => commands.push(Command::Changes(vec![change])),
        }
    }
    let mut pipeline = redis::pipe();
    pipeline.ignore_errors();
    if commands
        .iter()
        .any(|command| matches!(command, Command::Changes(_)))
    {
        pipeline.cmd("SCRIPT").arg("LOAD").arg(APPLY).ignore();
    }
    for command in &commands {
        match command {
            Command::Changes(run) => add_changes(&mut pipeline, keys, run),
            Command::Append(event) => add_append(&mut pipeline, keys, event),
        }
    }
    let answers_for = commands
        .iter()
        .map(|command| match command {
            Command::Changes(run) => run.len(),
            Command::Append(_) => 1,
        })
        .collect();
    (pipeline, answers_for)
}

/// Completes every ack of `group` with its write's result from `replies`, the answer to
/// the group's pipeline (`answers_for` from [`pipeline_for`]); answers whether the
/// connection survived.
fn complete(
    group: Vec<(Write, AckSender)>,
    answers_for: &[usize],
    replies: RedisResult<Vec<RedisResult<Value>>>,
) -> Link {
    let replies = match replies {
        Ok(replies) if replies.len() == answers_for.len() => replies,
        Ok(_) => {
            fail(group, || {
                StoreError::Corrupt(
                    "Redis answered a pipeline with the wrong number of replies".into(),
                )
            });
            return Link::Intact;
        }
        Err(error) => {
            fail(group, || unanswered(&error));
            return Link::after_error(&error);
        }
    };
    let mut writes = group.into_iter();
    for (reply, &count) in replies.into_iter().zip(answers_for) {
        let results: Vec<RedisResult<Value>> = match (count, reply) {
            (1, Ok(reply)) if !matches!(reply, Value::Array(_)) => vec![Ok(reply)],
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
    Link::Intact
}

/// One command of a group's pipeline.
enum Command<'a> {
    /// A run of consecutive changes: one call of [`APPLY`].
    Changes(Vec<&'a Write>),
    /// An event appended to the history.
    Append(&'a EventRecord),
}

/// Completes every ack of `group` with the error `error` makes.
fn fail(group: Vec<(Write, AckSender)>, error: impl Fn() -> StoreError) {
    for (_, ack) in group {
        let _ = ack.send(Err(error()));
    }
}

/// One call of [`APPLY`] for a run of changes (inserts, resolves and events).
fn add_changes(pipeline: &mut redis::Pipeline, keys: &Keys, changes: &[&Write]) {
    let requests = changes
        .iter()
        .filter(|change| matches!(change, Write::Insert(_) | Write::Resolve { .. }))
        .count();
    let command = pipeline
        .cmd("EVALSHA")
        .arg(APPLY_SCRIPT.get_hash())
        .arg(11 + 3 * requests)
        .arg(keys.log())
        .arg(keys.log_counter())
        .arg(keys.resolved_at())
        .arg(keys.histories())
        .arg(keys.waiting())
        .arg(keys.history_bytes())
        .arg(keys.audit())
        .arg(keys.audit_counter())
        .arg(keys.outbox_due())
        .arg(keys.outbox_settled())
        .arg(keys.outbox_order());
    for change in changes {
        match change {
            Write::Insert(request) => command
                .arg(keys.request(&request.id))
                .arg(keys.pending(request.kind))
                .arg(keys.calls(request.kind)),
            Write::Resolve { kind, id, .. } => command
                .arg(keys.request(id))
                .arg(keys.pending(*kind))
                .arg(keys.resolved(*kind)),
            Write::Event(_) | Write::Append(_) | Write::Enqueue(_) | Write::Attempted { .. } => {
                &mut *command
            }
        };
    }
    let limit = keys.history_limit.load();
    let (most_records, most_bytes) = limit.trimmed_past();
    command
        .arg(LOG_RETENTION)
        .arg(keys.history_prefix())
        .arg(now_ms())
        .arg(limit.records)
        .arg(most_records)
        .arg(limit.bytes)
        .arg(most_bytes)
        .arg(keys.delivery_prefix());
    for change in changes {
        let entry = LogEntry::of(change).map(|entry| entry.json());
        match change {
            Write::Insert(request) => {
                let calls_field = request
                    .call_id
                    .as_deref()
                    .map(|call_id| call_field(&request.session_id, call_id))
                    .unwrap_or_default();
                let mut fields: Vec<(&str, String)> = vec![
                    ("kind", request.kind.as_str().to_owned()),
                    ("session", request.session_id.clone()),
                    ("created", request.created_at_ms.to_string()),
                    ("body", request.body.clone()),
                    ("state", "pending".to_owned()),
                ];
                if let Some(call_id) = &request.call_id {
                    fields.push(("call", call_id.clone()));
                }
                if let Some(expires) = request.expires_at_ms {
                    fields.push(("expires", expires.to_string()));
                }
                command
                    .arg("i")
                    .arg(&request.id)
                    .arg(calls_field)
                    .arg(&request.session_id)
                    .arg(2 * fields.len());
                for (field, value) in fields {
                    command.arg(field).arg(value);
                }
                command.arg(entry);
            }
            Write::Resolve {
                kind,
                id,
                outcome,
                audit,
                outbox,
            } => {
                command
                    .arg("r")
                    .arg(id)
                    .arg(kind.as_str())
                    .arg(outcome.state.as_str())
                    .arg(&outcome.body)
                    .arg(outcome.resolved_at_ms)
                    .arg(optional_arg(outcome.decided_by.as_deref()))
                    .arg(optional_arg(audit.as_deref()))
                    .arg(entry);
                match outbox {
                    Some(message) => add_message(command, message),
                    None => command.arg("-"),
                };
            }
            Write::Event(event) => {
                command.arg("e").arg(&event.session_id).arg(entry);
            }
            Write::Enqueue(message) => {
                add_message(command.arg("q"), message);
            }
            Write::Attempted {
                message_id,
                target,
                attempt,
            } => {
                let (state, next) = attempt.outcome();
                // Serialising an attempt cannot fail (plain fields); were it to, the
                // delivery would keep no last attempt, not lose the attempt's outcome.
                let last = serde_json::to_string(attempt).unwrap_or_default();
                command
                    .arg("a")
                    .arg(delivery_member(message_id, target))
                    .arg(state.as_str())
                    .arg(next.map(|at| at.to_string()).unwrap_or_default())
                    .arg(attempt.at_ms)
                    .arg(last);
            }
            Write::Append(_) => {}
        }
    }
}

/// An outbox message as the changes script takes it: its number of targets, id, creation
/// time, payload, then its targets.
fn add_message<'a>(
    command: &'a mut redis::Pipeline,
    message: &OutboxMessage,
) -> &'a mut redis::Pipeline {
    command
        .arg(message.targets.len())
        .arg(&message.id)
        .arg(message.created_at_ms)
        .arg(&message.payload)
        .arg(&message.targets)
}

/// The `XADD` of an event to the history.
fn add_append(pipeline: &mut redis::Pipeline, keys: &Keys, event: &EventRecord) {
    let command = pipeline
        .cmd("XADD")
        .arg(keys.events())
        .arg("MAXLEN")
        .arg("~")
        .arg(RedisStore::EVENT_RETENTION)
        .arg("*")
        .arg("id")
        .arg(&event.id)
        .arg("type")
        .arg(&event.event_type)
        .arg("properties")
        .arg(&event.properties);
    if let Some(session) = &event.session_id {
        command.arg("session").arg(session);
    }
}

/// What a write's reply means.
fn written(write: &Write, reply: RedisResult<Value>) -> Result<Written, StoreError> {
    let reply = match reply? {
        Value::ServerError(error) => return Err(StoreError::CommitFailed(format!("{error:?}"))),
        reply => reply,
    };
    match write {
        Write::Insert(request) => match redis::from_redis_value::<i64>(reply) {
            Ok(1) => Ok(Written::Inserted),
            Ok(_) => Err(StoreError::Corrupt(format!(
                "request {} inserted twice",
                request.id
            ))),
            Err(error) => Err(StoreError::Corrupt(error.to_string())),
        },
        Write::Resolve { .. } => {
            let answer = redis::from_redis_value::<String>(reply)
                .map_err(|error| StoreError::Corrupt(error.to_string()))?;
            match answer.as_str() {
                "resolved" => Ok(Written::Resolved),
                "not_found" => Ok(Written::NotFound),
                state => Ok(Written::AlreadyResolved(state.parse()?)),
            }
        }
        Write::Append(_) | Write::Event(_) | Write::Enqueue(_) => Ok(Written::Appended),
        Write::Attempted { .. } => {
            let answer = redis::from_redis_value::<String>(reply)
                .map_err(|error| StoreError::Corrupt(error.to_string()))?;
            match answer.as_str() {
                "appended" => Ok(Written::Appended),
                "not_found" => Ok(Written::NotFound),
                other => Err(StoreError::Corrupt(format!(
                    "unexpected answer {other:?} to an attempt"
                ))),
            }
        }
    }
}

/// The requests with these ids, in the same order; ids with no hash are skipped.
async fn fetch_requests(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
    ids: &[String],
) -> Result<Vec<StoredRequest>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut pipeline = redis::pipe();
    for id in ids {
        pipeline.cmd("HGETALL").arg(keys.request(id));
    }
    let hashes: Vec<HashMap<String, String>> = pipeline.query_async(connection).await?;
    ids.iter()
        .zip(hashes)
        .filter(|(_, fields)| !fields.is_empty())
        .map(|(id, fields)| read_request(id, fields))
        .collect()
}

/// A request hash back as a record.
fn read_request(
    id: &str,
    mut fields: HashMap<String, String>,
) -> Result<StoredRequest, StoreError> {
    let mut take = |name: &str| {
        fields
            .remove(name)
            .ok_or_else(|| StoreError::Corrupt(format!("request {id} has no {name}")))
    };
    let number = |text: String| {
        text.parse::<u64>()
            .map_err(|_| StoreError::Corrupt(format!("request {id}: {text:?} is not a number")))
    };
    let kind = take("kind")?.parse()?;
    let session_id = take("session")?;
    let created_at_ms = number(take("created")?)?;
    let body = take("body")?;
    let state = take("state")?;
    let outcome = if state == "pending" {
        None
    } else {
        Some(OutcomeRecord {
            state: state.parse()?,
            body: take("outcome")?,
            resolved_at_ms: number(take("resolved_at")?)?,
            decided_by: fields.remove("decided_by"),
        })
    };
    Ok(StoredRequest {
        request: RequestRecord {
            id: id.to_owned(),
            kind,
            session_id,
            call_id: fields.remove("call"),
            created_at_ms,
            expires_at_ms: fields.remove("expires").map(number).transpose()?,
            body,
        },
        outcome,
    })
}
