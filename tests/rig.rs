//! The rig adapter (`askbus::tool::rig`): the question tool run the way a rig agent runs
//! tools, through rig's object-safe `ErasedTool::execute` with raw JSON arguments.

use askbus::Bus;
use askbus::question::QuestionService;
use askbus::tool::rig::{AskbusCall, RigQuestionTool};
use askbus::tool::{QUESTION_TOOL_NAME, QuestionTool, ToolOutcome};
use rig_core::tool::{ErasedTool, ToolContext, ToolErrorKind};
use serde_json::json;

const ARGS: &str = r#"{"questions": [{"question": "Which database?", "header": "Database",
    "options": [{"label": "SQLite", "description": "embedded"},
                {"label": "Postgres", "description": "a server"}]}]}"#;

fn rig_tool(questions: &QuestionService) -> RigQuestionTool {
    RigQuestionTool::new(QuestionTool::new(questions.clone()), "rig-default")
}

#[test]
fn the_rig_tool_has_the_question_tools_name_and_schema() {
    let questions = QuestionService::new(Bus::new());
    let tool = rig_tool(&questions);
    let definition = QuestionTool::new(questions).definition();
    assert_eq!(ErasedTool::name(&tool), QUESTION_TOOL_NAME);
    assert_eq!(ErasedTool::description(&tool), definition.description);
    assert_eq!(ErasedTool::parameters(&tool), definition.parameters);
}

#[tokio::test]
async fn an_answer_reaches_the_model_and_the_outcome_the_runtime() {
    let questions = QuestionService::new(Bus::new());
    let tool = rig_tool(&questions);
    let mut context = ToolContext::new();
    context
        .insert(AskbusCall {
            session_id: "ses_rig".into(),
            message_id: Some("msg_1".into()),
            call_id: Some("call_1".into()),
        })
        .unwrap();
    let human = async {
        let pending = loop {
            let pending = questions.list(Some("ses_rig"));
            if !pending.is_empty() {
                break pending;
            }
            tokio::task::yield_now().await;
        };
        let tool_ref = pending[0].tool.clone().unwrap();
        assert_eq!(
            (tool_ref.message_id.as_str(), tool_ref.call_id.as_str()),
            ("msg_1", "call_1")
        );
        questions
            .reply(pending[0].id, vec![vec!["Postgres".into()]])
            .unwrap();
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
        let pending = loop {
            let pending = questions.list(Some("rig-default"));
            if !pending.is_empty() {
                break pending;
            }
            tokio::task::yield_now().await;
        };
        assert_eq!(pending[0].tool, None);
        questions
            .reject(pending[0].id, Some("not now".into()))
            .unwrap();
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

#[tokio::test]
async fn bad_arguments_are_invalid_args_with_askbus_feedback_for_the_model() {
    let questions = QuestionService::new(Bus::new());
    let tool = rig_tool(&questions);
    let mut context = ToolContext::new();
    let result = tool
        .execute(json!({"questions": []}).to_string(), &mut context)
        .await;

    let error = result.error().expect("empty questions must fail");
    assert_eq!(error.kind(), ToolErrorKind::InvalidArgs);
    let feedback = error.model_output().as_text().unwrap();
    assert!(feedback.contains("question"), "{feedback}");
    assert!(questions.list(None).is_empty(), "nothing may be asked");
}
