//! The event bus through its public API: typed and untyped subscriptions, the envelope's
//! JSON, cursor replay (also while other tasks publish), and lag reporting.

use std::collections::BTreeSet;
use std::num::NonZeroUsize;
use std::sync::Arc;

use askbus::bus::{
    Bus, BusConfig, Envelope, Event, EventId, Lagged, Observer, ReplayError, Subscription,
};
use futures_util::StreamExt;
use serde::Serialize;
use serde_json::{Value, json};

use crate::support::ready_items;

/// A numbered test event; `publisher` tells concurrent publishers apart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Numbered {
    publisher: u64,
    n: u64,
}

impl Event for Numbered {
    const TYPE: &'static str = "test.numbered";
}

/// A second event type, to check that typed subscriptions filter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Noted {
    text: String,
}

impl Event for Noted {
    const TYPE: &'static str = "test.noted";
}

fn numbered(n: u64) -> Numbered {
    Numbered { publisher: 0, n }
}

fn noted(text: &str) -> Noted {
    Noted { text: text.into() }
}

fn config(history: usize, subscriber_capacity: usize) -> BusConfig {
    BusConfig {
        history,
        subscriber_capacity: NonZeroUsize::new(subscriber_capacity).expect("capacity > 0"),
        ..BusConfig::default()
    }
}

/// The ids a subscription yields until its bus is gone; panics on `Lagged`.
async fn ids_until_end(subscription: Subscription) -> Vec<EventId> {
    subscription
        .map(|item| item.expect("no lag expected").id())
        .collect()
        .await
}

fn ids_of(items: &[Result<Envelope, Lagged>]) -> Vec<EventId> {
    items
        .iter()
        .map(|item| item.as_ref().expect("no lag expected").id())
        .collect()
}

#[tokio::test]
async fn typed_subscriptions_get_only_their_type() {
    let bus = Bus::new();
    let numbers = bus.subscribe::<Numbered>();
    let notes = bus.subscribe::<Noted>();
    bus.publish(noted("a"));
    bus.publish(numbered(1));
    bus.publish(noted("b"));
    bus.publish(numbered(2));
    drop(bus);

    let numbers: Vec<_> = numbers.map(|item| item.expect("no lag")).collect().await;
    let notes: Vec<_> = notes.map(|item| item.expect("no lag")).collect().await;
    assert_eq!(numbers, [numbered(1), numbered(2)]);
    assert_eq!(notes, [noted("a"), noted("b")]);
}

#[tokio::test]
async fn subscribe_all_yields_ascending_envelopes_with_wire_json() {
    let bus = Bus::new();
    let all = bus.subscribe_all();
    let published = [
        bus.publish(numbered(1)),
        bus.publish(noted("hello")),
        bus.publish(numbered(2)),
    ];
    drop(bus);

    let envelopes: Vec<Envelope> = all.map(|item| item.expect("no lag")).collect().await;
    let ids: Vec<EventId> = envelopes.iter().map(Envelope::id).collect();
    assert_eq!(ids, published, "publish returns the id subscribers see");
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "{ids:?}");

    let expected = [
        ("test.numbered", json!({"publisher": 0, "n": 1})),
        ("test.noted", json!({"text": "hello"})),
        ("test.numbered", json!({"publisher": 0, "n": 2})),
    ];
    for (envelope, (event_type, properties)) in envelopes.iter().zip(expected) {
        assert_eq!(envelope.event_type(), event_type);
        let frame: Value = serde_json::from_str(envelope.json()).expect("envelope JSON parses");
        let id = frame["id"].as_str().expect("id is a string");
        assert!(id.starts_with("evt_") && id.len() == 4 + 26, "{id}");
        assert_eq!(id, envelope.id().to_string());
        assert_eq!(id.parse::<EventId>(), Ok(envelope.id()));
        assert_eq!(
            frame,
            json!({"id": id, "type": event_type, "properties": properties}),
            "exactly the keys id, type, properties"
        );
        assert!(!envelope.json().contains('\n'), "compact JSON");
    }
    // Ids also sort as strings, which is what SSE clients compare.
    let texts: Vec<String> = ids.iter().map(ToString::to_string).collect();
    assert!(texts.windows(2).all(|pair| pair[0] < pair[1]), "{texts:?}");
}

#[tokio::test]
async fn publish_without_subscribers_does_not_fail_and_is_kept_in_history() {
    let bus = Bus::new();
    assert_eq!(bus.subscriber_count(), 0);
    let first = bus.publish(numbered(1));
    let second = bus.publish(numbered(2));
    assert!(first < second);
    assert_eq!(bus.head(), second);

    let mut resumed = bus.subscribe_from(first).expect("first is in the history");
    assert_eq!(bus.subscriber_count(), 1);
    assert_eq!(ids_of(&ready_items(&mut resumed)), [second]);
}

#[tokio::test]
async fn envelope_json_is_serialised_once_and_shared() {
    let bus = Bus::new();
    let mut first_subscriber = bus.subscribe_all();
    let mut second_subscriber = bus.subscribe_all();
    let id = bus.publish(noted("once"));
    let seen_first = first_subscriber
        .next()
        .await
        .expect("open")
        .expect("no lag");
    let seen_second = second_subscriber
        .next()
        .await
        .expect("open")
        .expect("no lag");

    let json = seen_first.json();
    assert!(std::ptr::eq(json, seen_first.json()), "same string twice");
    assert!(
        std::ptr::eq(json, seen_second.json()),
        "every subscriber shares the one serialisation"
    );
    assert!(std::ptr::eq(json, seen_first.clone().json()));
    assert_eq!(seen_first.id(), id);
    // `Serialize` writes the same cached text.
    assert_eq!(
        serde_json::to_string(&seen_first).expect("serialises"),
        json
    );
}

#[tokio::test]
async fn history_replay_shares_the_envelope_json() {
    let bus = Bus::new();
    let origin = bus.head();
    let mut live = bus.subscribe_all();
    bus.publish(noted("shared"));
    let seen_live = live.next().await.expect("open").expect("no lag");
    let mut replay = bus.subscribe_from(origin).expect("origin is resumable");
    let seen_replayed = replay.next().await.expect("open").expect("no lag");
    assert_eq!(seen_live.id(), seen_replayed.id());
    assert!(std::ptr::eq(seen_live.json(), seen_replayed.json()));
}

#[tokio::test]
async fn resuming_from_head_yields_exactly_the_later_events() {
    let bus = Bus::new();
    let origin = bus.head();
    let earlier: Vec<EventId> = (0..3).map(|n| bus.publish(numbered(n))).collect();
    assert_eq!(bus.head(), earlier[2], "head is the newest id");
    let cursor = bus.head();
    let later: Vec<EventId> = (3..6).map(|n| bus.publish(numbered(n))).collect();

    let from_origin = bus.subscribe_from(origin).expect("origin is resumable");
    let from_cursor = bus.subscribe_from(cursor).expect("head is resumable");
    let from_newest = bus.subscribe_from(bus.head()).expect("head is resumable");
    assert_eq!(from_cursor.start(), cursor);
    let after_everything = bus.publish(numbered(6));
    drop(bus);

    let all: Vec<EventId> = earlier.iter().chain(&later).copied().collect();
    assert_eq!(
        ids_until_end(from_origin).await,
        [all.as_slice(), &[after_everything]].concat()
    );
    assert_eq!(
        ids_until_end(from_cursor).await,
        [later.as_slice(), &[after_everything]].concat()
    );
    assert_eq!(ids_until_end(from_newest).await, [after_everything]);
}

#[tokio::test]
async fn resuming_on_a_fresh_bus_from_its_head_yields_everything() {
    let bus = Bus::new();
    let cursor = bus.head();
    let resumed = bus
        .subscribe_from(cursor)
        .expect("the origin cursor is resumable");
    let published: Vec<EventId> = (0..4).map(|n| bus.publish(numbered(n))).collect();
    drop(bus);
    assert_eq!(ids_until_end(resumed).await, published);
}

#[test]
fn a_cursor_older_than_the_history_is_too_old() {
    let bus = Bus::with_config(config(3, 16));
    let origin = bus.head();
    let ids: Vec<EventId> = (0..10).map(|n| bus.publish(numbered(n))).collect();

    // The history holds ids[7..10]; the oldest resumable cursor is ids[6].
    for cursor in [origin, ids[0], ids[5]] {
        match bus.subscribe_from(cursor) {
            Err(error) => {
                assert_eq!(
                    error,
                    ReplayError::CursorTooOld {
                        cursor,
                        oldest: ids[6]
                    }
                );
                let message = error.to_string();
                assert!(message.contains(&cursor.to_string()), "{message}");
                assert!(message.contains(&ids[6].to_string()), "{message}");
            }
            Ok(_) => panic!("{cursor} is older than the history: no partial replay"),
        }
    }
    let mut resumed = bus
        .subscribe_from(ids[6])
        .expect("the oldest cursor resumes");
    assert_eq!(ids_of(&ready_items(&mut resumed)), ids[7..]);
}

/// Under `history_bytes`, the history keeps the newest events whose JSON fits, however
/// many the count would allow, and always the newest one however large: a client sending
/// large requests cannot make the bus hold thousands of them after they ended.
#[test]
fn the_history_keeps_only_the_events_its_bytes_allow() {
    let bus = Bus::with_config(BusConfig {
        history: 1000,
        history_bytes: 5_000,
        ..config(1000, 16)
    });
    let kilobyte = "x".repeat(1000);
    let ids: Vec<EventId> = (0..20).map(|_| bus.publish(noted(&kilobyte))).collect();
    // Each event's JSON is a little over 1,000 bytes: four fit in 5,000, not five.
    let size = {
        let mut replay = bus.subscribe_from(ids[18]).expect("recent cursors resume");
        let newest = ready_items(&mut replay)
            .pop()
            .expect("one event")
            .expect("no lag");
        newest.json().len()
    };
    let fit = 5_000 / size;
    assert_eq!(fit, 4, "{size} bytes an event");
    let oldest = ids.len() - fit;
    assert_eq!(
        bus.subscribe_from(ids[oldest - 2]).err(),
        Some(ReplayError::CursorTooOld {
            cursor: ids[oldest - 2],
            oldest: ids[oldest - 1]
        }),
        "only the newest {fit} are kept"
    );
    let mut replay = bus
        .subscribe_from(ids[oldest - 1])
        .expect("the oldest cursor resumes");
    assert_eq!(ids_of(&ready_items(&mut replay)), ids[oldest..]);

    let huge = bus.publish(noted(&"y".repeat(20_000)));
    let mut replay = bus
        .subscribe_from(ids[19])
        .expect("the event before the newest resumes");
    assert_eq!(
        ids_of(&ready_items(&mut replay)),
        [huge],
        "the newest is kept alone, though larger than the limit"
    );
}

/// An event's properties (what a journal records) are its payload's JSON, the same slice
/// of its envelope's JSON whether asked for before it or after, with and without the
/// request id that follows them, and for the envelope a store gives back.
#[test]
fn the_properties_are_the_payload_s_json_within_the_envelope_s() {
    let bus = Bus::new();
    let origin = bus.head();
    let text = "quotes \" and \\ and unicode é \u{1}";
    let plain = bus.publish(noted(text));
    let caused =
        askbus::bus::with_request_id_now(Some(Arc::from("req-1")), || bus.publish(noted(text)));
    let mut replay = bus.subscribe_from(origin).expect("all kept");
    let envelopes: Vec<Envelope> = ready_items(&mut replay)
        .into_iter()
        .map(|item| item.expect("no lag"))
        .collect();
    assert_eq!(
        ids_of(&envelopes.iter().cloned().map(Ok).collect::<Vec<_>>()),
        [plain, caused]
    );
    let payload = serde_json::to_string(&noted(text)).unwrap();
    for envelope in &envelopes {
        // Asked for first, before the envelope's JSON, and after it: the same slice.
        let properties = envelope.properties_json().to_owned();
        assert_eq!(properties, payload);
        let json: Value = serde_json::from_str(envelope.json()).expect("JSON");
        assert_eq!(envelope.properties_json(), payload);
        assert_eq!(json["properties"]["text"], text);
        assert_eq!(json["type"], "test.noted");
        assert_eq!(json["id"], envelope.id().to_string());
        // A recorded envelope, as a store gives it back, has the same properties.
        let recorded = Envelope::recorded(
            envelope.id(),
            envelope.event_type(),
            envelope.session_id(),
            &properties,
        )
        .unwrap();
        assert_eq!(recorded.properties_json(), payload);
        let recorded_json: Value = serde_json::from_str(recorded.json()).unwrap();
        assert_eq!(recorded_json["properties"], json["properties"]);
    }
    assert_eq!(
        envelopes[0].json(),
        format!(r#"{{"id":"{plain}","type":"test.noted","properties":{payload}}}"#)
    );
    assert_eq!(
        envelopes[1].json(),
        format!(
            r#"{{"id":"{caused}","type":"test.noted","properties":{payload},"requestID":"req-1"}}"#
        )
    );
}

/// A payload that cannot be serialised (a map keyed by pairs, which JSON has no key for),
/// failing halfway through its JSON.
#[derive(Clone, Serialize)]
struct Unwritable {
    fine: String,
    keyed_by_pairs: std::collections::BTreeMap<(u8, u8), u8>,
}

impl Event for Unwritable {
    const TYPE: &'static str = "test.unwritable";
}

#[test]
fn an_event_that_cannot_be_serialised_is_sent_with_why_in_its_properties() {
    let bus = Bus::new();
    let origin = bus.head();
    let id = bus.publish(Unwritable {
        fine: "written before the failure".into(),
        keyed_by_pairs: [((1, 2), 3)].into(),
    });
    let mut replay = bus.subscribe_from(origin).expect("kept");
    let envelope = ready_items(&mut replay)
        .pop()
        .expect("published")
        .expect("no lag");
    // No half-written payload: the envelope is JSON, its properties say why.
    let json: Value = serde_json::from_str(envelope.json()).expect("the envelope is JSON");
    assert_eq!(json["id"], id.to_string());
    assert_eq!(json["type"], "test.unwritable");
    let error = json["properties"]["error"].as_str().expect("an error");
    assert!(error.contains("key must be a string"), "{error}");
    assert_eq!(
        serde_json::from_str::<Value>(envelope.properties_json()).unwrap(),
        json["properties"]
    );
}

#[test]
fn without_history_only_the_newest_cursor_resumes() {
    let bus = Bus::with_config(config(0, 16));
    let first = bus.publish(numbered(1));
    let second = bus.publish(numbered(2));
    assert_eq!(
        bus.subscribe_from(first).err(),
        Some(ReplayError::CursorTooOld {
            cursor: first,
            oldest: second
        })
    );
    let mut resumed = bus
        .subscribe_from(second)
        .expect("the newest cursor resumes");
    let third = bus.publish(numbered(3));
    assert_eq!(ids_of(&ready_items(&mut resumed)), [third]);
}

#[test]
fn a_cursor_never_issued_is_unknown() {
    let bus = Bus::new();
    let ids: Vec<EventId> = (0..5).map(|n| bus.publish(numbered(n))).collect();
    let newest = ids[4];
    let largest: EventId = "evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ".parse().expect("valid id");
    let an_hour_later =
        EventId::from_ulid((u128::from(newest.timestamp_ms() + 3_600_000) << 80).into());
    for cursor in [largest, an_hour_later] {
        assert_eq!(
            bus.subscribe_from(cursor).err(),
            Some(ReplayError::UnknownCursor { cursor })
        );
    }
    // An unissued id inside the history's range, if the ids leave room for one.
    let mut neighbours_apart = ids
        .windows(2)
        .filter(|pair| u128::from(pair[1].ulid()) - u128::from(pair[0].ulid()) > 1);
    if let Some(pair) = neighbours_apart.next() {
        let between = EventId::from_ulid((u128::from(pair[0].ulid()) + 1).into());
        assert_eq!(
            bus.subscribe_from(between).err(),
            Some(ReplayError::UnknownCursor { cursor: between })
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumed_subscriptions_have_no_gap_and_no_duplicate_under_concurrent_publishing() {
    const ROUNDS: usize = 8;
    const PUBLISHERS: u64 = 4;
    const PER_PUBLISHER: u64 = 400;
    const TOTAL: usize = (PUBLISHERS * PER_PUBLISHER) as usize;

    for round in 0..ROUNDS {
        // Large enough that nobody lags and nothing is evicted: any gap is a bus bug.
        let bus = Bus::with_config(config(4096, 4096));
        let recorder = bus.subscribe_all();
        let mut watcher = bus.subscribe_all();
        let publishers: Vec<_> = (0..PUBLISHERS)
            .map(|publisher| {
                let bus = bus.clone();
                tokio::spawn(async move {
                    let mut ids = Vec::new();
                    for n in 0..PER_PUBLISHER {
                        ids.push(bus.publish(Numbered { publisher, n }));
                        if n % 8 == 0 {
                            tokio::task::yield_now().await;
                        }
                    }
                    ids
                })
            })
            .collect();

        // Resume, while the publishers run, from cursors the watcher saw and from the head.
        let mut resumed = Vec::new();
        for seen in 1..=TOTAL {
            let envelope = watcher.next().await.expect("open").expect("no lag");
            if seen % 20 == 0 {
                let cursor = envelope.id();
                resumed.push((cursor, bus.subscribe_from(cursor).expect("in history")));
                let head = bus.head();
                resumed.push((head, bus.subscribe_from(head).expect("head resumes")));
            }
        }
        let mut published = BTreeSet::new();
        for publisher in publishers {
            published.extend(publisher.await.expect("publisher ran"));
        }
        drop((bus, watcher));

        let full: Vec<Envelope> = recorder.map(|item| item.expect("no lag")).collect().await;
        let full_ids: Vec<EventId> = full.iter().map(Envelope::id).collect();
        assert_eq!(full_ids.len(), TOTAL);
        assert!(
            full_ids.windows(2).all(|pair| pair[0] < pair[1]),
            "round {round}: ids ascend in delivery order"
        );
        assert_eq!(full_ids.iter().copied().collect::<BTreeSet<_>>(), published);
        for publisher in 0..PUBLISHERS {
            let numbers: Vec<u64> = full
                .iter()
                .filter_map(|envelope| envelope.downcast_ref::<Numbered>())
                .filter(|event| event.publisher == publisher)
                .map(|event| event.n)
                .collect();
            assert_eq!(numbers, (0..PER_PUBLISHER).collect::<Vec<_>>());
        }

        assert!(resumed.len() >= 2 * (TOTAL / 20));
        for (cursor, subscription) in resumed {
            assert_eq!(subscription.start(), cursor);
            let expected: Vec<EventId> =
                full_ids.iter().copied().filter(|id| *id > cursor).collect();
            assert_eq!(
                ids_until_end(subscription).await,
                expected,
                "round {round}: resumed after {cursor}"
            );
        }
    }
}

#[test]
fn a_lagging_subscriber_is_told_exactly_how_many_it_missed_then_continues() {
    // Capacities that are and are not powers of two; the latter round up to one.
    for (configured, capacity, missed) in
        [(4, 4, 3), (5, 8, 3), (1, 1, 10), (100, 128, 1), (6, 8, 100)]
    {
        let bus = Bus::with_config(config(0, configured));
        let mut all = bus.subscribe_all();
        let mut typed = bus.subscribe::<Numbered>();
        // This one has caught up and is parked waiting for the next event.
        let mut waiting = bus.subscribe_all();
        assert!(ready_items(&mut waiting).is_empty());
        let ids: Vec<EventId> = (0..capacity + missed)
            .map(|n| bus.publish(numbered(n as u64)))
            .collect();

        for items in [ready_items(&mut all), ready_items(&mut waiting)] {
            assert_eq!(
                items.first().map(|item| item.as_ref().err()),
                Some(Some(&Lagged(missed as u64))),
                "capacity {capacity}: the first item reports the exact number missed"
            );
            assert_eq!(
                ids_of(&items[1..]),
                ids[missed..],
                "capacity {capacity}: then the newest {capacity} events, in order"
            );
        }

        let typed_items = ready_items(&mut typed);
        assert_eq!(typed_items.first(), Some(&Err(Lagged(missed as u64))));
        let numbers: Vec<u64> = typed_items[1..]
            .iter()
            .map(|item| item.as_ref().expect("one lag report").n)
            .collect();
        assert_eq!(
            numbers,
            (missed as u64..(capacity + missed) as u64).collect::<Vec<_>>()
        );

        // Lagged does not close the subscription.
        let next = bus.publish(numbered(0));
        assert_eq!(ids_of(&ready_items(&mut all)), [next]);
    }
}

#[test]
fn a_subscriber_within_its_capacity_never_lags() {
    // 5 rounds up to 8.
    let bus = Bus::with_config(config(0, 5));
    let mut all = bus.subscribe_all();
    let ids: Vec<EventId> = (0..8).map(|n| bus.publish(numbered(n))).collect();
    assert_eq!(ids_of(&ready_items(&mut all)), ids);
}

#[test]
fn a_never_read_subscriber_does_not_block_the_publisher() {
    const EVENTS: u64 = 100_000;
    let bus = Bus::with_config(config(16, 8));
    let mut never_read = bus.subscribe_all();
    let mut last = bus.head();
    for n in 0..EVENTS {
        last = bus.publish(numbered(n));
    }
    assert_eq!(bus.head(), last);

    let items = ready_items(&mut never_read);
    assert_eq!(items.len(), 1 + 8);
    assert_eq!(items[0].as_ref().err(), Some(&Lagged(EVENTS - 8)));
    assert_eq!(ids_of(&items[1..]).last(), Some(&last));
}

#[test]
fn only_the_canonical_form_of_an_id_parses() {
    let canonical = "evt_01JZ6Q3V8R5M2K7D4T9WXYZABC";
    let id: EventId = canonical.parse().expect("canonical");
    assert_eq!(id.to_string(), canonical);
    for alias in [
        // Bits above 128 would be dropped: each of these decodes to the id above.
        "evt_81JZ6Q3V8R5M2K7D4T9WXYZABC",
        "evt_G1JZ6Q3V8R5M2K7D4T9WXYZABC",
        // Lower case, and Crockford's aliases of 0 and 1.
        "evt_01jz6q3v8r5m2k7d4t9wxyzabc",
        "evt_O1JZ6Q3V8R5M2K7D4T9WXYZABC",
        "evt_0IJZ6Q3V8R5M2K7D4T9WXYZABC",
        // Not ULIDs at all.
        "evt_01JZ6Q3V8R5M2K7D4T9WXYZAB",
        "evt_01JZ6Q3V8R5M2K7D4T9WXYZABCD",
        "que_01JZ6Q3V8R5M2K7D4T9WXYZABC",
    ] {
        assert!(alias.parse::<EventId>().is_err(), "{alias} names no id");
    }
}

/// Keeps the id of every event it sees.
#[derive(Default)]
struct Seen(std::sync::Mutex<Vec<EventId>>);

impl Observer for Seen {
    fn observe(&self, envelope: &Envelope) {
        self.0.lock().unwrap().push(envelope.id());
    }
}

#[test]
fn an_observer_sees_every_event_in_id_order_however_many_publish_at_once() {
    // A subscriber buffer far smaller than what is published: a subscriber would lag, an
    // observer cannot.
    let bus = Bus::with_config(config(0, 1));
    let seen = Arc::new(Seen::default());
    bus.observe(&(seen.clone() as Arc<dyn Observer>));
    let published: Vec<EventId> = std::thread::scope(|scope| {
        let publishers: Vec<_> = (0..4)
            .map(|thread| {
                let bus = bus.clone();
                scope.spawn(move || {
                    (0..500)
                        .map(|n| bus.publish(numbered(thread * 1000 + n)))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        publishers
            .into_iter()
            .flat_map(|publisher| publisher.join().unwrap())
            .collect()
    });
    let seen = seen.0.lock().unwrap().clone();
    assert_eq!(seen.len(), 2000);
    assert!(seen.windows(2).all(|pair| pair[0] < pair[1]), "in id order");
    assert_eq!(
        seen.iter().collect::<BTreeSet<_>>(),
        published.iter().collect::<BTreeSet<_>>()
    );
}

#[test]
fn a_dropped_observer_is_forgotten() {
    let bus = Bus::new();
    let seen = Arc::new(Seen::default());
    let observer = seen.clone() as Arc<dyn Observer>;
    bus.observe(&observer);
    bus.publish(numbered(1));
    drop(observer);
    // The bus held it weakly: `seen` is the last handle.
    let seen = Arc::try_unwrap(seen)
        .ok()
        .expect("the bus kept no strong handle");
    bus.publish(numbered(2));
    assert_eq!(seen.0.into_inner().unwrap().len(), 1);
}
