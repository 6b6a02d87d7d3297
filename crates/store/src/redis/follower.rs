//! The change log reader: blocking `XREAD`s on a connection of its own.

use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, RedisResult};

use super::RedisStore;
use super::keys::Keys;
use crate::log::check_continues;
use crate::{BoxFuture, Change, ChangeKind, ChangeLog, LogPosition, StoreError};

/// The change log reader's own connection.
#[derive(Debug)]
pub(super) struct Follower {
    /// Used only for `XREAD BLOCK` (and `XINFO STREAM`).
    connection: MultiplexedConnection,
    /// Whether the next read must first check that the log has not gone back behind the
    /// reader's position (Redis lost its data: numbering starts again at 1, and a gap
    /// check alone would not see it). Set on a new connection: a restarted Redis is one.
    check_rewound: bool,
}

/// How much longer than its `BLOCK` a follower's read may take before it is given up
/// (and its connection dropped): a Redis that answers nothing is a broken connection.
const FOLLOW_SLACK: Duration = Duration::from_secs(5);

impl ChangeLog for RedisStore {
    fn head(&self) -> BoxFuture<'_, LogPosition> {
        // Not on the writer's queue, whose writes would wait for it: the changes made
        // before this call are the ones Redis answered before this read reaches it.
        let keys = &self.keys;
        Box::pin(
            self.read_aside(
                move |mut connection| async move { logged(&mut connection, keys).await },
            ),
        )
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
            if logged(&mut self.connection, keys).await? < after {
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

/// The number of the last change logged, `START` before any: the change counter, or the
/// log's newest entry if that is further (the counter's key was lost while the log was
/// kept, and no change has numbered past it yet: see `lua/apply.lua`), so that a reader
/// starting then does not start behind the log.
pub(super) async fn logged(
    connection: &mut MultiplexedConnection,
    keys: &Keys,
) -> RedisResult<LogPosition> {
    type Entries = Vec<(String, redis::Value)>;
    let (count, newest): (Option<u64>, Entries) = redis::pipe()
        .cmd("GET")
        .arg(keys.log_counter())
        .cmd("XREVRANGE")
        .arg(keys.log())
        .arg("+")
        .arg("-")
        .arg("COUNT")
        .arg(1)
        .query_async(connection)
        .await?;
    let newest = newest
        .first()
        .and_then(|(id, _)| id.strip_prefix("0-")?.parse().ok())
        .unwrap_or(0);
    Ok(LogPosition(count.unwrap_or(0).max(newest)))
}

/// A change log entry back as a change: its position from the entry id, what changed from
/// its one `change` field. An entry that cannot be read is a change nobody can apply
/// ([`ChangeKind::Unreadable`]), not an error: a reader must be able to go past it.
pub(super) fn read_change(id: &str, fields: Vec<String>) -> Result<Change, StoreError> {
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
