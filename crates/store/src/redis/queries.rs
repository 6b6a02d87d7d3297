//! [`Store`] for [`RedisStore`]: every read runs on the writer's queue after the writes
//! queued before it.

use std::collections::HashMap;
use std::sync::Arc;

use redis::aio::MultiplexedConnection;

use super::RedisStore;
use super::follower::{logged, read_change};
use super::keys::{Keys, call_field};
use super::outbox::{CLAIM_DELIVERIES_SCRIPT, FORGET_DELIVERIES_SCRIPT, deliveries, read_delivery};
use super::retention::{forget_quiet_histories, forget_resolved};
use super::writer::Job;
use crate::{
    Ack, AuditRecord, BoxFuture, ChangeLog, Delivery, DeliveryQuery, EventRecord, HistoryPage,
    HistoryRecord, Loaded, OutcomeRecord, RequestKind, RequestRecord, Store, StoreError,
    StoredRequest, Write,
};

impl Store for RedisStore {
    fn write(&self, write: Write) -> Ack {
        self.room.queue(write, |write, sender| {
            self.jobs.send(Job::Write(write, sender)).is_ok()
        })
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
                // Every insert is a change of the log: its count is past every insert's.
                requests_ever: logged(&mut connection, &keys).await?.0,
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
            let (command, start, end) = match page {
                HistoryPage::From(from) => ("XRANGE", format!("0-{from}"), "+"),
                HistoryPage::Before(before) => ("XREVRANGE", format!("(0-{before}"), "-"),
            };
            let mut command = redis::cmd(command);
            command.arg(key).arg(start).arg(end).arg("COUNT").arg(limit);
            let entries: Vec<(String, Vec<String>)> = self
                .read_aside(|mut connection| {
                    let command = command.clone();
                    async move { command.query_async(&mut connection).await }
                })
                .await?;
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
