//! Resident memory of many pending questions, and the cost of listing them.
//!
//! Registers N detached 2-question requests (each with its default deadline), reads the
//! process's resident set size before and after from `/proc/self/statm`, and times
//! `list(None)` and `list(Some(session))` at several sizes to show they stay linear.
//!
//! `cargo bench` runs it at 10,000, 100,000 and 1,000,000; under `cargo test` (no `--bench`
//! argument) it runs a 10,000 smoke version so the code stays exercised. Each size runs in a
//! fresh child process: memory freed by an earlier measurement would otherwise be reused by
//! the allocator and hide what a later one costs.

// A benchmark's printed figures are its report.
#![allow(clippy::print_stdout)]

use std::time::Instant;

use askbus_bus::{Bus, BusConfig};
use askbus_question::{QuestionInfo, QuestionOption, QuestionService};

/// Set in a child process: the one size it measures.
const SIZE_VARIABLE: &str = "ASKBUS_BENCH_PENDING";
/// Set in a child process: which payload it registers (`one` or `two` questions).
const PAYLOAD_VARIABLE: &str = "ASKBUS_BENCH_PAYLOAD";

fn main() {
    if let Some(size) = std::env::var(SIZE_VARIABLE)
        .ok()
        .and_then(|size| size.parse().ok())
    {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("a current-thread runtime");
        let _entered = runtime.enter();
        let two_questions = std::env::var(PAYLOAD_VARIABLE).is_ok_and(|payload| payload == "two");
        measure(size, two_questions);
        return;
    }
    let full_run = std::env::args().any(|arg| arg == "--bench");
    let sizes: &[usize] = if full_run {
        &[10_000, 100_000, 1_000_000]
    } else {
        &[10_000]
    };
    let this_program = std::env::current_exe().expect("the path of this benchmark");
    for payload in ["one", "two"] {
        for size in sizes {
            let status = std::process::Command::new(&this_program)
                .env(SIZE_VARIABLE, size.to_string())
                .env(PAYLOAD_VARIABLE, payload)
                .status()
                .expect("the benchmark runs itself once per size");
            assert!(
                status.success(),
                "measuring {size} pending questions failed"
            );
        }
    }
}

fn measure(size: usize, two_questions: bool) {
    let mut payload = vec![
        QuestionInfo::new(
            "Which database?",
            "Database",
            [
                QuestionOption::new("SQLite", "embedded"),
                QuestionOption::new("Postgres", "server"),
            ],
        ),
        QuestionInfo::new(
            "Ship which platforms?",
            "Platforms",
            [
                QuestionOption::new("Linux", "x86_64"),
                QuestionOption::new("macOS", "arm64"),
            ],
        )
        .multiple(),
    ];
    if !two_questions {
        payload = vec![QuestionInfo::new(
            "Which database?",
            "Database",
            [
                QuestionOption::new("SQLite", "embedded"),
                QuestionOption::new("Postgres", "server"),
                QuestionOption::new("MySQL", "server"),
            ],
        )];
    }
    // A small event history, so the measurement is of pending requests, not of retained events.
    let bus = Bus::with_config(BusConfig {
        history: 16,
        ..BusConfig::default()
    });
    let questions = QuestionService::new(bus);
    let before = resident_bytes();
    for index in 0..size {
        let session = if index % 100 == 0 { "watched" } else { "other" };
        questions
            .ask(session, payload.clone())
            .submit()
            .expect("valid questions")
            .detach();
    }
    let after = resident_bytes();
    let per_request = (after.saturating_sub(before)) as f64 / size as f64;
    // Control: the same payloads held in a plain Vec, so the figure below can be split into
    // what the questions themselves take and what askbus adds. Measured while the
    // questions are still registered, so it cannot reuse memory freed by them.
    let before = resident_bytes();
    let control: Vec<Vec<QuestionInfo>> = (0..size).map(|_| payload.clone()).collect();
    let payload_bytes = (resident_bytes().saturating_sub(before)) as f64 / size as f64;
    drop(control);

    let (all, list_all) = median_of_five(|| questions.list(None));
    let (watched, list_session) = median_of_five(|| questions.list(Some("watched")));
    assert_eq!(all.len(), size);
    assert_eq!(watched.len(), size.div_ceil(100));
    assert!(
        all.windows(2).all(|pair| pair[0].id < pair[1].id),
        "ascending order"
    );

    println!(
        "pending_memory: {} question(s), {size:>9} pending: {per_request:>7.0} B resident each \
         ({payload_bytes:.0} B payload + {:.0} B askbus); \
         list(all) {:>8.2} ms ({:.1} ns/request), list(session) {:>7.2} ms (medians of 5)",
        payload.len(),
        per_request - payload_bytes,
        list_all.as_secs_f64() * 1e3,
        list_all.as_secs_f64() * 1e9 / size as f64,
        list_session.as_secs_f64() * 1e3,
    );
}

/// Runs `list` five times; returns its result and the median duration.
fn median_of_five<T>(mut list: impl FnMut() -> T) -> (T, std::time::Duration) {
    let mut durations = Vec::with_capacity(5);
    let mut result = None;
    for _ in 0..5 {
        let started = Instant::now();
        result = Some(list());
        durations.push(started.elapsed());
    }
    durations.sort();
    (result.expect("five runs"), durations[2])
}

fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let resident_pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|pages| pages.parse().ok())
        .unwrap_or(0);
    resident_pages * 4096
}
