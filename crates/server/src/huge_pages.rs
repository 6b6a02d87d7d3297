//! Transparent huge pages off for the server's process, because of its allocator.
//!
//! The binary allocates with mimalloc, which asks the kernel for huge pages (2 MiB) for its
//! arenas where transparent huge pages are allowed (`madvise` or `always` in
//! `/sys/kernel/mm/transparent_hugepage/enabled`), and gives memory it no longer uses back
//! to the kernel after a second. Under a steady load it gives back and takes again all the
//! time, and each page it touches again is zeroed by the kernel first: a huge page stalls
//! the thread that touched it for the time it takes to clear 2 MiB. In `shared_load` (two
//! instances on one Redis, 10,000 questions a second) the paced p99 (a run's median of
//! three rounds) read 3.5-5.0 ms in three runs with them and 1.3-1.6 ms in three without,
//! for about 6% less saturated throughput (small pages cost the TLB more). Databases with
//! the same pattern (Redis, MongoDB) ask for them off for the same reason.
//!
//! mimalloc does this itself when `MIMALLOC_ALLOW_THP=0` is set; an operator who set that
//! variable (to either value) keeps their choice.

/// What [`turn_off_huge_pages`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HugePages {
    /// Transparent huge pages are off for this process from now on.
    TurnedOff,
    /// `MIMALLOC_ALLOW_THP` is set: mimalloc follows it, and this left them as they were.
    OperatorsChoice,
    /// Not Linux: there is no such setting.
    Unsupported,
}

/// The variable with which an operator chooses for mimalloc (and so for the server).
const OPERATORS_CHOICE: &str = "MIMALLOC_ALLOW_THP";

/// Turns transparent huge pages off for this process (`prctl(PR_SET_THP_DISABLE)`), unless
/// the operator chose with `MIMALLOC_ALLOW_THP`; see the module docs. The binary calls it
/// at start, before its runtime's threads; a program that embeds the server with mimalloc
/// may call it too.
///
/// # Errors
///
/// The system's error if the kernel refused; nothing changed then.
pub fn turn_off_huge_pages() -> std::io::Result<HugePages> {
    if std::env::var_os(OPERATORS_CHOICE).is_some() {
        return Ok(HugePages::OperatorsChoice);
    }
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_thp_disable(true)?;
        Ok(HugePages::TurnedOff)
    }
    #[cfg(not(target_os = "linux"))]
    {
        Ok(HugePages::Unsupported)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "a test that cannot go on fails")]
mod tests {
    use super::{HugePages, OPERATORS_CHOICE, turn_off_huge_pages};

    /// The kernel says they are off afterwards, unless the operator chose (the test process
    /// keeps the setting, which changes nothing else the tests do).
    #[cfg(target_os = "linux")]
    #[test]
    fn huge_pages_are_off_afterwards_unless_the_operator_chose() {
        let done = turn_off_huge_pages().unwrap();
        if std::env::var_os(OPERATORS_CHOICE).is_some() {
            assert_eq!(done, HugePages::OperatorsChoice);
        } else {
            assert_eq!(done, HugePages::TurnedOff);
            assert!(nix::sys::prctl::get_thp_disable().unwrap());
        }
    }
}
