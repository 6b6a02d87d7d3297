//! The question service through its public API, on one thread: validation, the keyed reply
//! form, single outcomes, drop and detach, timeouts (paused time), sessions and listing,
//! and the events on the bus.

use std::collections::BTreeMap;
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use askbus::bus::Bus;
use askbus::question::{
    AskError, MAX_HEADER_CHARS, NO_PREFERENCE, Outcome, OutcomeKind, PendingQuestion,
    QuestionConfig, QuestionId, QuestionInfo, QuestionOption, QuestionRequest, QuestionService,
    ReplyError, SubmitError, Timeout, ToolRef,
};
use serde_json::{Value, json};
use tokio::time::{Instant, advance};

use crate::support::{
    QuestionEvent, answers, language, outcomes_in_stream, poll_once, question_event,
    ready_envelopes, service, settle, settle_until, targets,
};

/// An id no service issued.
fn unknown_id() -> QuestionId {
    "que_7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
        .parse()
        .expect("a valid question id")
}

/// Asks `questions` for `session_id` with no timeout; panics if they are invalid.
fn submit(
    service: &QuestionService,
    session_id: &str,
    questions: Vec<QuestionInfo>,
) -> PendingQuestion {
    service
        .ask(session_id, questions)
        .timeout(Timeout::Never)
        .submit()
        .expect("valid questions")
}

/// The question events published so far on `service`'s bus, read from `subscription`.
fn events(subscription: &mut askbus::bus::Subscription) -> Vec<QuestionEvent> {
    ready_envelopes(subscription)
        .iter()
        .filter_map(question_event)
        .collect()
}

// ---------------------------------------------------------------------------------------
// Validation
// ---------------------------------------------------------------------------------------

/// What a validation check expects.
enum Expect<'a> {
    /// Accepted.
    Ok,
    /// Refused as invalid; the error concerns question `index` (zero-based, `None` for the
    /// request as a whole) and its message contains every fragment.
    Invalid(Option<usize>, &'a [&'a str]),
}

/// Asks `questions` for `session_id`; checks it is accepted, or refused as expected with
/// nothing registered or published.
#[track_caller]
fn check_ask(session_id: &str, questions: Vec<QuestionInfo>, expected: Expect<'_>) {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let asked = service
        .ask(session_id, questions)
        .timeout(Timeout::Never)
        .submit();
    match (asked, expected) {
        (Ok(pending), Expect::Ok) => {
            assert_eq!(service.list(None)[0].id, pending.id());
        }
        (Err(SubmitError::Invalid(error)), Expect::Invalid(index, fragments)) => {
            let message = error.to_string();
            for fragment in fragments {
                assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
            }
            assert_eq!(error.question_index(), index, "{message}");
            assert_eq!(service.pending_count(), 0);
            assert!(events(&mut subscription).is_empty(), "nothing published");
        }
        (Ok(_), Expect::Invalid(..)) => panic!("accepted questions that should be refused"),
        (Err(SubmitError::OverQuota(exceeded)), _) => panic!("no limits, yet: {exceeded}"),
        (Err(SubmitError::NotAllowed(refused)), _) => panic!("no roles, yet: {refused}"),
        (Err(error), Expect::Ok) => panic!("refused valid questions: {error}"),
    }
}

#[test]
fn ask_validation() {
    let unanswerable = QuestionInfo::new("Proceed?", "Go", []).options_only();
    let free_text = QuestionInfo::new("Anything else?", "Notes", []);
    let with_header = |header: String| QuestionInfo {
        header,
        ..targets()
    };
    let with_options = |labels: &[&str]| QuestionInfo {
        options: labels
            .iter()
            .map(|label| QuestionOption::new(*label, ""))
            .collect(),
        ..language()
    };

    check_ask("s", vec![language(), targets()], Expect::Ok);
    check_ask(
        "s",
        vec![],
        Expect::Invalid(None, &["at least one question"]),
    );
    check_ask(
        "",
        vec![language()],
        Expect::Invalid(None, &["session id is empty"]),
    );
    check_ask(
        "s",
        vec![language(), QuestionInfo::new("", "Empty", [])],
        Expect::Invalid(Some(1), &["question 2", "question text is empty"]),
    );
    check_ask(
        "s",
        vec![language(), QuestionInfo::new("  \n", "Blank", [])],
        Expect::Invalid(Some(1), &["question 2", "question text is empty"]),
    );

    // Headers are counted in characters, not bytes.
    assert_eq!(MAX_HEADER_CHARS, 30);
    check_ask(
        "s",
        vec![language(), with_header("x".repeat(30))],
        Expect::Ok,
    );
    check_ask(
        "s",
        vec![language(), with_header("é".repeat(30))],
        Expect::Ok,
    );
    check_ask(
        "s",
        vec![language(), with_header("日本".repeat(15))],
        Expect::Ok,
    );
    check_ask(
        "s",
        vec![language(), with_header("x".repeat(31))],
        Expect::Invalid(
            Some(1),
            &["question 2", "\"Which targets?\"", "31 characters", "30"],
        ),
    );
    check_ask(
        "s",
        vec![language(), with_header("é".repeat(31))],
        Expect::Invalid(
            Some(1),
            &["question 2", "\"Which targets?\"", "31 characters"],
        ),
    );

    check_ask(
        "s",
        vec![with_options(&["A", "B", "A"])],
        Expect::Invalid(
            Some(0),
            &["question 1", "\"Which language?\"", "\"A\"", "twice"],
        ),
    );
    // Many options take another path through duplicate detection.
    let many: Vec<String> = (0..40).map(|n| format!("option {n}")).collect();
    let mut many_and_a_twin: Vec<&str> = many.iter().map(String::as_str).collect();
    check_ask("s", vec![with_options(&many_and_a_twin)], Expect::Ok);
    many_and_a_twin.push("option 7");
    check_ask(
        "s",
        vec![language(), with_options(&many_and_a_twin)],
        Expect::Invalid(Some(1), &["question 2", "\"option 7\"", "twice"]),
    );
    // Labels that read alike (the spaces around them show nowhere) are one label, and a
    // label of spaces is empty; the many-option path compares the same way.
    check_ask(
        "s",
        vec![with_options(&["Yes", "Yes "])],
        Expect::Invalid(Some(0), &["question 1", "\"Yes \"", "twice"]),
    );
    check_ask(
        "s",
        vec![with_options(&["Yes", "Yes\u{2800}"])],
        Expect::Invalid(Some(0), &["twice"]),
    );
    many_and_a_twin.pop();
    many_and_a_twin.push(" option 9");
    check_ask(
        "s",
        vec![with_options(&many_and_a_twin)],
        Expect::Invalid(Some(0), &["\" option 9\"", "twice"]),
    );
    check_ask(
        "s",
        vec![with_options(&["A", "  "])],
        Expect::Invalid(Some(0), &["option 2", "empty label"]),
    );
    check_ask(
        "s",
        vec![with_options(&["A", ""])],
        Expect::Invalid(
            Some(0),
            &[
                "question 1",
                "\"Which language?\"",
                "option 2",
                "empty label",
            ],
        ),
    );
    check_ask(
        "s",
        vec![language(), targets(), unanswerable],
        Expect::Invalid(
            Some(2),
            &["question 3", "\"Proceed?\"", "cannot be answered"],
        ),
    );
    check_ask("s", vec![free_text], Expect::Ok);
}

#[tokio::test]
async fn ask_reports_invalid_questions_at_once() {
    let service = service();
    let asked = service.ask("s", vec![]).await;
    match asked {
        Err(AskError::Invalid(error)) => {
            assert!(error.to_string().contains("at least one question"));
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
    assert_eq!(service.pending_count(), 0);
}

/// Asks `questions`, replies `given`; checks the reply is accepted (and delivered), or
/// refused as expected with the request still pending.
#[track_caller]
fn check_reply(questions: Vec<QuestionInfo>, given: &[&[&str]], expected: Expect<'_>) {
    let service = service();
    let mut pending = submit(&service, "s", questions);
    let replied = service.reply(pending.id(), answers(given)).map(drop);
    match (replied, expected) {
        (Ok(()), Expect::Ok) => {
            assert_eq!(poll_once(&mut pending), Some(Ok(answers(given))));
            assert_eq!(service.pending_count(), 0);
        }
        (Err(ReplyError::Invalid(error)), Expect::Invalid(index, fragments)) => {
            let message = error.to_string();
            for fragment in fragments {
                assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
            }
            assert_eq!(error.question_index(), index, "{message}");
            assert_eq!(
                service.pending_count(),
                1,
                "an invalid reply resolves nothing"
            );
            assert!(poll_once(&mut pending).is_none());
        }
        (Ok(()), Expect::Invalid(..)) => panic!("accepted {given:?}, which should be refused"),
        (Err(error), _) => panic!("unexpected error for {given:?}: {error}"),
    }
}

#[test]
fn reply_validation() {
    let both = || vec![language(), targets()];
    let language_only = || {
        vec![QuestionInfo {
            custom: false,
            ..language()
        }]
    };

    check_reply(both(), &[&["Rust"], &["Linux", "macOS"]], Expect::Ok);
    check_reply(
        both(),
        &[&["Rust"]],
        Expect::Invalid(None, &["expected 2 answers", "got 1"]),
    );
    check_reply(
        both(),
        &[&["Rust"], &[], &[]],
        Expect::Invalid(None, &["expected 2 answers", "got 3"]),
    );
    check_reply(
        both(),
        &[&["Rust", "Go"], &[]],
        Expect::Invalid(
            Some(0),
            &["question 1", "\"Which language?\"", "one choice", "2"],
        ),
    );
    check_reply(
        both(),
        &[&[], &[""]],
        Expect::Invalid(
            Some(1),
            &["question 2", "\"Which targets?\"", "empty string"],
        ),
    );
    check_reply(
        both(),
        &[&["Rust"], &["Linux", "Plan 9"]],
        Expect::Invalid(
            Some(1),
            &[
                "question 2",
                "\"Which targets?\"",
                "\"Plan 9\"",
                "Linux, macOS, BSD, Solaris",
            ],
        ),
    );
    check_reply(
        language_only(),
        &[&["Python"]],
        Expect::Invalid(Some(0), &["question 1", "\"Python\"", "Rust, Go"]),
    );
    // Custom text is fine where custom answers are on (the default).
    check_reply(both(), &[&["Zig"], &["Linux"]], Expect::Ok);
    check_reply(both(), &[&["Rust, or else Go"], &[]], Expect::Ok);
    // Skipping: "[No preference]" alone, or an empty answer, even without custom answers.
    check_reply(both(), &[&[NO_PREFERENCE], &[NO_PREFERENCE]], Expect::Ok);
    check_reply(language_only(), &[&[NO_PREFERENCE]], Expect::Ok);
    check_reply(both(), &[&[], &[]], Expect::Ok);
    check_reply(
        both(),
        &[&["Rust"], &["Linux", "Linux"]],
        Expect::Invalid(Some(1), &["question 2", "\"Linux\"", "twice"]),
    );
    check_reply(both(), &[&["Go"], &["BSD, Solaris", "Linux"]], Expect::Ok);
}

// ---------------------------------------------------------------------------------------
// Keyed replies
// ---------------------------------------------------------------------------------------

/// Replies to [`language`] and [`targets`] in the keyed form; checks the answers it turns
/// into, or the refusal.
#[track_caller]
fn check_keyed(keyed: &[(&str, &str)], expected: Result<&[&[&str]], &[&str]>) {
    let service = service();
    let mut pending = submit(&service, "s", vec![language(), targets()]);
    let keyed: BTreeMap<String, String> = keyed
        .iter()
        .map(|(question, answer)| ((*question).to_owned(), (*answer).to_owned()))
        .collect();
    match (
        service.reply_keyed(pending.id(), &keyed).map(drop),
        expected,
    ) {
        (Ok(()), Ok(expected)) => {
            assert_eq!(poll_once(&mut pending), Some(Ok(answers(expected))));
        }
        (Err(ReplyError::Invalid(error)), Err(fragments)) => {
            let message = error.to_string();
            for fragment in fragments {
                assert!(message.contains(fragment), "{message:?} lacks {fragment:?}");
            }
            assert_eq!(service.pending_count(), 1);
        }
        (replied, expected) => panic!("{keyed:?}: got {replied:?}, expected {expected:?}"),
    }
}

#[test]
fn keyed_reply_form() {
    check_keyed(
        &[
            ("Which language?", "Rust"),
            ("Which targets?", "Linux, macOS"),
        ],
        Ok(&[&["Rust"], &["Linux", "macOS"]]),
    );
    // A question left out, or answered with "", is skipped.
    check_keyed(&[("Which targets?", "macOS")], Ok(&[&[], &["macOS"]]));
    check_keyed(&[("Which language?", "")], Ok(&[&[], &[]]));
    check_keyed(&[], Ok(&[&[], &[]]));
    // A label that contains ", " stays whole, alone or among other selections.
    check_keyed(
        &[("Which targets?", "BSD, Solaris")],
        Ok(&[&[], &["BSD, Solaris"]]),
    );
    check_keyed(
        &[("Which targets?", "Linux, BSD, Solaris")],
        Ok(&[&[], &["Linux", "BSD, Solaris"]]),
    );
    check_keyed(
        &[("Which targets?", "BSD, Solaris, macOS")],
        Ok(&[&[], &["BSD, Solaris", "macOS"]]),
    );
    // A single-choice answer is never split.
    check_keyed(
        &[("Which language?", "Rust, Go")],
        Ok(&[&["Rust, Go"], &[]]),
    );
    check_keyed(
        &[("Which targets?", NO_PREFERENCE)],
        Ok(&[&[], &[NO_PREFERENCE]]),
    );
    check_keyed(
        &[("Which OS?", "Linux")],
        Err(&["\"Which OS?\"", "not the text of any question"]),
    );
    check_keyed(
        &[("Which targets?", "Linux, Plan 9")],
        Err(&["question 2", "\"Plan 9\""]),
    );
}

/// Replies `value` to a multi-select question offering `labels` in the keyed form, and
/// returns the answer it turned into, or the refusal's message.
fn keyed_answer(labels: &[&str], custom: bool, value: &str) -> Result<Vec<String>, String> {
    let service = service();
    let mut question = QuestionInfo::new(
        "Which?",
        "Which",
        labels.iter().map(|label| QuestionOption::new(*label, "")),
    )
    .multiple();
    question.custom = custom;
    let mut pending = submit(&service, "s", vec![question]);
    let keyed = BTreeMap::from([("Which?".to_owned(), value.to_owned())]);
    match service.reply_keyed(pending.id(), &keyed) {
        Ok(_recorded) => match poll_once(&mut pending) {
            Some(Ok(mut answers)) => Ok(answers.remove(0)),
            other => panic!("a keyed reply was taken, but the asker got {other:?}"),
        },
        Err(ReplyError::Invalid(error)) => Err(error.to_string()),
        Err(other) => panic!("a keyed reply failed other than as invalid: {other:?}"),
    }
}

#[test]
fn keyed_values_keep_labels_whole_only_on_whole_pieces() {
    let labels = ["a, b", "a, b, c, d", "c", "b, c"];
    for (value, expected) in [
        // The longest label starting at a piece wins, then the split goes on after it.
        ("a, b, c, d, a, b, c", &["a, b, c, d", "a, b", "c"][..]),
        ("x, b, c", &["x", "b, c"]),
        // A label that starts or ends inside a piece is no selection.
        ("ab, c", &["ab", "c"]),
        ("a, bc", &["a", "bc"]),
        ("a, b, cd", &["a, b", "cd"]),
    ] {
        assert_eq!(
            keyed_answer(&labels, true, value),
            Ok(expected.iter().map(|choice| (*choice).to_owned()).collect()),
            "{value:?}"
        );
    }
}

/// Answers are checked under the registry's lock, so their cost must not grow faster than
/// their size. A label of 30,000 pieces against a value of 30,000 pieces took the split,
/// which joined every candidate run to compare it, hours: now one pass.
#[test]
fn hostile_keyed_values_and_long_answers_are_checked_in_linear_time() {
    let label = format!("x{}", ", ".repeat(30_000));
    let refused = keyed_answer(&[&label, "y"], true, &", ".repeat(30_000));
    assert!(
        refused
            .as_ref()
            .is_err_and(|message| message.contains("an empty string is not an answer")),
        "{refused:?}"
    );
    // The long label is still found whole where it stands.
    let value = format!("y, {label}");
    let whole = keyed_answer(&[&label, "y"], false, &value);
    assert_eq!(whole, Ok(vec!["y".to_owned(), label.clone()]));

    // 20,000 distinct custom choices, then one again: the duplicate is found past the
    // scan of short answers.
    let mut choices: Vec<String> = (0..20_000).map(|n| format!("choice {n}")).collect();
    choices.push("choice 7".to_owned());
    let service = service();
    let pending = submit(
        &service,
        "s",
        vec![QuestionInfo::new("Which?", "Which", []).multiple()],
    );
    let refused = service.reply(pending.id(), vec![choices]);
    assert!(
        matches!(&refused, Err(ReplyError::Invalid(error)) if error.to_string().contains("\"choice 7\" is selected twice")),
        "{refused:?}"
    );

    // 1,000 offered labels without custom answers: every one is found, and one not
    // offered is refused.
    let offered: Vec<String> = (0..1_000).map(|n| format!("option {n}")).collect();
    let labels: Vec<&str> = offered.iter().map(String::as_str).collect();
    let all = offered.join(", ");
    assert_eq!(
        keyed_answer(&labels, false, &all).map(|answer| answer.len()),
        Ok(1_000)
    );
    let refused = keyed_answer(&labels, false, &format!("{all}, option 1000"));
    assert!(
        refused.as_ref().is_err_and(
            |message| message.contains("\"option 1000\" is not one of the offered options")
        ),
        "{refused:?}"
    );
}

// ---------------------------------------------------------------------------------------
// One outcome per request
// ---------------------------------------------------------------------------------------

/// Ways a request can reach its outcome.
#[derive(Debug, Clone, Copy)]
enum Resolve {
    Reply,
    Reject,
    Cancel,
    CancelSession,
    DropFuture,
    TimeOut,
}

#[tokio::test(start_paused = true)]
async fn a_resolved_request_refuses_every_later_resolution() {
    let cases = [
        (Resolve::Reply, OutcomeKind::Replied),
        (Resolve::Reject, OutcomeKind::Rejected),
        (Resolve::Cancel, OutcomeKind::Cancelled),
        (Resolve::CancelSession, OutcomeKind::Cancelled),
        (Resolve::DropFuture, OutcomeKind::Cancelled),
        (Resolve::TimeOut, OutcomeKind::TimedOut),
    ];
    for (first, outcome) in cases {
        let service = service();
        let mut subscription = service.bus().subscribe_all();
        let pending = service
            .ask("s", vec![language()])
            .timeout(Duration::from_secs(5))
            .submit()
            .expect("valid");
        let id = pending.id();
        let mut pending = Some(pending);
        match first {
            Resolve::Reply => service
                .reply(id, answers(&[&["Go"]]))
                .map(drop)
                .expect("first reply"),
            Resolve::Reject => service.reject(id, None).map(drop).expect("first reject"),
            Resolve::Cancel => service.cancel(id).map(drop).expect("first cancel"),
            Resolve::CancelSession => assert_eq!(service.cancel_session("s"), 1),
            Resolve::DropFuture => drop(pending.take()),
            Resolve::TimeOut => {
                advance(Duration::from_secs(5)).await;
                settle().await;
            }
        }
        let refused = ReplyError::AlreadyResolved { id, outcome };
        assert_eq!(
            service.reply(id, answers(&[&["Rust"]])).map(drop),
            Err(refused.clone()),
            "{first:?}"
        );
        assert_eq!(
            service.reject(id, Some("late".into())).map(drop),
            Err(refused.clone())
        );
        assert_eq!(service.cancel(id).map(drop), Err(refused.clone()));
        assert_eq!(
            service.reply_keyed(id, &BTreeMap::new()).map(drop),
            Err(refused.clone())
        );
        assert_eq!(service.cancel_session("s"), 0);
        let message = refused.to_string();
        assert!(message.contains(&id.to_string()), "{message}");
        assert!(message.contains(outcome.as_str()), "{message}");

        assert_eq!(
            service.get(id).and_then(|s| s.outcome).map(|o| o.kind()),
            Some(outcome)
        );
        if let Some(pending) = pending {
            let expected = match first {
                Resolve::Reply => Ok(answers(&[&["Go"]])),
                Resolve::Reject => Err(AskError::Rejected { reason: None }),
                Resolve::TimeOut => Err(AskError::TimedOut),
                _ => Err(AskError::Cancelled),
            };
            assert_eq!(pending.await, expected, "{first:?}");
        }
        // Advancing past the deadline of a resolved request changes nothing.
        advance(Duration::from_secs(10)).await;
        settle().await;
        assert_eq!(
            events(&mut subscription),
            [
                QuestionEvent::Asked(id),
                QuestionEvent::Terminal(id, outcome)
            ],
            "{first:?}"
        );
    }
}

#[tokio::test]
async fn an_unknown_id_is_not_found() {
    let service = service();
    let id = unknown_id();
    assert_eq!(
        service.reply(id, vec![]).map(drop),
        Err(ReplyError::NotFound(id))
    );
    assert_eq!(
        service.reply_keyed(id, &BTreeMap::new()).map(drop),
        Err(ReplyError::NotFound(id))
    );
    assert_eq!(
        service.reject(id, None).map(drop),
        Err(ReplyError::NotFound(id))
    );
    assert_eq!(service.cancel(id).map(drop), Err(ReplyError::NotFound(id)));
    assert_eq!(service.wait(id).await, Err(ReplyError::NotFound(id)));
    assert!(service.get(id).is_none());
    let message = ReplyError::NotFound(id).to_string();
    assert!(message.contains(&id.to_string()), "{message}");

    // An id from another service is unknown here too.
    let other = QuestionService::new(Bus::new());
    let elsewhere = submit(&other, "s", vec![language()]);
    assert_eq!(
        service
            .reply(elsewhere.id(), answers(&[&["Rust"]]))
            .map(drop),
        Err(ReplyError::NotFound(elsewhere.id()))
    );
}

#[test]
fn only_the_most_recent_resolved_requests_are_remembered() {
    let config = QuestionConfig {
        retain_resolved: 2,
        ..QuestionConfig::default()
    };
    let service = QuestionService::with_config(Bus::new(), config);
    let ids: Vec<QuestionId> = (0..3)
        .map(|_| {
            let pending = submit(&service, "s", vec![language()]);
            let id = pending.id();
            service.reject(id, None).map(drop).expect("pending");
            id
        })
        .collect();
    assert_eq!(
        service.reject(ids[0], None).map(drop),
        Err(ReplyError::NotFound(ids[0]))
    );
    for &id in &ids[1..] {
        assert_eq!(
            service.reject(id, None).map(drop),
            Err(ReplyError::AlreadyResolved {
                id,
                outcome: OutcomeKind::Rejected
            })
        );
    }
}

// ---------------------------------------------------------------------------------------
// Drop and detach
// ---------------------------------------------------------------------------------------

#[test]
fn dropping_the_pending_question_cancels_it() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let pending = submit(&service, "s", vec![language()]);
    let id = pending.id();
    assert_eq!(service.pending_count(), 1);
    drop(pending);

    assert_eq!(service.pending_count(), 0);
    assert!(service.list(None).is_empty());
    assert!(service.list(Some("s")).is_empty());
    assert_eq!(
        events(&mut subscription),
        [
            QuestionEvent::Asked(id),
            QuestionEvent::Terminal(id, OutcomeKind::Cancelled)
        ]
    );
    assert_eq!(
        service.get(id).and_then(|snapshot| snapshot.outcome),
        Some(Outcome::Cancelled)
    );
}

#[tokio::test]
async fn dropping_a_started_ask_future_cancels_it() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let mut asking = Box::pin(service.ask("s", vec![language()]).into_future());
    assert!(poll_once(asking.as_mut()).is_none(), "waits for a human");
    let id = service.list(None)[0].id;
    drop(asking);

    assert_eq!(service.pending_count(), 0);
    assert!(service.list(None).is_empty());
    let envelopes = ready_envelopes(&mut subscription);
    assert_eq!(envelopes.len(), 2);
    assert_eq!(
        question_event(&envelopes[1]),
        Some(QuestionEvent::Terminal(id, OutcomeKind::Cancelled))
    );
    let frame: Value = serde_json::from_str(envelopes[1].json()).expect("JSON");
    assert_eq!(frame["type"], "question.cancelled");
    assert_eq!(
        frame["properties"],
        json!({"sessionID": "s", "requestID": id.to_string()})
    );
}

#[tokio::test]
async fn an_ask_future_never_polled_asks_nothing() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let asking = service.ask("s", vec![language()]);
    drop(asking);
    assert_eq!(service.pending_count(), 0);
    assert!(events(&mut subscription).is_empty());
}

#[test]
fn dropping_an_answered_question_publishes_nothing_more() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let pending = submit(&service, "s", vec![language()]);
    let id = pending.id();
    service
        .reply(id, answers(&[&["Rust"]]))
        .map(drop)
        .expect("pending");
    drop(pending);
    assert_eq!(
        events(&mut subscription),
        [
            QuestionEvent::Asked(id),
            QuestionEvent::Terminal(id, OutcomeKind::Replied)
        ]
    );
}

#[tokio::test]
async fn a_detached_question_stays_pending_and_wait_collects_the_reply() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let request = submit(&service, "s", vec![language()]).detach();
    let id = request.id;
    settle().await;
    assert_eq!(service.pending_count(), 1);
    assert_eq!(service.list(None)[0].id, id);

    // A wait that is dropped does not cancel either.
    let mut abandoned = Box::pin(service.wait(id));
    assert!(poll_once(abandoned.as_mut()).is_none());
    drop(abandoned);
    assert_eq!(service.pending_count(), 1);

    let waiter = tokio::spawn({
        let service = service.clone();
        async move { service.wait(id).await }
    });
    settle().await;
    service
        .reply(id, answers(&[&["Go"]]))
        .map(drop)
        .expect("pending");
    let outcome = waiter.await.expect("waiter ran");
    assert_eq!(outcome, Ok(Outcome::Replied(answers(&[&["Go"]]).into())));
    assert_eq!(
        events(&mut subscription),
        [
            QuestionEvent::Asked(id),
            QuestionEvent::Terminal(id, OutcomeKind::Replied)
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Timeouts (paused time)
// ---------------------------------------------------------------------------------------

/// The request JSON's `createdAt` and `expiresAt`.
fn request_times(request: &QuestionRequest) -> (u64, Option<u64>) {
    let json = serde_json::to_value(request).expect("serialises");
    let created_at = json["createdAt"].as_u64().expect("createdAt is a number");
    (
        created_at,
        json.get("expiresAt")
            .map(|at| at.as_u64().expect("a number")),
    )
}

#[tokio::test(start_paused = true)]
async fn the_default_timeout_fires_at_600_seconds_not_before() {
    assert_eq!(
        QuestionConfig::default().default_timeout,
        Some(Duration::from_secs(600))
    );
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let started = Instant::now();
    let mut pending = service.ask("s", vec![language()]).submit().expect("valid");
    let id = pending.id();
    let (created_at, expires_at) = request_times(pending.request());
    assert_eq!(expires_at, Some(created_at + 600_000));

    advance(Duration::from_secs(599)).await;
    settle().await;
    assert!(poll_once(&mut pending).is_none(), "not before 600 s");
    assert_eq!(service.pending_count(), 1);
    assert_eq!(events(&mut subscription), [QuestionEvent::Asked(id)]);

    advance(Duration::from_secs(1)).await;
    assert_eq!(pending.await, Err(AskError::TimedOut));
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(600),
        "at 600 s exactly"
    );
    assert_eq!(service.pending_count(), 0);
    assert_eq!(
        events(&mut subscription),
        [QuestionEvent::Terminal(id, OutcomeKind::TimedOut)]
    );
    assert_eq!(
        service.reply(id, answers(&[&["Rust"]])).map(drop),
        Err(ReplyError::AlreadyResolved {
            id,
            outcome: OutcomeKind::TimedOut
        })
    );
    assert_eq!(
        service.wait(id).await,
        Ok(Outcome::TimedOut),
        "wait on a resolved request answers at once"
    );
}

#[tokio::test(start_paused = true)]
async fn timeout_after_and_a_configured_default() {
    let config = QuestionConfig {
        default_timeout: Some(Duration::from_secs(30)),
        ..QuestionConfig::default()
    };
    let service = QuestionService::with_config(Bus::new(), config);
    let started = Instant::now();
    let by_default = service.ask("s", vec![language()]).submit().expect("valid");
    let mut explicit = service
        .ask("s", vec![language()])
        .timeout(Duration::from_millis(1500))
        .submit()
        .expect("valid");
    let (created_at, expires_at) = request_times(explicit.request());
    assert_eq!(expires_at, Some(created_at + 1500));
    let (created_at, expires_at) = request_times(by_default.request());
    assert_eq!(expires_at, Some(created_at + 30_000));

    advance(Duration::from_millis(1499)).await;
    settle().await;
    assert!(poll_once(&mut explicit).is_none());
    advance(Duration::from_millis(1)).await;
    assert_eq!(explicit.await, Err(AskError::TimedOut));
    assert_eq!(started.elapsed(), Duration::from_millis(1500));
    assert_eq!(service.pending_count(), 1, "the 30 s one still waits");

    assert_eq!(by_default.await, Err(AskError::TimedOut));
    assert_eq!(started.elapsed(), Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn timeout_never_waits_forever() {
    let no_default = QuestionConfig {
        default_timeout: None,
        ..QuestionConfig::default()
    };
    let services = [
        (service(), Timeout::Never),
        (
            QuestionService::with_config(Bus::new(), no_default),
            Timeout::Default,
        ),
    ];
    for (service, timeout) in services {
        let mut pending = service
            .ask("s", vec![language()])
            .timeout(timeout)
            .submit()
            .expect("valid");
        assert_eq!(pending.request().expires_at, None);
        let json = serde_json::to_value(pending.request()).expect("serialises");
        assert!(json.get("expiresAt").is_none(), "{json}");

        advance(Duration::from_secs(24 * 60 * 60)).await;
        settle().await;
        assert!(poll_once(&mut pending).is_none());
        assert_eq!(service.pending_count(), 1);
        service
            .reply(pending.id(), answers(&[&["Go"]]))
            .map(drop)
            .expect("still pending");
        assert_eq!(pending.await, Ok(answers(&[&["Go"]])));
    }
}

#[tokio::test(start_paused = true)]
async fn ten_thousand_timeouts_share_one_timer_task() {
    const QUESTIONS: u64 = 10_000;
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let metrics = tokio::runtime::Handle::current().metrics();
    let tasks_before = metrics.num_alive_tasks();

    let mut pendings: Vec<PendingQuestion> = (0..QUESTIONS)
        .map(|n| {
            let timeout = Timeout::After(Duration::from_secs(1 + n % 100));
            service
                .ask(format!("session-{}", n % 7), vec![language()])
                .timeout(timeout)
                .submit()
                .expect("valid")
        })
        .collect();
    settle().await;
    assert_eq!(service.pending_count(), QUESTIONS as usize);
    assert!(
        metrics.num_alive_tasks() <= tasks_before + 1,
        "{} tasks for {QUESTIONS} timeouts (before: {tasks_before})",
        metrics.num_alive_tasks()
    );

    // The timer task expires requests in batches, yielding between them.
    advance(Duration::from_secs(50)).await;
    settle_until(|| service.pending_count() <= 5_000).await;
    settle().await;
    assert_eq!(service.pending_count(), 5_000, "those of 1..=50 s are gone");

    advance(Duration::from_secs(50)).await;
    settle_until(|| service.pending_count() == 0).await;
    assert_eq!(service.pending_count(), 0);
    for pending in &mut pendings {
        assert_eq!(poll_once(pending), Some(Err(AskError::TimedOut)));
    }
    let outcomes = outcomes_in_stream(&ready_envelopes(&mut subscription));
    assert_eq!(outcomes.len(), QUESTIONS as usize);
    assert!(
        outcomes
            .values()
            .all(|outcome| *outcome == Some(OutcomeKind::TimedOut))
    );
    assert!(metrics.num_alive_tasks() <= tasks_before + 1);
}

// ---------------------------------------------------------------------------------------
// Sessions, listing, get, wait
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn cancel_session_cancels_only_that_session() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let mut alpha: Vec<PendingQuestion> = (0..3)
        .map(|_| submit(&service, "alpha", vec![language()]))
        .collect();
    let mut beta: Vec<PendingQuestion> = (0..2)
        .map(|_| submit(&service, "beta", vec![language()]))
        .collect();
    let beta_ids: Vec<QuestionId> = beta.iter().map(PendingQuestion::id).collect();
    let answered = submit(&service, "alpha", vec![language()]);
    service
        .reply(answered.id(), answers(&[&["Rust"]]))
        .map(drop)
        .expect("pending");
    ready_envelopes(&mut subscription);

    assert_eq!(service.cancel_session("alpha"), 3);
    assert_eq!(service.pending_count(), 2);
    assert!(service.list(Some("alpha")).is_empty());
    let listed: Vec<QuestionId> = service
        .list(None)
        .iter()
        .map(|request| request.id)
        .collect();
    assert_eq!(listed, beta_ids);
    for pending in &mut alpha {
        assert_eq!(poll_once(pending), Some(Err(AskError::Cancelled)));
    }
    for pending in &mut beta {
        assert!(poll_once(pending).is_none(), "beta still waits");
    }
    let cancelled: Vec<QuestionEvent> = events(&mut subscription);
    assert_eq!(
        cancelled,
        alpha
            .iter()
            .map(|pending| QuestionEvent::Terminal(pending.id(), OutcomeKind::Cancelled))
            .collect::<Vec<_>>()
    );
    assert_eq!(service.cancel_session("alpha"), 0);
    assert_eq!(service.cancel_session("nobody"), 0);
    assert_eq!(service.pending_count(), 2);
}

#[test]
fn list_is_ascending_and_filters_by_session() {
    let service = service();
    let sessions = ["a", "b", "a", "c", "b", "a"];
    let pendings: Vec<PendingQuestion> = sessions
        .iter()
        .map(|session| submit(&service, session, vec![language()]))
        .collect();
    let ids: Vec<QuestionId> = pendings.iter().map(PendingQuestion::id).collect();
    assert!(ids.windows(2).all(|pair| pair[0] < pair[1]), "ids ascend");

    let listed = |session: Option<&str>| -> Vec<QuestionId> {
        service
            .list(session)
            .iter()
            .map(|request| request.id)
            .collect()
    };
    assert_eq!(listed(None), ids);
    assert_eq!(listed(Some("a")), [ids[0], ids[2], ids[5]]);
    assert_eq!(listed(Some("b")), [ids[1], ids[4]]);
    assert_eq!(listed(Some("nobody")), []);

    service.reject(ids[2], None).map(drop).expect("pending");
    assert_eq!(listed(Some("a")), [ids[0], ids[5]]);
    assert_eq!(listed(None).len(), 5);
    assert_eq!(service.pending_count(), 5);
}

#[tokio::test]
async fn get_and_wait_report_pending_then_resolved() {
    let service = service();
    let pending = submit(&service, "s", vec![language(), targets()]);
    let id = pending.id();
    let snapshot = service.get(id).expect("pending is found");
    assert!(Arc::ptr_eq(&snapshot.request, pending.request()));
    assert_eq!(snapshot.outcome, None);

    let given = answers(&[&["Rust"], &["Linux", "BSD, Solaris"]]);
    service.reply(id, given.clone()).map(drop).expect("pending");
    let snapshot = service.get(id).expect("remembered");
    assert_eq!(snapshot.request.questions, vec![language(), targets()]);
    assert_eq!(
        snapshot.outcome,
        Some(Outcome::Replied(given.clone().into()))
    );
    assert_eq!(
        poll_once(service.wait(id)),
        Some(Ok(Outcome::Replied(given.clone().into()))),
        "wait on a resolved request answers at once"
    );
    assert_eq!(pending.await, Ok(given));

    let rejected = submit(&service, "s", vec![language()]);
    service
        .reject(rejected.id(), Some("not now".into()))
        .map(drop)
        .expect("pending");
    let reason = Some("not now".to_owned());
    assert_eq!(
        service
            .get(rejected.id())
            .and_then(|snapshot| snapshot.outcome),
        Some(Outcome::Rejected {
            reason: reason.clone()
        })
    );
    assert_eq!(rejected.await, Err(AskError::Rejected { reason }));
}

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn every_request_has_one_terminal_event_after_its_asked_event() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let ask = |session: &str, timeout: Timeout| {
        service
            .ask(session, vec![language()])
            .timeout(timeout)
            .submit()
            .expect("valid")
    };
    let ten_seconds = Timeout::After(Duration::from_secs(10));
    let replied = ask("a", ten_seconds);
    let rejected = ask("a", ten_seconds);
    let cancelled = ask("a", ten_seconds);
    let dropped = ask("a", ten_seconds);
    let session_cancelled = ask("b", ten_seconds);
    let timed_out = ask("c", ten_seconds);
    let still_pending = ask("d", Timeout::Never).detach();
    let expected = BTreeMap::from([
        (replied.id(), Some(OutcomeKind::Replied)),
        (rejected.id(), Some(OutcomeKind::Rejected)),
        (cancelled.id(), Some(OutcomeKind::Cancelled)),
        (dropped.id(), Some(OutcomeKind::Cancelled)),
        (session_cancelled.id(), Some(OutcomeKind::Cancelled)),
        (timed_out.id(), Some(OutcomeKind::TimedOut)),
        (still_pending.id, None),
    ]);

    advance(Duration::from_secs(5)).await;
    service
        .reply(replied.id(), answers(&[&["Rust"]]))
        .map(drop)
        .expect("pending");
    service
        .reject(rejected.id(), None)
        .map(drop)
        .expect("pending");
    service.cancel(cancelled.id()).map(drop).expect("pending");
    drop(dropped);
    assert_eq!(service.cancel_session("b"), 1);
    advance(Duration::from_secs(5)).await;
    settle().await;
    // A second round of resolutions changes nothing.
    for id in expected
        .keys()
        .copied()
        .filter(|id| *id != still_pending.id)
    {
        assert!(service.cancel(id).map(drop).is_err());
    }

    let outcomes = outcomes_in_stream(&ready_envelopes(&mut subscription));
    assert_eq!(outcomes, expected);
    assert_eq!(service.pending_count(), 1);
}

#[tokio::test]
async fn question_events_use_opencode_wire_names() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let tool = ToolRef {
        message_id: "msg_1".into(),
        call_id: "call_1".into(),
    };
    let pending = service
        .ask("ses_1", vec![language(), targets()])
        .tool(tool)
        .submit()
        .expect("valid");
    let id = pending.id();
    let (created_at, _) = request_times(pending.request());
    service
        .reply(id, answers(&[&["Rust"], &["Linux", "macOS"]]))
        .map(drop)
        .expect("pending");
    let rejected = submit(&service, "ses_1", vec![language()]);
    service
        .reject(rejected.id(), Some("not now".into()))
        .map(drop)
        .expect("pending");
    let rejected_silently = submit(&service, "ses_1", vec![language()]);
    service
        .reject(rejected_silently.id(), None)
        .map(drop)
        .expect("pending");

    let frames: Vec<Value> = ready_envelopes(&mut subscription)
        .iter()
        .map(|envelope| serde_json::from_str(envelope.json()).expect("JSON"))
        .collect();
    let types: Vec<&str> = frames
        .iter()
        .map(|frame| frame["type"].as_str().expect("type"))
        .collect();
    assert_eq!(
        types,
        [
            "question.asked",
            "question.replied",
            "question.asked",
            "question.rejected",
            "question.asked",
            "question.rejected"
        ]
    );
    assert_eq!(
        frames[0]["properties"],
        json!({
            "id": id.to_string(),
            "sessionID": "ses_1",
            "approvalKey": "ses_1_1",
            "questions": [
                {
                    "question": "Which language?",
                    "header": "Language",
                    "options": [
                        {"label": "Rust", "description": "fast"},
                        {"label": "Go", "description": "simple"}
                    ],
                    "multiple": false,
                    "custom": true
                },
                {
                    "question": "Which targets?",
                    "header": "Targets",
                    "options": [
                        {"label": "Linux", "description": ""},
                        {"label": "macOS", "description": ""},
                        {"label": "BSD, Solaris", "description": "the other Unixes"}
                    ],
                    "multiple": true,
                    "custom": false
                }
            ],
            "tool": {"messageID": "msg_1", "callID": "call_1"},
            "createdAt": created_at,
            "expiresAt": created_at + 600_000,
            "askedBy": {"name": "local", "role": "admin"}
        })
    );
    assert!(id.to_string().starts_with("que_"));
    assert_eq!(
        frames[1]["properties"],
        json!({
            "sessionID": "ses_1",
            "requestID": id.to_string(),
            "answers": [["Rust"], ["Linux", "macOS"]],
            "answeredBy": {"name": "local", "role": "admin"}
        })
    );
    assert_eq!(
        frames[3]["properties"],
        json!({
            "sessionID": "ses_1",
            "requestID": rejected.id().to_string(),
            "reason": "not now",
            "answeredBy": {"name": "local", "role": "admin"}
        })
    );
    assert_eq!(
        frames[5]["properties"],
        json!({
            "sessionID": "ses_1",
            "requestID": rejected_silently.id().to_string(),
            "answeredBy": {"name": "local", "role": "admin"}
        })
    );

    // The request JSON reads back as the same request (OpenCode clients send it back).
    let request: QuestionRequest =
        serde_json::from_value(frames[0]["properties"].clone()).expect("deserialises");
    assert_eq!(&request, pending.request().as_ref());
}

#[tokio::test(start_paused = true)]
async fn timed_out_event_names_session_and_request() {
    let service = service();
    let mut subscription = service.bus().subscribe_all();
    let pending = service
        .ask("ses_2", vec![language()])
        .timeout(Duration::from_secs(1))
        .submit()
        .expect("valid");
    let id = pending.id();
    assert_eq!(pending.await, Err(AskError::TimedOut));
    let envelopes = ready_envelopes(&mut subscription);
    let frame: Value = serde_json::from_str(envelopes[1].json()).expect("JSON");
    assert_eq!(
        frame,
        json!({
            "id": envelopes[1].id().to_string(),
            "type": "question.timed_out",
            "properties": {"sessionID": "ses_2", "requestID": id.to_string()}
        })
    );
}

/// The builder's settings reach the request: its tool call, its timeout and its locale;
/// a locale that is no language tag asks nothing.
#[tokio::test(start_paused = true)]
async fn the_ask_builder_carries_tool_timeout_and_locale() {
    let service = service();
    let call = ToolRef {
        message_id: "m1".into(),
        call_id: "c1".into(),
    };
    let pending = service
        .ask("s", vec![language()])
        .tool(call.clone())
        .timeout(Duration::from_secs(30))
        .locale("vi")
        .submit()
        .unwrap();
    let request = pending.request().clone();
    assert_eq!(request.tool, Some(call));
    assert_eq!(request.locale.as_deref(), Some("vi"));
    assert_eq!(request.expires_at, Some(request.created_at + 30_000));
    assert_eq!(pending.await, Err(AskError::TimedOut));

    let refused = service.ask("s", vec![language()]).locale("vi_VN").submit();
    assert!(
        matches!(&refused, Err(SubmitError::Invalid(invalid)) if invalid.to_string().contains("no language tag")),
        "{refused:?}"
    );
    assert_eq!(service.pending_count(), 0);
}
