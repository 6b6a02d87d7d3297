//! A group of writes as one pipeline: runs of changes as calls of the changes script, and
//! the replies back as the writes' results.

use std::sync::LazyLock;

use redis::{RedisResult, Value};

use super::RedisStore;
use super::keys::{Keys, call_field, delivery_member};
use crate::ack::AckSender;
use crate::log::LogEntry;
use crate::{EventRecord, LOG_RETENTION, OutboxMessage, StoreError, Write, Written, now_ms};

/// Applies a run of changes in order, each atomically, and logs each that took effect as
/// the next change, and as the next record of its session's history: one script call per
/// run (of at most [`MAX_RUN`]), so the Lua call's own cost (about as much as the commands
/// of one change) is paid once per run, not once per write. A change that fails returns
/// its error in its place; the others go on.
///
/// A session's history is trimmed here too (not with `XADD`'s `MAXLEN`, which cannot
/// count bytes): once it is a batch over its limit of records or of bytes, its oldest
/// entries are deleted until it is within both, keeping its newest (see the `history`
/// module docs). Its bytes are counted in `history_bytes`; a history written before they
/// were (schema 4) is counted whole at its next record. A call reads each history's
/// length once and sets each session's time in `histories` once, however many of its
/// changes it applies: every command a change saves is one Redis runs for every change.
///
/// Each change is numbered from the log's counter (`log:seq`), and each audit entry from
/// the audit log's: a call reads each counter once, counts on from it, and stores it once
/// at its end (an `INCR` per change was three commands a cycle). A counter behind its
/// streams (its key lost while they were kept: deleted by hand, or evicted) would have
/// every change refused by them for good, and a change refused there after its other
/// writes would be made but never logged; instead a number a stream refuses is replaced by
/// the one past the newest entry of the log and of the session's history (of the audit
/// log, for an entry), and the counter set to it (Redis's own log says so). Past the log's
/// newest, readers read on without a gap; past a history's newer one (the log was lost
/// too), they find a gap and load the requests again, as after any loss.
///
/// The outbox's writes are changes of this script too (they are not logged: they change no
/// request), so they keep the queue's order among the others. A delivery's hash key is its
/// member name (message id, tab, target) after the delivery prefix, made here.
///
/// A change asks the type of each key it writes before it writes anything (a key once per
/// call): a key of another type (set by hand, or by another program under the prefix)
/// fails the change whole, with the key's name, instead of halfway through, some of its
/// writes made and the change never logged.
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
/// - audit: `u`, the draft: appended to the audit stream as its next entry; answers 1;
/// - enqueue: `q`, n, message id, created, payload, n targets: one pending delivery per
///   target, due at `created`, unless there is one already; answers 1;
/// - attempted: `a`, delivery member, the state after it, next due time (`''` when
///   settled), the attempt's time and JSON; a pending delivery takes them (and one more
///   attempt), a settled one stays as it is; answers `appended`, or `not_found`.
const APPLY: &str = include_str!("lua/apply.lua");

/// The script, with its SHA1 for `EVALSHA`: a call sends 40 bytes instead of the script,
/// and Redis looks the compiled script up instead of hashing its text each time.
static APPLY_SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(APPLY));

/// Whether a pipeline that calls [`APPLY`] loads it first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Script {
    /// Loads it (`SCRIPT LOAD`, a lookup if Redis has it): the first on a connection, and
    /// the first after Redis answered that it lost it.
    Load,
    /// Counts on it: a pipeline before it on the same connection loaded it.
    Loaded,
}

/// What one command of a group's pipeline answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Answers {
    /// A call of [`APPLY`], for this many writes.
    Changes(usize),
    /// An event appended to the history, for one write.
    Append,
}

impl Answers {
    /// How many writes it answers for.
    pub(super) fn writes(self) -> usize {
        match self {
            Self::Changes(count) => count,
            Self::Append => 1,
        }
    }
}

/// Most changes in one call of [`APPLY`]. A call holds Redis for all of its changes (about
/// 15 µs each), and no other client is served meanwhile: a run of 1,024 held it about
/// 15 ms, in which the other instances' writes and every follower's read waited, so that
/// a backlog made the next call longer still. Runs of 32 hold it under half a
/// millisecond, and the other clients' commands go between them; the call's own cost is
/// still shared by 32 changes. In `shared_load` (two instances on one Redis): 18.2k to
/// 21.8k cycles a second saturated, and the paced p99 from 10.1 ms to 3.7 ms.
const MAX_RUN: usize = 32;

/// The pipeline that applies `group`, and what each of its commands answers for.
///
/// Consecutive changes (requests and session events) go into calls of [`APPLY`] of up to
/// [`MAX_RUN`] each, appends to the bus's record are `XADD`s in their places, so the
/// pipeline keeps the queue's order. With [`Script::Load`] a group that calls the script
/// loads it first: the script (9 KB, hashed by Redis on every load) travels once per
/// connection, not once per group.
pub(super) fn pipeline_for(
    keys: &Keys,
    group: &[(Write, AckSender)],
    script: Script,
) -> (redis::Pipeline, Vec<Answers>) {
    let mut commands: Vec<Command<'_>> = Vec::new();
    for (write, _) in group {
        match (write, commands.last_mut()) {
            (Write::Append(event), _) => commands.push(Command::Append(event)),
            (change, Some(Command::Changes(run))) if run.len() < MAX_RUN => run.push(change),
            (change, _) => commands.push(Command::Changes(vec![change])),
        }
    }
    let mut pipeline = redis::pipe();
    pipeline.ignore_errors();
    if script == Script::Load
        && commands
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
    let answers = commands
        .iter()
        .map(|command| match command {
            Command::Changes(run) => Answers::Changes(run.len()),
            Command::Append(_) => Answers::Append,
        })
        .collect();
    (pipeline, answers)
}

/// One command of a group's pipeline.
enum Command<'a> {
    /// A run of consecutive changes: one call of [`APPLY`].
    Changes(Vec<&'a Write>),
    /// An event appended to the history.
    Append(&'a EventRecord),
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
            Write::Event(_)
            | Write::Append(_)
            | Write::Audit(_)
            | Write::Enqueue(_)
            | Write::Attempted { .. } => &mut *command,
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
            Write::Audit(draft) => {
                command.arg("u").arg(draft);
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
pub(super) fn written(write: &Write, reply: RedisResult<Value>) -> Result<Written, StoreError> {
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
        Write::Append(_) | Write::Event(_) | Write::Audit(_) | Write::Enqueue(_) => {
            Ok(Written::Appended)
        }
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

/// An optional text as one script argument: `-` for `None`, `+` and the text for `Some`, so
/// that every text, the empty one too, is told apart from none.
fn optional_arg(text: Option<&str>) -> String {
    text.map_or_else(|| "-".to_owned(), |text| format!("+{text}"))
}
