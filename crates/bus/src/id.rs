//! Prefixed, strictly ascending ULID identifiers.
//!
//! Every id askbus hands out is a [ULID](https://github.com/ulid/spec) behind a short kind
//! prefix (`evt_`, `que_`, `apr_`), so an id read in a log or a URL says what it names, and
//! ids of one kind sort in creation order both as values and as strings.
//!
//! An [`IdGenerator`] is monotonic: within one millisecond it increments the random part
//! instead of drawing a new one, so two ids from the same generator never compare equal and
//! never go backwards, even when the wall clock does. The price is that ids are guessable:
//! **an id is never an authorisation secret**.
//!
//! ```
//! use askbus_bus::{EventId, IdGenerator};
//!
//! let mut ids = IdGenerator::new();
//! let first: EventId = ids.next_id();
//! let second: EventId = ids.next_id();
//! assert!(first < second);
//! assert!(first.to_string().starts_with("evt_"));
//! assert_eq!(first.to_string().parse::<EventId>(), Ok(first));
//! ```

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use ulid::{Generator, Ulid};

/// The kind of thing an [`Id`] names; its prefix is part of the id's text form.
pub trait IdKind: 'static {
    /// Prefix written before the ULID, including the trailing underscore (`"evt_"`).
    const PREFIX: &'static str;
}

/// An id of kind `K`: a ULID shown as `K::PREFIX` followed by its 26-character text.
///
/// Ids order by their ULID, which for ids from one [`IdGenerator`] is creation order.
pub struct Id<K> {
    ulid: Ulid,
    /// `fn() -> K` keeps `Id<K>` `Send + Sync + Copy` whatever `K` is.
    kind: PhantomData<fn() -> K>,
}

/// Kind marker for bus event ids (`evt_`).
#[derive(Debug)]
pub enum EventKind {}

impl IdKind for EventKind {
    const PREFIX: &'static str = "evt_";
}

/// The id of a published event, also its replay cursor.
pub type EventId = Id<EventKind>;

/// A string that is not an id of the expected kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a valid id: expected `{prefix}` followed by a 26-character ULID")]
pub struct ParseIdError {
    /// The rejected text, cut to a readable length.
    input: String,
    /// The prefix that was expected.
    prefix: &'static str,
}

/// Hands out strictly ascending ids.
///
/// Not synchronised: the owner keeps it behind whatever lock also orders the things the ids
/// name, so that id order and insertion order are the same order.
#[derive(Debug, Clone, Default)]
pub struct IdGenerator {
    /// The monotonic ULID source; remembers the last ULID it produced.
    ulids: Generator,
    /// Every id handed out is above this: the last id of an earlier run that this one
    /// continues (see [`IdGenerator::after`]), then the last id handed out.
    floor: Option<Ulid>,
}

impl<K: IdKind> Id<K> {
    /// Wraps a ULID as an id of this kind.
    pub const fn from_ulid(ulid: Ulid) -> Self {
        Self {
            ulid,
            kind: PhantomData,
        }
    }

    /// The ULID behind this id.
    pub const fn ulid(self) -> Ulid {
        self.ulid
    }

    /// Milliseconds since the Unix epoch at which this id was made.
    pub const fn timestamp_ms(self) -> u64 {
        self.ulid.timestamp_ms()
    }
}

impl IdGenerator {
    /// A generator that has produced nothing yet.
    pub const fn new() -> Self {
        Self {
            ulids: Generator::new(),
            floor: None,
        }
    }

    /// A generator whose ids are all above `last`: for continuing the ids of an earlier
    /// run (read back from a store) even if the clock went back in between.
    pub const fn after(last: Ulid) -> Self {
        Self {
            ulids: Generator::new(),
            floor: Some(last),
        }
    }

    /// Makes every later id greater than `last` too (an id of an earlier run, read back).
    pub fn skip_past(&mut self, last: Ulid) {
        if self.floor.is_none_or(|floor| floor < last) {
            self.floor = Some(last);
        }
    }

    /// The next id, strictly greater than every id this generator produced before.
    pub fn next_id<K: IdKind>(&mut self) -> Id<K> {
        // Overflow needs 2^80 ids within one millisecond; should it ever happen, carrying
        // into the timestamp keeps the ids ascending, which is the property that matters.
        let mut ulid = match self.ulids.generate() {
            Ok(ulid) => ulid,
            Err(overflow) => overflow.commit_overflow_increment(),
        };
        if let Some(floor) = self.floor {
            if ulid <= floor {
                // The clock is behind the run we continue: count up from its last id.
                ulid = floor.increment().unwrap_or(floor);
            }
            self.floor = Some(ulid);
        }
        Id::from_ulid(ulid)
    }
}

impl<K> Clone for Id<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for Id<K> {}

impl<K> PartialEq for Id<K> {
    fn eq(&self, other: &Self) -> bool {
        self.ulid == other.ulid
    }
}

impl<K> Eq for Id<K> {}

impl<K> PartialOrd for Id<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K> Ord for Id<K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.ulid.cmp(&other.ulid)
    }
}

impl<K> Hash for Id<K> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.ulid.hash(state);
    }
}

impl<K: IdKind> fmt::Display for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buffer = [0; ulid::ULID_LEN];
        f.write_str(K::PREFIX)?;
        f.write_str(self.ulid.array_to_str(&mut buffer))
    }
}

impl<K: IdKind> fmt::Debug for Id<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl<K: IdKind> FromStr for Id<K> {
    type Err = ParseIdError;

    /// Parses the canonical form only, the one [`Display`](fmt::Display) writes: the
    /// prefix and 26 upper-case Crockford base-32 characters, the first at most `7`. A
    /// ULID decoder also reads lower case, and drops the two bits above 128 that a first
    /// character over `7` would carry, so `que_8…`, `que_G…` and `que_0…` (upper or lower
    /// case) would all name one request; only `que_0…` does.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        input
            .strip_prefix(K::PREFIX)
            .and_then(|text| {
                let ulid = Ulid::from_string(text).ok()?;
                let mut canonical = [0; ulid::ULID_LEN];
                (ulid.array_to_str(&mut canonical) == text).then_some(ulid)
            })
            .map(Self::from_ulid)
            .ok_or_else(|| ParseIdError {
                input: input.chars().take(64).collect(),
                prefix: K::PREFIX,
            })
    }
}

impl<K: IdKind> Serialize for Id<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de, K: IdKind> Deserialize<'de> for Id<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}
