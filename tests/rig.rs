//! The rig adapter (`askbus::tool::rig`): the question and approval tools run the way a rig
//! agent runs tools, through rig's object-safe `ErasedTool::execute` with raw JSON
//! arguments.

use askbus::Bus;
use askbus::question::{ApprovalReply, ApprovalService, Decision, EditedAction, QuestionService};
use askbus::tool::rig::{AskbusCall, RigApprovalTool, RigQuestionTool};
use askbus::tool::{
    APPROVAL_TOOL_NAME, ApprovalTool, ApprovalToolOutcome, QUESTION_TOOL_NAME, QuestionTool,
    ToolDefinition, ToolOutcome,
};
use rig_core::tool::{ErasedTool, ToolContext, ToolErrorKind};
use serde_json::json;

const ARGS: &str = r#"{"questions": [{"question": "Which database?", "header": "Database",
    "options": [{"label": "SQLite", "description": "embedded"},
                {"label": "Postgres", "description": "a server"}]}]}"#;

/// The call the model asks a human to review.
const ACTIONS: &str = r#"{"actions": [{"name": "delete_rows", "args": {"table": "users"},
    "description": "Delete the expired users"}]}"#;

fn rig_tool(questions: &QuestionService) -> RigQuestionTool {
    RigQuestionTool::new(QuestionTool::new(questions.clone()), "rig-default")
}

fn rig_approval_tool(approvals: &ApprovalService) -> RigApprovalTool {
    RigApprovalTool::new(ApprovalTool::new(approvals.clone()), "rig-default")
}

/// A rig context whose runtime says the call is `call_1` of `msg_1` in `session`.
fn call_context(session: &str) -> ToolContext {
    let mut context = ToolContext::new();
    context
        .insert(AskbusCall {
            session_id: session.into(),
            message_id: Some("msg_1".into()),
            call_id: Some("call_1".into()),
        })
        .unwrap();
    context
}

/// What `list` returns once it returns something: the human waiting for a request.
async fn pending<T>(list: impl Fn() -> Vec<T>) -> Vec<T> {
    loop {
        let pending = list();
        if !pending.is_empty() {
            return pending;
        }
        tokio::task::yield_now().await;
    }
}

#[test]
fn the_rig_tools_have_the_askbus_tools_names_and_schemas() {
    let check = |tool: &dyn ErasedTool, name: &str, definition: ToolDefinition| {
        assert_eq!(tool.name(), name);
        assert_eq!(tool.description(), definition.description);
        assert_eq!(tool.parameters(), definition.parameters);
    };
    let questions = QuestionService::new(Bus::new());
    let definition = QuestionTool::new(questions.clone()).definition();
    check(&rig_tool(&questions), QUESTION_TOOL_NAME, definition);
    let approvals = ApprovalService::new(Bus::new());
    let definition = ApprovalTool::new(approvals.clone()).definition();
    check(
        &rig_approval_tool(&approvals),
        APPROVAL_TOOL_NAME,
        definition,
    );
}

#[tokio::test]
async fn an_answer_reaches_the_model_and_the_outcome_the_runtime() {
    let questions = QuestionService::new(Bus::new());
    let tool = rig_tool(&questions);
    let mut context = call_context("ses_rig");
    let human = async {
        let pending = pending(|| questions.list(Some("ses_rig"))).await;
        let tool_ref = pending[0].tool.clone().unwrap();
        assert_eq!(
            (tool_ref.message_id.as_str(), tool_ref.call_id.as_str()),
            ("msg_1", "call_1")
        );
        drop(
            questions
                .reply(pending[0].id, vec![vec!["Postgres".into()]])
                .unwrap(),
        );
    };
    let (result, ()) = tokio::join!(tool.execute(ARGS.to_owned(), &mut context), human);

    assert!(result.is_success(), "{result:?}");
    assert_eq!(
        result.output().as_text(),
        Some(
            r#"User has answered your questions: "Which database?"="Postgres". You can now continue with the user's answers in mind."#
        )
    );
    let ToolOutcome::Answered { answers } = context.result::<ToolOutcome>().unwrap().unwrap()
    else {
        panic!("the runtime should read an answered outcome");
    };
    assert_eq!(answers[0].answer, vec!["Postgres".to_string()]);
}

#[tokio::test]
async fn without_a_call_context_the_default_session_asks_and_a_rejection_is_an_outcome() {
    let questions = QuestionService::new(Bus::new());
    let tool = rig_tool(&questions);
    let mut context = ToolContext::new();
    let human = async {
        let pending = pending(|| questions.list(Some("rig-default"))).await;
        assert_eq!(pending[0].tool, None);
        drop(
            questions
                .reject(pending[0].id, Some("not now".into()))
                .unwrap(),
        );
    };
    let (result, ()) = tokio::join!(tool.execute(ARGS.to_owned(), &mut context), human);

    assert!(
        result.is_success(),
        "a rejection is news for the model, not an error"
    );
    let text = result.output().as_text().unwrap();
    assert!(
        text.contains("not now") && text.contains("Do not assume or invent"),
        "{text}"
    );
    assert_eq!(
        context.result::<ToolOutcome>().unwrap(),
        Some(ToolOutcome::Rejected {
            reason: Some("not now".into())
        })
    );
}

/// Calls the rig approval tool with [`ACTIONS`] in `context`; the human (this test) finds
/// the request in `session` and decides `decision`. The model must read `expected`, and the
/// runtime the decision as the outcome.
async fn check_review(mut context: ToolContext, session: &str, decision: Decision, expected: &str) {
    let approvals = ApprovalService::new(Bus::new());
    let tool = rig_approval_tool(&approvals);
    let human = async {
        let pending = pending(|| approvals.list(Some(session))).await;
        let reply = ApprovalReply::new([decision.clone()]);
        drop(approvals.reply(pending[0].id, reply).unwrap());
    };
    let (result, ()) = tokio::join!(tool.execute(ACTIONS.to_owned(), &mut context), human);

    assert!(
        result.is_success(),
        "a decision is news for the model: {result:?}"
    );
    assert_eq!(result.output().as_text(), Some(expected));
    assert_eq!(
        context.result::<ApprovalToolOutcome>().unwrap(),
        Some(ApprovalToolOutcome::Decided(ApprovalReply::new([decision])))
    );
}

#[tokio::test]
async fn an_approved_call_is_the_one_the_model_may_run() {
    check_review(
        call_context("ses_rig"),
        "ses_rig",
        Decision::Approve,
        r#"A human approved this call to `delete_rows` with {"table":"users"}: run it as you proposed."#,
    )
    .await;
}

#[tokio::test]
async fn an_edited_call_is_replaced_by_the_humans() {
    let edited = EditedAction {
        name: "delete_rows".into(),
        args: json!({"table": "sessions"}),
    };
    check_review(
        call_context("ses_rig"),
        "ses_rig",
        Decision::Edit {
            edited_action: edited,
        },
        r#"A human replaced this call to `delete_rows` with {"table":"users"}: run `delete_rows` with {"table":"sessions"} instead, not your original call."#,
    )
    .await;
}

#[tokio::test]
async fn without_a_call_context_the_default_session_reviews_and_a_rejected_call_may_not_run() {
    check_review(
        ToolContext::new(),
        "rig-default",
        Decision::Reject {
            message: Some("not in production".into()),
        },
        "A human reviewed this call to `delete_rows`; do not run it. Their answer: not in production",
    )
    .await;
}

/// Calls `tool` with `args`, which it must refuse as invalid, telling the model `feedback`.
async fn check_invalid(tool: &dyn ErasedTool, args: serde_json::Value, feedback: &str) {
    let mut context = ToolContext::new();
    let result = tool.execute(args.to_string(), &mut context).await;
    let error = result.error().expect("the call must fail");
    assert_eq!(error.kind(), ToolErrorKind::InvalidArgs);
    let told = error.model_output().as_text().unwrap();
    assert!(told.contains(feedback), "{told}");
}

#[tokio::test]
async fn bad_arguments_are_invalid_args_with_askbus_feedback_for_the_model() {
    let questions = QuestionService::new(Bus::new());
    check_invalid(&rig_tool(&questions), json!({"questions": []}), "question").await;
    assert!(questions.list(None).is_empty(), "nothing may be asked");
    let approvals = ApprovalService::new(Bus::new());
    let tool = rig_approval_tool(&approvals);
    check_invalid(&tool, json!({"actions": []}), "at least one action").await;
    assert!(approvals.list(None).is_empty(), "nothing may be requested");
}
