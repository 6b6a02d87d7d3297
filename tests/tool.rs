//! The LLM question tool through its public API: definitions, calls, outcome texts.

use std::time::Duration;

use askbus::Bus;
use askbus::question::{NO_PREFERENCE, QuestionService, Timeout};
use askbus::tool::{QuestionTool, ToolContext, ToolError, ToolOutcome, ToolOutput};
use serde_json::{Value, json};

fn tool() -> (QuestionService, QuestionTool) {
    let questions = QuestionService::new(Bus::new());
    (questions.clone(), QuestionTool::new(questions))
}

fn two_questions() -> Value {
    json!({"questions": [
        {"question": "Which language?", "header": "Language",
         "options": [{"label": "Rust", "description": "fast"}, {"label": "Go", "description": "simple"}]},
        {"question": "Which targets?", "header": "Targets", "multiple": true,
         "options": [{"label": "Linux", "description": ""}, {"label": "macOS", "description": ""}]}
    ]})
}

/// Calls the tool with `args` while `human` answers the one pending request of `session-1`.
async fn call_and_answer(
    args: Value,
    human: impl FnOnce(&QuestionService, askbus::QuestionId),
) -> Result<ToolOutput, ToolError> {
    let (questions, tool) = tool();
    let call = tool.call(
        ToolContext::new("session-1").with_call("msg-1", "call-1"),
        args,
    );
    let answer = async {
        tokio::task::yield_now().await;
        let pending = questions.list(Some("session-1"));
        assert_eq!(
            pending.len(),
            1,
            "the call should have asked exactly one request"
        );
        human(&questions, pending[0].id);
    };
    tokio::join!(call, answer).0
}

#[test]
fn definitions_render_in_every_llm_shape() {
    let definition = tool().1.definition();
    // Key order is not part of the wire, and depends on whether some crate in the build
    // turned on serde_json's `preserve_order`: snapshots sort it.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!("openai_tool", definition.to_openai());
        insta::assert_json_snapshot!("anthropic_tool", definition.to_anthropic());
        insta::assert_json_snapshot!("mcp_tool", definition.to_mcp());
    });
}

#[test]
fn schema_keeps_custom_answers_out_of_the_models_hands() {
    let parameters = tool().1.definition().parameters;
    assert_eq!(parameters["required"], json!(["questions"]));
    let question = &parameters["properties"]["questions"]["items"];
    assert!(question["properties"].get("custom").is_none());
    assert_eq!(question["properties"]["header"]["maxLength"], json!(30));
    assert!(parameters.get("$ref").is_none() && parameters.get("$defs").is_none());
}

#[tokio::test]
async fn answers_read_back_as_question_answer_pairs() {
    let output = call_and_answer(two_questions(), |questions, id| {
        questions
            .reply(
                id,
                vec![vec!["Rust".into()], vec!["Linux".into(), "macOS".into()]],
            )
            .unwrap();
    })
    .await
    .unwrap();
    assert_eq!(
        output.text,
        r#"User has answered your questions: "Which language?"="Rust", "Which targets?"="Linux, macOS". You can now continue with the user's answers in mind."#
    );
    let ToolOutcome::Answered { answers } = output.outcome else {
        panic!("expected answers, got {:?}", output.outcome)
    };
    assert_eq!(answers[1].question, "Which targets?");
    assert_eq!(answers[1].answer, vec!["Linux", "macOS"]);
}

#[tokio::test]
async fn skipped_questions_read_as_unanswered() {
    let output = call_and_answer(two_questions(), |questions, id| {
        questions
            .reply(id, vec![vec![NO_PREFERENCE.into()], vec![]])
            .unwrap();
    })
    .await
    .unwrap();
    assert_eq!(
        output.text,
        r#"User has answered your questions: "Which language?"="Unanswered", "Which targets?"="Unanswered". You can now continue with the user's answers in mind."#
    );
}

#[tokio::test]
async fn the_call_carries_its_tool_reference() {
    let (questions, tool) = tool();
    let call = tool.call(
        ToolContext::new("session-1").with_call("msg-9", "call-9"),
        two_questions(),
    );
    let check = async {
        tokio::task::yield_now().await;
        let request = &questions.list(None)[0];
        let tool_ref = request.tool.as_ref().unwrap();
        assert_eq!(
            (tool_ref.message_id.as_str(), tool_ref.call_id.as_str()),
            ("msg-9", "call-9")
        );
        assert!(request.questions.iter().all(|info| info.custom));
        questions.cancel_session("session-1");
    };
    let (output, ()) = tokio::join!(call, check);
    assert_eq!(output.unwrap().outcome, ToolOutcome::Cancelled);
}

#[tokio::test]
async fn rejection_tells_the_model_not_to_invent_an_answer() {
    let output = call_and_answer(two_questions(), |questions, id| {
        questions.reject(id, Some("not now".into())).unwrap();
    })
    .await
    .unwrap();
    assert_eq!(
        output.outcome,
        ToolOutcome::Rejected {
            reason: Some("not now".into())
        }
    );
    assert!(
        output.text.contains(r#"Their reason: "not now"."#),
        "{}",
        output.text
    );
    assert!(
        output.text.contains("Do not assume or invent answers"),
        "{}",
        output.text
    );
}

#[tokio::test(start_paused = true)]
async fn timeout_and_cancellation_have_their_own_texts() {
    let (questions, tool) = tool();
    let tool = tool.with_timeout(Timeout::After(Duration::from_secs(5)));
    let timed_out = tool
        .call(ToolContext::new("s"), two_questions())
        .await
        .unwrap();
    assert_eq!(timed_out.outcome, ToolOutcome::TimedOut);
    assert!(
        timed_out
            .text
            .contains("did not answer these questions in time")
    );

    let call = tool.call(ToolContext::new("s"), two_questions());
    let cancel = async {
        tokio::task::yield_now().await;
        assert_eq!(questions.cancel_session("s"), 1);
    };
    let (cancelled, ()) = tokio::join!(call, cancel);
    let cancelled = cancelled.unwrap();
    assert_eq!(cancelled.outcome, ToolOutcome::Cancelled);
    assert!(
        cancelled
            .text
            .contains("cancelled before the user answered")
    );
    let texts = [&timed_out.text, &cancelled.text];
    assert!(texts.iter().all(|text| text.contains("invent")));
    assert_ne!(timed_out.text, cancelled.text);
}

#[tokio::test]
async fn questions_sent_as_an_encoded_string_are_accepted() {
    let encoded = json!({"questions": two_questions()["questions"].to_string()});
    let output = call_and_answer(encoded, |questions, id| {
        questions
            .reply(id, vec![vec!["Go".into()], vec![]])
            .unwrap();
    })
    .await
    .unwrap();
    assert!(output.text.contains(r#""Which language?"="Go""#));
}

#[tokio::test]
async fn bad_arguments_explain_themselves() {
    // (arguments, a phrase the message must contain)
    let cases = [
        (json!({}), "missing field `questions`"),
        (json!({"questions": "not json"}), "expected a sequence"),
        (
            json!({"questions": [{"question": "Q?", "header": "H"}]}),
            "missing field `options`",
        ),
        (
            json!({"questions": [{"question": "Q?", "header": "H", "options": [], "custom": false}]}),
            "unknown field `custom`",
        ),
        (json!({"questions": []}), "at least one question"),
        (
            json!({"questions": [{"question": "Q?", "header": "a header that is far too long to show", "options": []}]}),
            "at most 30 are allowed",
        ),
        (
            json!({"questions": [{"question": "Q?", "header": "H", "options": [
                {"label": "A", "description": ""}, {"label": "A", "description": ""}]}]}),
            "offered twice",
        ),
    ];
    let (questions, tool) = tool();
    for (args, expected) in cases {
        let error = tool
            .call(ToolContext::new("s"), args.clone())
            .await
            .unwrap_err();
        let ToolError::InvalidArguments { message, .. } = &error;
        assert!(
            message.contains(expected),
            "{args}: {message:?} lacks {expected:?}"
        );
        assert!(
            error
                .to_string()
                .starts_with("invalid arguments for the `question` tool: ")
        );
    }
    assert_eq!(
        questions.pending_count(),
        0,
        "invalid calls must not leave requests behind"
    );
}

mod guard {
    //! The approval guard around a runtime's own tool.

    use std::sync::Mutex;
    use std::time::Duration;

    use askbus::Timeout;
    use askbus::bus::Bus;
    use askbus::question::{ApprovalReply, ApprovalService, Decision, DecisionType, EditedAction};
    use askbus::tool::{ApprovalGuard, GuardOutcome, GuardedTool, ToolContext};
    use serde_json::{Value, json};

    /// Records every run; fails when asked to delete from `audit`.
    #[derive(Default)]
    struct DeleteRows {
        runs: Mutex<Vec<Value>>,
    }

    impl GuardedTool for DeleteRows {
        fn name(&self) -> &str {
            "delete_rows"
        }

        async fn run(&self, args: Value) -> Result<String, String> {
            self.runs.lock().unwrap().push(args.clone());
            if args["table"] == "audit" {
                return Err("the audit table is append-only".into());
            }
            Ok(format!("deleted 3 rows from {}", args["table"]))
        }
    }

    /// Calls the guarded tool with `{"table": "users"}` while a human decides `decision`.
    async fn decide(
        guard: &ApprovalGuard<DeleteRows>,
        approvals: &ApprovalService,
        decision: Decision,
    ) -> askbus::tool::GuardedOutput {
        let call = guard.call(ToolContext::new("s1"), json!({"table": "users"}));
        let human = async {
            tokio::task::yield_now().await;
            let pending = approvals.list(Some("s1"));
            assert_eq!(pending.len(), 1, "the call waits for a human");
            assert_eq!(pending[0].action_requests[0].name, "delete_rows");
            approvals
                .reply(pending[0].id, ApprovalReply::new([decision]))
                .unwrap();
        };
        tokio::join!(call, human).0.unwrap()
    }

    fn guarded() -> (ApprovalGuard<DeleteRows>, ApprovalService) {
        let approvals = ApprovalService::new(Bus::new());
        (
            ApprovalGuard::new(DeleteRows::default(), approvals.clone()),
            approvals,
        )
    }

    fn runs(guard: &ApprovalGuard<DeleteRows>) -> Vec<Value> {
        guard.tool().runs.lock().unwrap().clone()
    }

    #[tokio::test]
    async fn approve_runs_the_call_as_asked() {
        let (guard, approvals) = guarded();
        let output = decide(&guard, &approvals, Decision::Approve).await;
        assert_eq!(output.text, r#"deleted 3 rows from "users""#);
        assert_eq!(runs(&guard), [json!({"table": "users"})]);
        assert!(matches!(
            output.outcome,
            GuardOutcome::Ran {
                edited: false,
                failed: false,
                ..
            }
        ));
    }

    #[tokio::test]
    async fn edit_runs_the_humans_call_and_says_so_first() {
        let (guard, approvals) = guarded();
        let edit = Decision::Edit {
            edited_action: EditedAction {
                name: "delete_rows".into(),
                args: json!({"table": "sessions"}),
            },
        };
        let output = decide(&guard, &approvals, edit).await;
        assert_eq!(runs(&guard), [json!({"table": "sessions"})]);
        assert!(
            output
                .text
                .starts_with("Note: a human replaced your call before it ran."),
            "{}",
            output.text
        );
        assert!(
            output
                .text
                .contains(r#"{"table":"sessions"} instead of {"table":"users"}"#)
        );
        assert!(output.text.ends_with(r#"deleted 3 rows from "sessions""#));
        assert!(matches!(
            output.outcome,
            GuardOutcome::Ran { edited: true, .. }
        ));
    }

    #[tokio::test]
    async fn an_edit_naming_another_tool_runs_nothing() {
        let (guard, approvals) = guarded();
        let edit = Decision::Edit {
            edited_action: EditedAction {
                name: "drop_table".into(),
                args: json!({}),
            },
        };
        let output = decide(&guard, &approvals, edit).await;
        assert!(runs(&guard).is_empty());
        assert!(output.text.contains("Nothing ran"), "{}", output.text);
    }

    #[tokio::test]
    async fn reject_and_respond_return_the_humans_words_without_running() {
        let (guard, approvals) = guarded();
        let rejected = decide(
            &guard,
            &approvals,
            Decision::Reject {
                message: Some("not in production".into()),
            },
        )
        .await;
        assert!(
            rejected.text.ends_with("Their answer: not in production"),
            "{}",
            rejected.text
        );
        let silent = decide(&guard, &approvals, Decision::Reject { message: None }).await;
        assert!(
            silent
                .text
                .contains("rejected this call to `delete_rows`; it did not run")
        );
        let responded = decide(
            &guard,
            &approvals,
            Decision::Respond {
                message: "The rows are already gone.".into(),
            },
        )
        .await;
        assert!(responded.text.ends_with("The rows are already gone."));
        assert!(runs(&guard).is_empty(), "nothing ran");
    }

    #[tokio::test]
    async fn a_failing_tool_reports_its_error_as_the_result() {
        let (guard, approvals) = guarded();
        let edit = Decision::Edit {
            edited_action: EditedAction {
                name: "delete_rows".into(),
                args: json!({"table": "audit"}),
            },
        };
        let output = decide(&guard, &approvals, edit).await;
        assert!(output.text.ends_with("the audit table is append-only"));
        assert!(matches!(
            output.outcome,
            GuardOutcome::Ran { failed: true, .. }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn nobody_deciding_in_time_runs_nothing() {
        let approvals = ApprovalService::new(Bus::new());
        let guard = ApprovalGuard::new(DeleteRows::default(), approvals.clone())
            .allowing([DecisionType::Approve, DecisionType::Reject])
            .with_timeout(Timeout::After(Duration::from_secs(60)));
        let output = guard
            .call(ToolContext::new("s1"), json!({"table": "users"}))
            .await
            .unwrap();
        assert_eq!(output.outcome, GuardOutcome::TimedOut);
        assert!(output.text.contains("did not run"), "{}", output.text);
        assert!(runs(&guard).is_empty());
    }

    #[tokio::test]
    async fn a_request_that_cannot_be_made_names_the_guarded_tool() {
        let (guard, approvals) = guarded();
        let error = guard
            .call(ToolContext::new(""), json!({"table": "users"}))
            .await
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid arguments for the `delete_rows` tool: the session id is empty"
        );
        assert_eq!(approvals.pending_count(), 0);
        assert!(runs(&guard).is_empty());
    }

    #[tokio::test]
    async fn only_the_allowed_decisions_are_offered() {
        let approvals = ApprovalService::new(Bus::new());
        let guard = ApprovalGuard::new(DeleteRows::default(), approvals.clone())
            .allowing([DecisionType::Approve, DecisionType::Reject]);
        let call = guard.call(ToolContext::new("s1"), json!({"table": "users"}));
        let human = async {
            tokio::task::yield_now().await;
            let pending = approvals.list(Some("s1"));
            let id = pending[0].id;
            let edit = Decision::Edit {
                edited_action: EditedAction {
                    name: "delete_rows".into(),
                    args: json!({}),
                },
            };
            assert!(approvals.reply(id, ApprovalReply::new([edit])).is_err());
            approvals.cancel_session("s1");
        };
        let (output, ()) = tokio::join!(call, human);
        assert_eq!(output.unwrap().outcome, GuardOutcome::Cancelled);
        assert!(runs(&guard).is_empty());
    }
}
