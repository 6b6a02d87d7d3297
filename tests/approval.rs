//! Approvals, session interrupts and the confirmation detector, through the library API.

use std::time::Duration;

use askbus::bus::Bus;
use askbus::question::{
    Action, ApprovalConfig, ApprovalError, ApprovalReply, ApprovalReplyError, ApprovalService,
    ApprovalTimedOut, Decision, DecisionType, EditedAction, OutcomeKind, RequestHub, RequestId,
    ReviewConfig, SubmitError, confirmation_phrase,
};
use askbus::{QuestionInfo, Timeout};
use futures_util::StreamExt;
use serde_json::json;

fn trade(quantity: u32) -> Action {
    Action::new(
        "execute_trade",
        json!({"symbol": "VNM", "quantity": quantity}),
    )
    .with_description(format!("Buy {quantity} VNM"))
}

fn only(action: &str, allowed: &[DecisionType]) -> ReviewConfig {
    ReviewConfig::new(action, allowed.iter().copied())
}

#[test]
fn confirmation_phrases_are_found_in_any_case_and_only_as_phrases() {
    let check = |text: &str, expected: Option<&str>| {
        assert_eq!(confirmation_phrase(text), expected, "{text:?}");
    };
    check("Please confirm: delete 1,234 rows?", Some("please confirm"));
    check("ARE YOU SURE you want to deploy?", Some("are you sure"));
    check(
        "Shall I\n proceed with the migration?",
        Some("shall i proceed"),
    );
    check(
        "Do you want me to open a pull request?",
        Some("do you want me to"),
    );
    check("This step needs your approval.", Some("need your approval"));
    check(
        "I need your approval before I continue.",
        Some("need your approval"),
    );
    check(
        "Would you like me to proceed?",
        Some("would you like me to proceed"),
    );
    check(
        "Waiting for your confirmation.",
        Some("waiting for your confirmation"),
    );
    // Ordinary sentences do not interrupt anyone.
    check("I am sure the deployment went fine.", None);
    check("The proceeds were confirmed yesterday.", None);
    check("Are you surely going?", None);
    check("Here is the report you asked for.", None);
    check("", None);
}

#[tokio::test]
async fn a_decision_per_action_and_fewer_are_filled_with_the_first() {
    let approvals = ApprovalService::new(Bus::new());
    let pending = approvals
        .request("s1", vec![trade(1), trade(2), trade(3)])
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let edit = Decision::Edit {
        edited_action: EditedAction {
            name: "execute_trade".into(),
            args: json!({"symbol": "VNM", "quantity": 10}),
        },
    };
    // An edit replaces one call: it never stands for the others.
    for lone_edit in [vec![edit.clone()], vec![edit.clone(), edit.clone()]] {
        let refused = approvals
            .reply(pending.id(), ApprovalReply::new(lone_edit))
            .map(drop)
            .unwrap_err();
        assert!(refused.to_string().contains("one action only"), "{refused}");
    }
    drop(
        approvals
            .reply(pending.id(), ApprovalReply::new([Decision::Approve]))
            .unwrap(),
    );
    assert_eq!(pending.await.unwrap().decisions, vec![Decision::Approve; 3]);
}

#[tokio::test]
async fn a_decision_an_action_does_not_allow_is_refused_naming_it() {
    let approvals = ApprovalService::new(Bus::new());
    let reviews = vec![only(
        "delete_rows",
        &[DecisionType::Approve, DecisionType::Reject],
    )];
    let actions = vec![trade(1), Action::new("delete_rows", json!({}))];
    let pending = approvals
        .request("s1", actions)
        .review(reviews)
        .timeout(Timeout::Never)
        .submit()
        .unwrap();
    let respond = Decision::Respond {
        message: "use the archive".into(),
    };
    let refused = approvals
        .reply(
            pending.id(),
            ApprovalReply::new([Decision::Approve, respond]),
        )
        .map(drop)
        .unwrap_err();
    let ApprovalReplyError::Invalid(invalid) = &refused else {
        panic!("{refused:?}");
    };
    let message = invalid.to_string();
    assert!(message.contains("\"delete_rows\""), "{message}");
    assert!(message.contains("allowed: approve, reject"), "{message}");
    let too_many = approvals
        .reply(pending.id(), ApprovalReply::new(vec![Decision::Approve; 3]))
        .map(drop)
        .unwrap_err();
    assert!(
        too_many.to_string().contains("3 decisions for 2 actions"),
        "{too_many}"
    );
    assert_eq!(
        approvals.pending_count(),
        1,
        "refused replies change nothing"
    );
}

#[tokio::test]
async fn a_review_config_allowing_no_decision_is_refused_naming_the_action() {
    let approvals = ApprovalService::new(Bus::new());
    let actions = || vec![trade(1), Action::new("delete_rows", json!({}))];
    let undecidable = || vec![only("delete_rows", &[])];
    let Err(SubmitError::Invalid(refused)) = approvals
        .request("s1", actions())
        .review(undecidable())
        .timeout(Timeout::Never)
        .submit()
    else {
        panic!("an undecidable review config is invalid");
    };
    assert_eq!(
        refused.to_string(),
        "action 2 (\"delete_rows\"): its review config allows no decision (`allowed_decisions` is empty), so nobody could ever decide it; list at least one, or leave `allowed_decisions` out to allow every decision"
    );
    assert_eq!(refused.action_index(), Some(1));
    assert_eq!(
        approvals
            .request("s1", actions())
            .review(undecidable())
            .timeout(Timeout::Never)
            .await,
        Err(ApprovalError::Invalid(refused)),
        "refused at once, not left to time out"
    );
    assert_eq!(approvals.pending_count(), 0);
    assert!(approvals.id_for_key("s1_1").is_none(), "no key was used up");
}

#[tokio::test(start_paused = true)]
async fn expiry_rejects_every_action_and_is_published() {
    let bus = Bus::new();
    let mut timed_out = bus.subscribe::<ApprovalTimedOut>();
    let approvals = ApprovalService::new(bus);
    let pending = approvals
        .request("s1", vec![trade(1), trade(2)])
        .submit()
        .unwrap();
    let id = pending.id();
    let started = tokio::time::Instant::now();
    assert_eq!(pending.await, Err(ApprovalError::TimedOut));
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(300),
        "the default is 300 s"
    );
    let event = timed_out.next().await.unwrap().unwrap();
    assert_eq!(event.request_id, id);
    assert_eq!(event.decisions.len(), 2);
    assert!(event.decisions.iter().all(|decision| !decision.runs()));
    assert_eq!(
        approvals
            .reply(id, ApprovalReply::new([Decision::Approve]))
            .map(drop),
        Err(ApprovalReplyError::AlreadyResolved {
            id,
            outcome: OutcomeKind::TimedOut
        })
    );
}

#[tokio::test]
async fn keys_count_each_sessions_requests_and_address_them() {
    let approvals = ApprovalService::new(Bus::new());
    let submit = |session: &str| {
        approvals
            .request(session, vec![trade(1)])
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
    };
    let (a1, b1, a2) = (submit("a"), submit("b"), submit("a"));
    assert_eq!(&*a1.request().approval_key, "a_1");
    assert_eq!(&*b1.request().approval_key, "b_1");
    assert_eq!(&*a2.request().approval_key, "a_2");
    assert_eq!(approvals.id_for_key("a_2"), Some(a2.id()));
    drop(a2);
    assert_eq!(
        approvals.pending_count(),
        2,
        "dropping the future cancels it"
    );
    assert!(approvals.id_for_key("nobody_1").is_none());
}

#[tokio::test]
async fn a_key_never_names_a_second_request_once_its_first_is_forgotten() {
    // Remembers one resolved request: each new resolution forgets the one before.
    let approvals = ApprovalService::with_config(
        Bus::new(),
        ApprovalConfig {
            retain_resolved: 1,
            ..ApprovalConfig::default()
        },
    );
    let submit = |session: &str| {
        approvals
            .request(session, vec![trade(1)])
            .timeout(Timeout::Never)
            .submit()
            .unwrap()
            .detach()
    };
    let approve = || ApprovalReply::new([Decision::Approve]);
    let first = submit("a");
    assert_eq!(&*first.approval_key, "a_1");
    drop(approvals.reply(first.id, approve()).unwrap());
    // Another session's outcome pushes session `a`'s last request out of memory.
    let other = submit("b");
    drop(approvals.reply(other.id, approve()).unwrap());
    assert!(approvals.get(first.id).is_none(), "forgotten");
    assert!(approvals.id_for_key("a_1").is_none());
    // Session `a` asks again: a human who approves "a_1" (what they saw) must not approve
    // this new request, so it gets a key never used before.
    let second = submit("a");
    assert_ne!(&*second.approval_key, "a_1");
    assert!(
        approvals.id_for_key("a_1").is_none(),
        "the old key names nothing"
    );
    assert_eq!(approvals.id_for_key(&second.approval_key), Some(second.id));
}

#[tokio::test]
async fn the_interrupt_is_the_oldest_request_of_either_kind_even_within_a_millisecond() {
    let hub = RequestHub::new(Bus::new());
    let question = || QuestionInfo::new("Go on?", "Go", []);
    for round in 0..200 {
        let session = format!("s{round}");
        let (first, second) = if round % 2 == 0 {
            let approval = hub
                .approvals()
                .request(session.as_str(), vec![trade(1)])
                .timeout(Timeout::Never)
                .submit()
                .unwrap()
                .detach();
            let asked = hub
                .questions()
                .ask(session.as_str(), vec![question()])
                .timeout(Timeout::Never)
                .submit()
                .unwrap()
                .detach();
            (
                RequestId::Approval(approval.id),
                RequestId::Question(asked.id),
            )
        } else {
            let asked = hub
                .questions()
                .ask(session.as_str(), vec![question()])
                .timeout(Timeout::Never)
                .submit()
                .unwrap()
                .detach();
            let approval = hub
                .approvals()
                .request(session.as_str(), vec![trade(1)])
                .timeout(Timeout::Never)
                .submit()
                .unwrap()
                .detach();
            (
                RequestId::Question(asked.id),
                RequestId::Approval(approval.id),
            )
        };
        let state = hub.interrupt_state(&session).unwrap();
        assert_eq!(state.checkpoint_id, first, "round {round}");
        assert_ne!(state.checkpoint_id, second);
    }
}

#[tokio::test]
async fn model_text_that_asks_for_confirmation_becomes_an_approval() {
    let hub = RequestHub::new(Bus::new());
    let quiet = hub
        .request_confirmation("s1", "Here are the results.", Timeout::Never)
        .unwrap();
    assert!(quiet.is_none());
    let pending = hub
        .request_confirmation("s1", "Shall I proceed with the deletion?", Timeout::Never)
        .unwrap()
        .expect("an approval request");
    let state = hub.interrupt_state("s1").unwrap();
    assert_eq!(state.reason, "Shall I proceed with the deletion?");
    let refused = hub
        .approvals()
        .reply(
            pending.id(),
            ApprovalReply::new([Decision::Respond {
                message: "x".into(),
            }]),
        )
        .map(drop);
    assert!(refused.is_err(), "only approve and reject are allowed");
    hub.resume("s1", askbus::question::ResumeInput::Confirm(false), None)
        .unwrap();
    assert!(!pending.await.unwrap().decisions[0].runs());
}

/// An approval is never rejected as a whole (its outcome type has no value for it), and none
/// was ever stored so; a record that says so all the same reads back as what it was
/// announced as, every action rejected on expiry, rather than failing to read.
#[test]
fn a_stored_rejection_of_an_approval_reads_back_as_timed_out() {
    use askbus::question::{Outcome, RecordedChange};
    use askbus_store::{ChangeKind, OutcomeRecord, OutcomeState, RequestKind};

    let id = "apr_01JZ6Q3V8R5M2K7D4T9WXYZABC";
    let ended = ChangeKind::Resolved {
        kind: RequestKind::Approval,
        id: id.into(),
        outcome: OutcomeRecord::new(
            OutcomeState::Rejected,
            r#"{"reason":"no"}"#,
            1_700_000_000_000,
        ),
    };
    let Some(RecordedChange::ApprovalEnded { outcome, .. }) = RecordedChange::read(&ended).unwrap()
    else {
        panic!("an approval's outcome");
    };
    assert_eq!(outcome, Outcome::TimedOut);
}
