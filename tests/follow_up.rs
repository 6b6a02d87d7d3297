//! Follow-ups: reminders, escalations and fallbacks on expiry, on paused time.

use std::sync::Arc;
use std::time::Duration;

use askbus::bus::Envelope;
use askbus::question::{
    Action, ApprovalReply, AskError, Decision, Duties, FollowUp, Identity, OnTimeout, Outcome,
    RequestHub, ReviewConfig, Role, SubmitError,
};
use askbus_store::{ChangeKind, HistoryPage, MemoryStore, Store};

use crate::support::{answers, language, ready_envelopes, roomy_bus, settle};

const SECOND: Duration = Duration::from_secs(1);

/// The types of the follow-up and outcome events in `envelopes`, in order.
fn types(envelopes: &[Envelope]) -> Vec<String> {
    envelopes
        .iter()
        .map(|envelope| envelope.event_type().to_owned())
        .collect()
}

fn properties(envelope: &Envelope) -> serde_json::Value {
    serde_json::from_str(envelope.properties_json()).unwrap()
}

/// Advances paused time by `by` and lets the timer task run.
async fn advance(by: Duration) {
    tokio::time::advance(by).await;
    settle().await;
}

#[tokio::test(start_paused = true)]
async fn reminders_and_escalations_fire_once_at_their_time_and_in_order() {
    let hub = RequestHub::new(roomy_bus());
    let mut events = hub.bus().subscribe_all();
    let pending = hub
        .questions()
        .ask("s", vec![language()])
        .timeout(100 * SECOND)
        .follow_up(
            FollowUp::default()
                .remind_after(10 * SECOND)
                .escalate_after(20 * SECOND, ["bob"]),
        )
        .submit()
        .unwrap();
    assert_eq!(types(&ready_envelopes(&mut events)), ["question.asked"]);
    assert_eq!(pending.request().escalate_to, ["bob"]);
    assert_eq!(
        pending.request().remind_at,
        Some(pending.request().created_at + 10_000)
    );

    advance(10 * SECOND - Duration::from_millis(1)).await;
    assert!(
        ready_envelopes(&mut events).is_empty(),
        "not before its time"
    );
    advance(Duration::from_millis(1)).await;
    let reminded = ready_envelopes(&mut events);
    assert_eq!(types(&reminded), ["question.reminded"]);
    assert_eq!(
        properties(&reminded[0])["requestID"],
        pending.id().to_string()
    );

    advance(10 * SECOND).await;
    let escalated = ready_envelopes(&mut events);
    assert_eq!(types(&escalated), ["question.escalated"]);
    assert_eq!(
        properties(&escalated[0])["escalatedTo"],
        serde_json::json!(["bob"])
    );

    advance(50 * SECOND).await;
    assert!(ready_envelopes(&mut events).is_empty(), "each fires once");
    drop(
        hub.questions()
            .reply(pending.id(), answers(&[&["Rust"]]))
            .unwrap(),
    );
    assert_eq!(pending.await.unwrap(), answers(&[&["Rust"]]));
    assert_eq!(types(&ready_envelopes(&mut events)), ["question.replied"]);
}

#[tokio::test(start_paused = true)]
async fn a_request_answered_before_its_reminder_is_never_reminded() {
    let hub = RequestHub::new(roomy_bus());
    let mut events = hub.bus().subscribe_all();
    let pending = hub
        .approvals()
        .request("s", vec![Action::new("deploy", serde_json::json!({}))])
        .timeout(100 * SECOND)
        .follow_up(
            FollowUp::default()
                .remind_after(10 * SECOND)
                .escalate_after(20 * SECOND, ["bob"]),
        )
        .submit()
        .unwrap();
    advance(5 * SECOND).await;
    drop(
        hub.approvals()
            .reply(pending.id(), ApprovalReply::new([Decision::Approve]))
            .unwrap(),
    );
    advance(200 * SECOND).await;
    assert_eq!(
        types(&ready_envelopes(&mut events)),
        ["approval.asked", "approval.replied"]
    );
    assert!(pending.await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_default_answer_reaches_the_asker_as_a_fallback_and_the_audit_log_says_so() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let hub = RequestHub::builder()
        .bus(roomy_bus())
        .store(Arc::clone(&store))
        .build()
        .await
        .unwrap();
    let mut events = hub.bus().subscribe_all();
    let pending = hub
        .questions()
        .ask("s", vec![language()])
        .timeout(30 * SECOND)
        .follow_up(FollowUp::default().on_timeout(OnTimeout::Answer(answers(&[&["Go"]]))))
        .submit()
        .unwrap();
    let id = pending.id();
    let asked = tokio::spawn(pending);
    advance(30 * SECOND).await;
    assert_eq!(
        asked.await.unwrap(),
        Err(AskError::DefaultApplied {
            answers: answers(&[&["Go"]])
        }),
        "a fallback, never Ok(answers)"
    );
    let timed_out = ready_envelopes(&mut events).pop().unwrap();
    assert_eq!(timed_out.event_type(), "question.timed_out");
    assert_eq!(properties(&timed_out)["fallback"], "default_answer");
    assert_eq!(
        properties(&timed_out)["defaultAnswers"],
        serde_json::json!([["Go"]])
    );
    assert!(properties(&timed_out).get("answers").is_none());
    let snapshot = hub.questions().get(id).unwrap();
    assert_eq!(
        snapshot.outcome,
        Some(Outcome::Defaulted(answers(&[&["Go"]]).into()))
    );
    assert_eq!(snapshot.decided_by, None, "nobody decided it");

    let entries = store.audit_entries(0, 10).await.unwrap();
    let draft: serde_json::Value = serde_json::from_str(&entries[0].draft).unwrap();
    assert_eq!(draft["outcome"], "timed_out");
    assert_eq!(draft["decision"]["fallback"], "default_answer");
    assert_eq!(draft["decision"]["answers"], serde_json::json!([["Go"]]));

    // Read back after a restart: still a fallback, not a reply.
    let restarted = RequestHub::builder()
        .bus(roomy_bus())
        .store(store)
        .build()
        .await
        .unwrap();
    assert_eq!(
        restarted.questions().get(id).unwrap().outcome,
        Some(Outcome::Defaulted(answers(&[&["Go"]]).into()))
    );
}

#[tokio::test(start_paused = true)]
async fn a_default_answer_is_checked_as_a_reply_and_refused_for_approvals() {
    let hub = RequestHub::new(roomy_bus());
    let refused = hub
        .questions()
        .ask("s", vec![language().options_only()])
        .timeout(30 * SECOND)
        .follow_up(FollowUp::default().on_timeout(OnTimeout::Answer(answers(&[&["Cobol"]]))))
        .submit();
    assert!(
        matches!(refused, Err(SubmitError::Invalid(_))),
        "{refused:?}"
    );
    let refused = hub
        .approvals()
        .request("s", vec![Action::new("deploy", serde_json::json!({}))])
        .timeout(30 * SECOND)
        .follow_up(FollowUp::default().on_timeout(OnTimeout::Answer(answers(&[&["approve"]]))))
        .submit();
    let Err(SubmitError::Invalid(invalid)) = refused else {
        panic!("an approval takes no default answer: {refused:?}");
    };
    assert!(
        invalid.to_string().contains("approved by waiting"),
        "{invalid}"
    );
    let late = hub
        .questions()
        .ask("s", vec![language()])
        .timeout(30 * SECOND)
        .follow_up(FollowUp::default().remind_after(30 * SECOND))
        .submit();
    assert!(
        matches!(late, Err(SubmitError::Invalid(_))),
        "a reminder after the deadline"
    );
    let nobody = hub
        .questions()
        .ask("s", vec![language()])
        .timeout(30 * SECOND)
        .follow_up(FollowUp {
            escalate_after: Some(SECOND),
            ..FollowUp::default()
        })
        .submit();
    assert!(
        matches!(nobody, Err(SubmitError::Invalid(_))),
        "nobody to escalate to"
    );
    assert_eq!(
        hub.questions().pending_count() + hub.approvals().pending_count(),
        0
    );
}

#[tokio::test(start_paused = true)]
async fn escalate_on_expiry_escalates_waits_once_more_then_rejects() {
    let hub = RequestHub::new(roomy_bus());
    let mut events = hub.bus().subscribe_all();
    let pending = hub
        .approvals()
        .request("s", vec![Action::new("deploy", serde_json::json!({}))])
        .timeout(60 * SECOND)
        .follow_up(FollowUp {
            escalate_to: vec!["bob".into()],
            ..FollowUp::default().on_timeout(OnTimeout::Escalate)
        })
        .submit()
        .unwrap();
    let request = Arc::clone(pending.request());
    assert_eq!(request.expires_at, Some(request.created_at + 120_000));
    assert_eq!(request.escalate_at, Some(request.created_at + 60_000));
    let asked = tokio::spawn(pending);
    ready_envelopes(&mut events);
    advance(60 * SECOND).await;
    assert_eq!(types(&ready_envelopes(&mut events)), ["approval.escalated"]);
    assert!(!asked.is_finished(), "the deadline was extended once");
    advance(60 * SECOND).await;
    let timed_out = ready_envelopes(&mut events);
    assert_eq!(types(&timed_out), ["approval.timed_out"]);
    assert_eq!(properties(&timed_out[0])["fallback"], "escalate");
    assert!(matches!(
        asked.await.unwrap(),
        Err(askbus::question::ApprovalError::TimedOut)
    ));
}

#[tokio::test(start_paused = true)]
async fn an_escalation_lets_escalate_to_decide_beside_the_named_reviewers_and_nobody_else() {
    let reviewer = |name: &str| Identity::new(name, Role::Reviewer);
    let hub = RequestHub::new(roomy_bus()).with_duties(Duties::default());
    let review =
        ReviewConfig::new("deploy", askbus::question::DecisionType::ALL).with_reviewers(["alice"]);
    let pending = hub
        .approvals()
        .request("s", vec![Action::new("deploy", serde_json::json!({}))])
        .review(vec![review])
        .timeout(100 * SECOND)
        .follow_up(FollowUp::default().escalate_after(10 * SECOND, ["bob"]))
        .submit()
        .unwrap();
    let id = pending.id();
    let approve = |who: &str| {
        hub.acting_as(reviewer(who))
            .approvals()
            .reply(id, ApprovalReply::new([Decision::Approve]))
    };
    assert!(approve("bob").is_err(), "not before the escalation");
    advance(10 * SECOND).await;
    assert!(approve("carol").is_err(), "nobody else");
    approve("bob").unwrap().await.unwrap();
    assert_eq!(pending.await.unwrap().decisions, [Decision::Approve]);
}

/// Escalating adds deciders, so an ask joins an earlier request of the same tool call only
/// if it escalates to the same people: an agent that asks first, naming whom its call
/// escalates to, must not choose who decides the call its runtime's guard then asks about.
#[tokio::test(start_paused = true)]
async fn a_call_joins_only_a_request_escalating_to_the_same_people() {
    let hub = RequestHub::new(roomy_bus()).with_duties(Duties::default());
    let review = || {
        ReviewConfig::new("deploy", askbus::question::DecisionType::ALL).with_reviewers(["alice"])
    };
    let call = || vec![Action::new("deploy", serde_json::json!({})).with_tool_use_id("toolu_1")];
    let ask = |escalating: bool| {
        let asked = hub
            .approvals()
            .request("s", call())
            .review(vec![review()])
            .timeout(100 * SECOND);
        if escalating {
            asked.follow_up(FollowUp::default().escalate_after(SECOND, ["bob"]))
        } else {
            asked
        }
        .submit()
    };
    let agents = ask(true).unwrap();
    // The guard's ask of the same call, reviewed by alice alone: refused, not joined.
    let guards = ask(false);
    assert!(
        matches!(&guards, Err(SubmitError::Invalid(error)) if error.to_string().contains("already names approval request")),
        "{guards:?}"
    );
    // The same ask again joins it.
    let again = ask(true).unwrap();
    assert_eq!(again.id(), agents.id());
}

#[tokio::test]
async fn over_a_shared_store_one_instance_fires_and_every_bus_hears_it_once() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let hub = |store: Arc<dyn Store>| async move {
        RequestHub::builder()
            .bus(roomy_bus())
            .store(store)
            .shared()
            .build()
            .await
            .unwrap()
    };
    let (a, b) = (hub(Arc::clone(&store)).await, hub(Arc::clone(&store)).await);
    let (mut events_a, mut events_b) = (a.bus().subscribe_all(), b.bus().subscribe_all());
    let pending = a
        .questions()
        .ask("s", vec![language()])
        .timeout(Duration::from_secs(60))
        .follow_up(FollowUp::default().remind_after(Duration::from_millis(50)))
        .submit()
        .unwrap();
    let reminded = |envelopes: &[Envelope]| {
        envelopes
            .iter()
            .filter(|envelope| envelope.event_type() == "question.reminded")
            .count()
    };
    let (mut seen_a, mut seen_b) = (Vec::new(), Vec::new());
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        seen_a.extend(ready_envelopes(&mut events_a));
        seen_b.extend(ready_envelopes(&mut events_b));
        if reminded(&seen_a) > 0 && reminded(&seen_b) > 0 {
            break;
        }
    }
    // Time for a second reminder, if some instance were to fire one.
    tokio::time::sleep(Duration::from_millis(300)).await;
    seen_a.extend(ready_envelopes(&mut events_a));
    seen_b.extend(ready_envelopes(&mut events_b));
    assert_eq!(
        (reminded(&seen_a), reminded(&seen_b)),
        (1, 1),
        "{:?} {:?}",
        types(&seen_a),
        types(&seen_b)
    );
    let history = store.history("s", HistoryPage::From(0), 100).await.unwrap();
    let records = history
        .iter()
        .filter(|record| {
            matches!(&record.entry, ChangeKind::Event(event) if event.event_type == "question.reminded")
        })
        .count();
    assert_eq!(records, 1, "one record in the session's history");
    drop(pending);
}
