//! The LLM tools through their public API: definitions, calls, outcome texts; the approval
//! tool and the approval guard in their own modules.

use std::time::Duration;

use askbus::Bus;
use askbus::question::{FollowUp, NO_PREFERENCE, OnTimeout, QuestionService, RequestHub, Timeout};
use askbus::tool::{QuestionTool, ToolContext, ToolDefinition, ToolError, ToolOutcome, ToolOutput};
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

/// Pins `definition` in every LLM shape (snapshots `{prefix}openai_tool`,
/// `{prefix}anthropic_tool`, `{prefix}mcp_tool`) and checks that its schema stands alone.
fn check_definition(prefix: &str, definition: &ToolDefinition) {
    // Key order is not part of the wire, and depends on whether some crate in the build
    // turned on serde_json's `preserve_order`: snapshots sort it.
    insta::with_settings!({ sort_maps => true }, {
        insta::assert_json_snapshot!(format!("{prefix}openai_tool"), definition.to_openai());
        insta::assert_json_snapshot!(format!("{prefix}anthropic_tool"), definition.to_anthropic());
        insta::assert_json_snapshot!(format!("{prefix}mcp_tool"), definition.to_mcp());
    });
    let parameters = &definition.parameters;
    assert!(parameters.get("$ref").is_none() && parameters.get("$defs").is_none());
}

#[test]
fn definitions_render_in_every_llm_shape() {
    check_definition("", &tool().1.definition());
}

#[test]
fn schema_keeps_custom_answers_out_of_the_models_hands() {
    let parameters = tool().1.definition().parameters;
    assert_eq!(parameters["required"], json!(["questions"]));
    let question = &parameters["properties"]["questions"]["items"];
    assert!(question["properties"].get("custom").is_none());
    assert_eq!(question["properties"]["header"]["maxLength"], json!(30));
}

#[tokio::test]
async fn answers_read_back_as_question_answer_pairs() {
    let output = call_and_answer(two_questions(), |questions, id| {
        drop(
            questions
                .reply(
                    id,
                    vec![vec!["Rust".into()], vec!["Linux".into(), "macOS".into()]],
                )
                .unwrap(),
        );
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

/// A model prompted with seed 000's shape is understood: its questions verbatim
/// (`multiSelect`, the free-text "Khác"), and one with `"multiSelect": true` and neither
/// `header` nor `description`; the human answers in the seed's keyed form.
#[tokio::test]
async fn the_seeds_question_shape_is_understood() {
    let mut questions = crate::support::seed_000_questions();
    questions.as_array_mut().unwrap().push(json!({
        "question": "Nhóm ngành quan tâm?",
        "multiSelect": true,
        "options": [{"label": "Ngân hàng"}, {"label": "Thép (Steel)"}]
    }));
    let output = call_and_answer(json!({ "questions": questions }), |questions, id| {
        let asked = questions.get(id).unwrap().request;
        let multiple: Vec<bool> = asked.questions.iter().map(|info| info.multiple).collect();
        assert_eq!(multiple, [false, false, true]);
        assert!(asked.questions[0].offers_free_text() && asked.questions[0].custom);
        assert_eq!(asked.questions[2].header, "");
        let keyed = [
            (
                "Thảo muốn tập trung vào mục tiêu nào?",
                "Cổ tức bền vững (Recommended)",
            ),
            ("Thời gian nắm giữ dự kiến?", "Trên 3 năm"),
            ("Nhóm ngành quan tâm?", "Ngân hàng, Thép (Steel)"),
        ]
        .into_iter()
        .map(|(question, answer)| (question.to_owned(), answer.to_owned()))
        .collect();
        drop(questions.reply_keyed(id, &keyed).unwrap());
    })
    .await
    .unwrap();
    let ToolOutcome::Answered { answers } = output.outcome else {
        panic!("expected answers, got {:?}", output.outcome)
    };
    assert_eq!(answers[2].answer, vec!["Ngân hàng", "Thép (Steel)"]);
}

#[tokio::test]
async fn skipped_questions_read_as_unanswered() {
    let output = call_and_answer(two_questions(), |questions, id| {
        drop(
            questions
                .reply(id, vec![vec![NO_PREFERENCE.into()], vec![]])
                .unwrap(),
        );
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
        drop(questions.reject(id, Some("not now".into())).unwrap());
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

#[tokio::test(start_paused = true)]
async fn a_default_answer_says_nobody_answered_and_names_it() {
    let hub = RequestHub::new(Bus::new()).with_follow_up(FollowUp::default().on_timeout(
        OnTimeout::Answer(vec![
            vec!["Go".into()],
            vec!["Linux".into(), "macOS".into()],
        ]),
    ));
    let tool = QuestionTool::new(hub.questions().clone())
        .with_timeout(Timeout::After(Duration::from_secs(5)));
    let call = tool.submit(ToolContext::new("s"), two_questions()).unwrap();
    let id = call.request().id;
    let defaulted = call.await.unwrap();
    let ToolOutcome::DefaultApplied { answers } = &defaulted.outcome else {
        panic!("a default answer applied: {:?}", defaulted.outcome);
    };
    assert_eq!(answers.len(), 2);
    assert_eq!(answers[1].answer, ["Linux", "macOS"]);
    let text = &defaulted.text;
    assert!(
        text.starts_with("Nobody answered these questions in time."),
        "{text}"
    );
    assert!(text.contains("No human chose any answer"), "{text}");
    assert!(
        text.contains("\"Which language?\"=\"Go\"")
            && text.contains("\"Which targets?\"=\"Linux, macOS\""),
        "names each default answer: {text}"
    );
    assert!(
        text.contains("do not present them as the user's choice"),
        "{text}"
    );
    // Read back later (as by a caller that did not wait), the outcome reads the same.
    let snapshot = hub.questions().get(id).unwrap();
    assert_eq!(
        ToolOutcome::of_question(&snapshot.request, snapshot.outcome.unwrap()),
        defaulted.outcome
    );
}

#[tokio::test]
async fn questions_sent_as_an_encoded_string_are_accepted() {
    let encoded = json!({"questions": two_questions()["questions"].to_string()});
    let output = call_and_answer(encoded, |questions, id| {
        drop(
            questions
                .reply(id, vec![vec!["Go".into()], vec![]])
                .unwrap(),
        );
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
        let ToolError::InvalidArguments { message, .. } = &error else {
            panic!("not an argument error: {error}");
        };
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

#[tokio::test]
async fn over_quota_the_question_tool_asks_nothing_and_says_why() {
    let limits = askbus::question::PendingLimits {
        per_session: 1,
        ..Default::default()
    };
    let hub = askbus::question::RequestHub::new(Bus::new()).with_pending_limits(limits);
    let tool = QuestionTool::new(hub.questions().clone());
    let first = tool
        .submit(ToolContext::new("session-1"), two_questions())
        .unwrap();
    let error = tool
        .call(ToolContext::new("session-1"), two_questions())
        .await
        .unwrap_err();
    let ToolError::OverQuota {
        tool: name,
        message,
    } = &error
    else {
        panic!("not a quota error: {error}");
    };
    assert_eq!(name, "question");
    assert!(message.contains("\"session-1\""), "{message}");
    assert!(
        error.to_string().starts_with(
            "the `question` tool asked nothing, too many requests already wait for a human: "
        ),
        "{error}"
    );
    assert_eq!(hub.questions().pending_count(), 1, "nothing was asked");
    drop(first);
}

mod guard {
    //! The approval guard around a runtime's own tool.

    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use askbus::Timeout;
    use askbus::bus::Bus;
    use askbus::question::{
        ApprovalReply, ApprovalReplyError, ApprovalService, Decision, DecisionType, EditedAction,
        Outcome,
    };
    use askbus::tool::{ApprovalGuard, GuardOutcome, GuardedTool, ToolContext, ToolError};
    use futures_util::FutureExt;
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
            drop(
                approvals
                    .reply(pending[0].id, ApprovalReply::new([decision]))
                    .unwrap(),
            );
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
    async fn over_quota_nothing_is_asked_and_nothing_runs() {
        let limits = askbus::question::PendingLimits {
            total: 1,
            ..Default::default()
        };
        let hub = askbus::question::RequestHub::new(Bus::new()).with_pending_limits(limits);
        let approvals = hub.approvals().clone();
        let guard = ApprovalGuard::new(DeleteRows::default(), approvals.clone());
        // The first call waits for a human (and holds the one slot); the second ends at once.
        let waiting = guard.call(ToolContext::new("s1"), json!({"table": "tmp"}));
        let refused = guard.call(ToolContext::new("s2"), json!({"table": "users"}));
        let (ended, still_waiting) =
            futures_util::future::select(Box::pin(waiting), Box::pin(refused))
                .await
                .factor_first();
        let error = ended.unwrap_err();
        assert!(
            matches!(&error, ToolError::OverQuota { tool, .. } if tool == "delete_rows"),
            "{error}"
        );
        assert_eq!(approvals.pending_count(), 1, "only the first call waits");
        assert!(runs(&guard).is_empty(), "nothing ran");
        drop(still_waiting);
    }

    #[tokio::test]
    async fn a_guard_needing_two_reviewers_runs_only_once_two_approved() {
        use askbus::question::{Identity, RequestHub, Role};
        let hub = RequestHub::new(Bus::new());
        let guard = ApprovalGuard::new(DeleteRows::default(), hub.approvals().clone())
            .allowing([DecisionType::Approve, DecisionType::Reject])
            .needing(2)
            .reviewed_by(["alice", "bob"]);
        let call = guard.call(ToolContext::new("s1"), json!({"table": "users"}));
        let humans = async {
            tokio::task::yield_now().await;
            let pending = hub.approvals().list(Some("s1"));
            let review = &pending[0].review_configs[0];
            assert_eq!(
                (
                    review.action_name.as_str(),
                    review.quorum,
                    review.allowed_decisions.len()
                ),
                ("delete_rows", Some(2), 2)
            );
            let vote = |name: &str| {
                hub.acting_as(Identity::new(name, Role::Reviewer))
                    .approvals()
                    .reply(pending[0].id, ApprovalReply::new([Decision::Approve]))
                    .map(drop)
            };
            assert!(matches!(
                vote("carol"),
                Err(ApprovalReplyError::NotAllowed(_))
            ));
            vote("alice").unwrap();
            tokio::task::yield_now().await;
            assert!(runs(&guard).is_empty(), "one approval of two runs nothing");
            vote("bob").unwrap();
        };
        let output = tokio::join!(call, humans).0.unwrap();
        assert_eq!(runs(&guard), [json!({"table": "users"})]);
        assert!(matches!(output.outcome, GuardOutcome::Ran { .. }));
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

    /// A human's edit of `s1`'s one pending call, which the service refuses with a message
    /// containing `expected`; the call still waits for a decision.
    fn refused_edit(approvals: &ApprovalService, args: Value, name: &str, expected: &str) {
        let pending = approvals.list(Some("s1"));
        assert_eq!(pending.len(), 1, "the call waits for a human");
        let edit = Decision::Edit {
            edited_action: EditedAction {
                name: name.into(),
                args,
            },
        };
        let error = approvals
            .reply(pending[0].id, ApprovalReply::new([edit]))
            .unwrap_err();
        assert!(
            matches!(&error, ApprovalReplyError::Invalid(invalid) if invalid.action_index() == Some(0)),
            "{error}"
        );
        assert!(
            error.to_string().contains(expected),
            "{error} names {expected:?}"
        );
        assert_eq!(approvals.list(Some("s1")).len(), 1, "still pending");
    }

    #[tokio::test]
    async fn an_edit_naming_another_tool_or_without_an_object_is_refused_and_the_human_decides_again()
     {
        let (guard, approvals) = guarded();
        let call = guard.call(ToolContext::new("s1"), json!({"table": "users"}));
        let human = async {
            tokio::task::yield_now().await;
            refused_edit(
                &approvals,
                json!({}),
                "drop_database",
                r#"decisions[0].edited_action.name is "drop_database", but an `edit` keeps the action's tool "delete_rows""#,
            );
            refused_edit(
                &approvals,
                json!(["users"]),
                "delete_rows",
                "decisions[0].edited_action.args must be a JSON object of arguments, not an array",
            );
            assert!(runs(&guard).is_empty(), "nothing ran on a refused edit");
            let pending = approvals.list(Some("s1"));
            let edit = Decision::Edit {
                edited_action: EditedAction {
                    name: "delete_rows".into(),
                    args: json!({"table": "tmp"}),
                },
            };
            drop(
                approvals
                    .reply(pending[0].id, ApprovalReply::new([edit]))
                    .unwrap(),
            );
        };
        let output = tokio::join!(call, human).0.unwrap();
        assert_eq!(
            runs(&guard),
            [json!({"table": "tmp"})],
            "the valid edit ran"
        );
        assert!(matches!(
            output.outcome,
            GuardOutcome::Ran { edited: true, .. }
        ));
    }

    /// `search_rows`, whose runtime knows its parameters' schema: `limit` at most 100.
    #[derive(Default)]
    struct SearchRows {
        runs: Mutex<Vec<Value>>,
    }

    impl GuardedTool for SearchRows {
        fn name(&self) -> &str {
            "search_rows"
        }

        async fn run(&self, args: Value) -> Result<String, String> {
            self.runs.lock().unwrap().push(args);
            Ok("found 2 rows".into())
        }

        fn args_schema(&self) -> Option<Value> {
            Some(json!({
                "type": "object",
                "properties": {
                    "table": {"type": "string"},
                    "limit": {"type": "integer", "maximum": 100},
                },
                "required": ["table"],
                "additionalProperties": false,
            }))
        }
    }

    #[tokio::test]
    async fn the_tools_args_schema_checks_the_models_call_and_the_humans_edit() {
        let approvals = ApprovalService::new(Bus::new());
        let guard = ApprovalGuard::new(SearchRows::default(), approvals.clone());

        let error = guard
            .call(
                ToolContext::new("s1"),
                json!({"table": "users", "limit": 5000}),
            )
            .await
            .unwrap_err();
        let ToolError::InvalidArguments { tool, message } = &error else {
            panic!("not an argument error: {error}");
        };
        assert_eq!(tool, "search_rows");
        assert!(
            message
                .contains("action_requests[0].args.limit: 5000 is greater than the maximum of 100"),
            "{message}"
        );
        assert_eq!(approvals.pending_count(), 0, "nothing was asked");

        let call = guard.call(
            ToolContext::new("s1"),
            json!({"table": "users", "limit": 10}),
        );
        let human = async {
            tokio::task::yield_now().await;
            let pending = approvals.list(Some("s1"));
            assert!(
                pending[0].action_requests[0].args_schema.is_some(),
                "the human sees it"
            );
            refused_edit(
                &approvals,
                json!({"table": "users", "limit": 5000}),
                "search_rows",
                "decisions[0].edited_action.args.limit: 5000 is greater than the maximum of 100",
            );
            refused_edit(
                &approvals,
                json!({"limit": 5}),
                "search_rows",
                "decisions[0].edited_action.args: \"table\" is a required property",
            );
            let edit = Decision::Edit {
                edited_action: EditedAction {
                    name: "search_rows".into(),
                    args: json!({"table": "users", "limit": 100}),
                },
            };
            drop(
                approvals
                    .reply(pending[0].id, ApprovalReply::new([edit]))
                    .unwrap(),
            );
        };
        let output = tokio::join!(call, human).0.unwrap();
        assert_eq!(
            *guard.tool().runs.lock().unwrap(),
            [json!({"table": "users", "limit": 100})],
            "only the edit that fits ran"
        );
        assert!(output.text.ends_with("found 2 rows"), "{}", output.text);
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

    /// The one pending request of `s1`, approved once the guarded call has asked.
    async fn approve_the_pending_call(approvals: &ApprovalService) {
        tokio::task::yield_now().await;
        let pending = approvals.list(Some("s1"));
        assert_eq!(pending.len(), 1, "the call waits for a human");
        drop(
            approvals
                .reply(pending[0].id, ApprovalReply::new([Decision::Approve]))
                .unwrap(),
        );
    }

    /// The context of the runtime's tool call `call-1` in `s1`.
    fn call_1() -> ToolContext {
        ToolContext::new("s1").with_call("msg-1", "call-1")
    }

    #[tokio::test]
    async fn a_call_id_repeated_with_other_arguments_does_not_run_on_the_earlier_approval() {
        let (guard, approvals) = guarded();
        let first = guard.call(call_1(), json!({"table": "users"}));
        let (first, ()) = tokio::join!(first, approve_the_pending_call(&approvals));
        assert!(matches!(first.unwrap().outcome, GuardOutcome::Ran { .. }));
        let approved = approvals.id_for_key("s1_1").unwrap();

        let error = guard
            .call(call_1(), json!({"table": "invoices"}))
            .await
            .unwrap_err();
        let ToolError::InvalidArguments { tool, message } = &error else {
            panic!("not an argument error: {error}");
        };
        assert_eq!(tool, "delete_rows");
        assert!(
            message.contains(&format!(
                "tool_use_id \"call-1\" already names approval request {approved} of other calls"
            )),
            "{message}"
        );
        assert_eq!(
            runs(&guard),
            [json!({"table": "users"})],
            "the invoices were never shown to the human, so they were not deleted"
        );
        assert_eq!(approvals.pending_count(), 0, "no request was made");
        assert_eq!(
            approvals.get(approved).unwrap().outcome,
            Some(Outcome::Replied(Arc::new(ApprovalReply::new([
                Decision::Approve
            ])))),
            "the earlier request is as it was"
        );
    }

    // Paused, so a repeat that waited on the pending review would time out at once and fail.
    #[tokio::test(start_paused = true)]
    async fn a_call_id_repeated_with_other_arguments_leaves_the_pending_review_alone() {
        let (guard, approvals) = guarded();
        let first = guard.call(call_1(), json!({"table": "users"}));
        let repeat = async {
            tokio::task::yield_now().await;
            let error = guard
                .call(call_1(), json!({"table": "invoices"}))
                .await
                .unwrap_err();
            assert!(error.to_string().contains("of other calls"), "{error}");
            assert_eq!(approvals.pending_count(), 1, "the first call still waits");
            approve_the_pending_call(&approvals).await;
        };
        let (first, ()) = tokio::join!(first, repeat);
        assert_eq!(first.unwrap().text, r#"deleted 3 rows from "users""#);
        assert_eq!(runs(&guard), [json!({"table": "users"})]);
    }

    #[tokio::test]
    async fn a_retry_of_the_same_call_runs_on_its_review_without_asking_again() {
        let (guard, approvals) = guarded();
        let first = guard.call(call_1(), json!({"table": "users"}));
        let (first, ()) = tokio::join!(first, approve_the_pending_call(&approvals));
        let first = first.unwrap();

        let retry = guard
            .call(call_1(), json!({"table": "users"}))
            .now_or_never()
            .expect("a retry is decided at once: no second review")
            .unwrap();
        assert_eq!(retry, first);
        assert!(
            approvals.list(Some("s1")).is_empty(),
            "nothing new to review"
        );
        assert!(approvals.id_for_key("s1_2").is_none(), "one request in all");
        assert_eq!(runs(&guard), vec![json!({"table": "users"}); 2]);
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

mod approval_tool {
    //! The approval tool: the model proposes calls, a human decides, the model reads what
    //! it may run.

    use std::time::Duration;

    use askbus::Timeout;
    use askbus::bus::Bus;
    use askbus::question::{ApprovalReply, ApprovalService, Decision, DecisionType, EditedAction};
    use askbus::tool::{
        ApprovalTool, ApprovalToolOutcome, ApprovalToolOutput, ToolContext, ToolError,
    };
    use serde_json::{Value, json};

    fn tool() -> (ApprovalService, ApprovalTool) {
        let approvals = ApprovalService::new(Bus::new());
        (approvals.clone(), ApprovalTool::new(approvals))
    }

    fn delete_users() -> Value {
        json!({"actions": [{
            "name": "delete_rows",
            "args": {"table": "users"},
            "description": "Delete the expired users",
        }]})
    }

    /// Calls the tool with `args` while a human replies `reply` to its one request.
    async fn decide(args: Value, reply: ApprovalReply) -> ApprovalToolOutput {
        let (approvals, tool) = tool();
        let call = tool.submit(ToolContext::new("s1"), args).unwrap();
        let pending = approvals.list(Some("s1"));
        assert_eq!(pending.len(), 1, "the call made exactly one request");
        assert_eq!(pending[0].id, call.request().id);
        drop(approvals.reply(call.request().id, reply).unwrap());
        call.await.unwrap()
    }

    fn edit(name: &str, args: Value) -> Decision {
        Decision::Edit {
            edited_action: EditedAction {
                name: name.into(),
                args,
            },
        }
    }

    #[test]
    fn definitions_render_in_every_llm_shape() {
        super::check_definition("approval_", &tool().1.definition());
    }

    #[test]
    fn the_schema_asks_for_complete_calls() {
        let parameters = tool().1.definition().parameters;
        assert_eq!(parameters["required"], json!(["actions"]));
        assert_eq!(parameters["properties"]["actions"]["minItems"], json!(1));
        let action = &parameters["properties"]["actions"]["items"];
        assert_eq!(action["required"], json!(["name", "args"]));
        assert_eq!(action["properties"]["args"]["type"], "object");
    }

    #[tokio::test]
    async fn approve_tells_the_model_to_run_its_call() {
        let output = decide(delete_users(), ApprovalReply::new([Decision::Approve])).await;
        assert_eq!(
            output.text,
            r#"A human approved this call to `delete_rows` with {"table":"users"}: run it as you proposed."#
        );
        assert_eq!(
            output.outcome,
            ApprovalToolOutcome::Decided(ApprovalReply::new([Decision::Approve]))
        );
        assert_eq!(
            serde_json::to_value(&output.outcome).unwrap(),
            json!({"status": "decided", "decisions": [{"type": "approve"}]})
        );
    }

    #[tokio::test]
    async fn edit_tells_the_model_to_run_the_humans_call_instead() {
        let output = decide(
            delete_users(),
            ApprovalReply::new([edit("delete_rows", json!({"table": "sessions"}))]),
        )
        .await;
        assert_eq!(
            output.text,
            r#"A human replaced this call to `delete_rows` with {"table":"users"}: run `delete_rows` with {"table":"sessions"} instead, not your original call."#
        );
        assert_eq!(
            serde_json::to_value(&output.outcome).unwrap(),
            json!({"status": "decided", "decisions": [{"type": "edit", "edited_action":
                {"name": "delete_rows", "args": {"table": "sessions"}}}]})
        );
    }

    #[tokio::test]
    async fn edits_are_checked_as_on_every_way_in_and_the_call_waits_for_one_that_fits() {
        let (approvals, tool) = tool();
        let schema = json!({
            "type": "object",
            "properties": {"limit": {"type": "integer", "maximum": 100}},
        });
        let call = tool
            .submit(
                ToolContext::new("s1"),
                json!({"actions": [{"name": "search", "args": {"limit": 10}, "args_schema": schema}]}),
            )
            .unwrap();
        let id = call.request().id;
        for (decision, expected) in [
            (
                edit("drop_database", json!({})),
                r#"decisions[0].edited_action.name is "drop_database", but an `edit` keeps the action's tool "search""#,
            ),
            (
                edit("search", json!("limit=5")),
                "decisions[0].edited_action.args must be a JSON object of arguments, not a string",
            ),
            (
                edit("search", json!({"limit": 5000})),
                "decisions[0].edited_action.args.limit: 5000 is greater than the maximum of 100",
            ),
        ] {
            let error = approvals
                .reply(id, ApprovalReply::new([decision]))
                .unwrap_err();
            assert!(
                error.to_string().contains(expected),
                "{error} names {expected:?}"
            );
        }
        assert_eq!(approvals.pending_count(), 1, "still waiting for the human");
        drop(
            approvals
                .reply(
                    id,
                    ApprovalReply::new([edit("search", json!({"limit": 50}))]),
                )
                .unwrap(),
        );
        assert!(
            call.await
                .unwrap()
                .text
                .contains(r#"run `search` with {"limit":50} instead"#)
        );

        // Arguments the model's own schema refuses are its error: nothing is asked.
        let error = tool
            .submit(
                ToolContext::new("s1"),
                json!({"actions": [{"name": "search", "args": {"limit": 500}, "args_schema": schema}]}),
            )
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("action_requests[0].args.limit: 500 is greater than the maximum of 100"),
            "{error}"
        );
        assert_eq!(approvals.pending_count(), 0);
    }

    #[tokio::test]
    async fn reject_and_respond_tell_the_model_not_to_run_and_quote_the_human() {
        let rejected = decide(
            delete_users(),
            ApprovalReply::new([Decision::Reject {
                message: Some("not in production".into()),
            }]),
        )
        .await;
        assert_eq!(
            rejected.text,
            "A human reviewed this call to `delete_rows`; do not run it. Their answer: not in production"
        );
        let silent = decide(
            delete_users(),
            ApprovalReply::new([Decision::Reject { message: None }]),
        )
        .await;
        assert!(
            silent
                .text
                .starts_with("A human rejected this call to `delete_rows`; do not run it."),
            "{}",
            silent.text
        );
        let responded = decide(
            delete_users(),
            ApprovalReply::new([Decision::Respond {
                message: "They are already gone.".into(),
            }]),
        )
        .await;
        assert!(
            responded.text.contains("do not run it")
                && responded
                    .text
                    .ends_with("Their answer: They are already gone."),
            "{}",
            responded.text
        );
    }

    #[tokio::test]
    async fn several_calls_read_back_in_order_with_the_humans_note() {
        let args = json!({"actions": [
            {"name": "delete_rows", "args": {"table": "users"}},
            {"name": "send_email", "args": {"to": "ops@example.com"}},
        ]});
        let reply = ApprovalReply::new([
            Decision::Approve,
            Decision::Reject {
                message: Some("no email".into()),
            },
        ])
        .with_user_edit_content("Ping me on chat instead.");
        let output = decide(args, reply).await;
        assert_eq!(
            output.text,
            "The 2 calls you asked to make, in order:\n\
             1. A human approved this call to `delete_rows` with {\"table\":\"users\"}: run it as you proposed.\n\
             2. A human reviewed this call to `send_email`; do not run it. Their answer: no email\n\
             The human added: Ping me on chat instead."
        );
    }

    #[tokio::test(start_paused = true)]
    async fn timeout_and_cancellation_have_their_own_texts_and_run_nothing() {
        let (approvals, tool) = tool();
        let tool = tool.with_timeout(Timeout::After(Duration::from_secs(30)));
        let timed_out = tool
            .call(ToolContext::new("s1"), delete_users())
            .await
            .unwrap();
        assert_eq!(timed_out.outcome, ApprovalToolOutcome::TimedOut);
        assert_eq!(
            timed_out.text,
            "Nobody approved this call to `delete_rows` in time, so do not run it. Do not report it as done."
        );

        let call = tool.submit(ToolContext::new("s1"), delete_users()).unwrap();
        assert_eq!(approvals.cancel_session("s1"), 1);
        let cancelled = call.await.unwrap();
        assert_eq!(cancelled.outcome, ApprovalToolOutcome::Cancelled);
        assert_eq!(
            cancelled.text,
            "The approval of this call to `delete_rows` was cancelled (the session was stopped); do not run it."
        );
        assert_eq!(
            serde_json::to_value(&cancelled.outcome).unwrap(),
            json!({"status": "cancelled"})
        );
    }

    #[tokio::test]
    async fn dropping_the_call_cancels_the_request() {
        let (approvals, tool) = tool();
        let call = tool.submit(ToolContext::new("s1"), delete_users()).unwrap();
        let id = call.request().id;
        drop(call);
        let outcome = approvals.get(id).unwrap().outcome;
        assert_eq!(outcome, Some(askbus::question::Outcome::Cancelled));
        assert_eq!(approvals.pending_count(), 0);
    }

    #[tokio::test]
    async fn a_tool_use_id_joins_a_retry_of_the_same_calls_only() {
        let (approvals, tool) = tool();
        let with_id = |table: &str| json!({"actions": [{"name": "delete_rows", "args": {"table": table}, "tool_use_id": "t1"}]});
        let first = tool
            .submit(ToolContext::new("s1"), with_id("users"))
            .unwrap();
        let retry = tool
            .submit(ToolContext::new("s1"), with_id("users"))
            .unwrap();
        assert_eq!(retry.request().id, first.request().id, "a retry joins");

        let error = tool
            .submit(ToolContext::new("s1"), with_id("invoices"))
            .unwrap_err();
        let ToolError::InvalidArguments { message, .. } = &error else {
            panic!("not an argument error: {error}");
        };
        assert!(
            message.contains(&format!(
                "tool_use_id \"t1\" already names approval request {} of other calls",
                first.request().id
            )),
            "{message}"
        );
        assert_eq!(
            approvals.pending_count(),
            1,
            "the first request still waits"
        );

        drop(
            approvals
                .reply(first.request().id, ApprovalReply::new([Decision::Approve]))
                .unwrap(),
        );
        let (first, retry) = (first.await.unwrap(), retry.await.unwrap());
        assert_eq!(first.text, retry.text);
        assert!(
            first.text.contains(r#"{"table":"users"}"#),
            "{}",
            first.text
        );
    }

    #[tokio::test]
    async fn allowed_decisions_become_review_configs_per_tool() {
        let (approvals, tool) = tool();
        let args = json!({"actions": [
            {"name": "deploy", "args": {"env": "staging"}, "allowed_decisions": ["approve", "reject"]},
            {"name": "deploy", "args": {"env": "prod"}},
            {"name": "notify", "args": {}},
        ]});
        let call = tool.submit(ToolContext::new("s1"), args).unwrap();
        let request = call.request().clone();
        assert_eq!(request.review_configs.len(), 1);
        assert_eq!(request.review_configs[0].action_name, "deploy");
        assert_eq!(
            request.allowed_decisions(1),
            [DecisionType::Approve, DecisionType::Reject]
        );
        assert_eq!(request.allowed_decisions(2).len(), 4);
        let refused = approvals.reply(
            request.id,
            ApprovalReply::new([edit("deploy", json!({"env": "dev"}))]),
        );
        assert!(refused.is_err(), "an edit was not allowed");
        drop(
            approvals
                .reply(request.id, ApprovalReply::new([Decision::Approve]))
                .unwrap(),
        );
        let output = call.await.unwrap();
        assert!(output.text.starts_with("The 3 calls"), "{}", output.text);
    }

    #[tokio::test]
    async fn arguments_sent_as_encoded_strings_are_accepted() {
        let (approvals, tool) = tool();
        let encoded_actions = json!({"actions": delete_users()["actions"].to_string()});
        let encoded_args =
            json!({"actions": [{"name": "delete_rows", "args": r#"{"table": "users"}"#}]});
        for args in [encoded_actions, encoded_args] {
            let call = tool.submit(ToolContext::new("s1"), args).unwrap();
            assert_eq!(
                call.request().action_requests[0].args,
                json!({"table": "users"})
            );
        }
        assert_eq!(
            approvals.pending_count(),
            0,
            "dropped calls cancel their requests"
        );
    }

    #[tokio::test]
    async fn bad_arguments_explain_themselves() {
        // (arguments, a phrase the message must contain)
        let cases = [
            (json!({}), "missing field `actions`"),
            (json!({"actions": "not json"}), "expected a sequence"),
            (json!({"actions": []}), "at least one action"),
            (json!({"actions": [{"args": {}}]}), "missing field `name`"),
            (
                json!({"actions": [{"name": "  ", "args": {}}]}),
                "the action name is empty",
            ),
            (
                json!({"actions": [{"name": "x", "args": [1, 2]}]}),
                "expected a map",
            ),
            (
                json!({"actions": [{"name": "x", "args": "not json"}]}),
                "expected a map",
            ),
            (
                json!({"actions": [{"name": "x", "args": {}, "run": true}]}),
                "unknown field `run`",
            ),
            (
                json!({"actions": [{"name": "x", "args": {}, "allowed_decisions": ["maybe"]}]}),
                "unknown variant `maybe`",
            ),
            (
                json!({"actions": [{"name": "x", "args": {}, "allowed_decisions": []}]}),
                "`allowed_decisions` is empty",
            ),
            (
                json!({"actions": [
                    {"name": "x", "args": {}, "allowed_decisions": ["approve"]},
                    {"name": "x", "args": {}, "allowed_decisions": ["reject"]}]}),
                "action 2 (\"x\"): its `allowed_decisions` differ",
            ),
        ];
        let (approvals, tool) = tool();
        for (args, expected) in cases {
            let error = tool
                .call(ToolContext::new("s1"), args.clone())
                .await
                .unwrap_err();
            let ToolError::InvalidArguments { tool, message } = &error else {
                panic!("not an argument error: {error}");
            };
            assert_eq!(tool, "request_approval");
            assert!(
                message.contains(expected),
                "{args}: {message:?} lacks {expected:?}"
            );
            assert!(
                error
                    .to_string()
                    .starts_with("invalid arguments for the `request_approval` tool: ")
            );
        }
        assert_eq!(
            approvals.pending_count(),
            0,
            "invalid calls must not leave requests behind"
        );
    }
}

mod languages {
    //! The tools speak Vietnamese and Chinese: a tool made `.with_locale(..)` asks in that
    //! language (the request carries the tag, the definition is translated), and every
    //! outcome text speaks the request's language; any other tag is English.

    use std::sync::Arc;
    use std::time::Duration;

    use askbus::bus::Bus;
    use askbus::question::{
        ApprovalId, ApprovalReply, ApprovalService, Decision, EditedAction, FollowUp, OnTimeout,
        QuestionService, RequestHub, Timeout,
    };
    use askbus::tool::{
        APPROVAL_TOOL_DESCRIPTION, ApprovalGuard, ApprovalTool, GuardedTool, Language,
        QUESTION_TOOL_DESCRIPTION, QuestionTool, ToolContext, ToolDefinition, ToolOutcome,
        ToolOutput,
    };
    use serde_json::{Value, json};

    /// What a language's texts must say: a phrase of each, so a text left in English (or
    /// in the other language) fails.
    struct Phrases {
        locale: &'static str,
        question_description: &'static str,
        approval_description: &'static str,
        answered: &'static str,
        unanswered: &'static str,
        dismissed: &'static str,
        their_reason: &'static str,
        timed_out: &'static str,
        cancelled: &'static str,
        defaulted: &'static str,
        /// "invent" (answers): every question text without answers forbids it.
        invent: &'static str,
        approved: &'static str,
        replaced: &'static str,
        reviewed: &'static str,
        rejected: &'static str,
        do_not_run: &'static str,
        did_not_run: &'static str,
        nobody_approved: &'static str,
        approval_cancelled: &'static str,
        numbered: &'static str,
        human_added: &'static str,
        edited_notice: &'static str,
    }

    const VIETNAMESE: Phrases = Phrases {
        locale: "vi",
        question_description: "Đặt một hoặc nhiều câu hỏi cho người dùng",
        approval_description: "Nhờ một người xem xét các lệnh gọi công cụ",
        answered: "Người dùng đã trả lời các câu hỏi của bạn: ",
        unanswered: r#""Which targets?"="Chưa trả lời""#,
        dismissed: "Người dùng đã gạt bỏ các câu hỏi này mà không trả lời.",
        their_reason: r#"Lý do của họ: "not now"."#,
        timed_out: "Người dùng đã không trả lời các câu hỏi này kịp thời",
        cancelled: "Các câu hỏi đã bị hủy trước khi người dùng trả lời",
        defaulted: "Không ai trả lời các câu hỏi này kịp thời.",
        invent: "bịa ra",
        approved: "Một người đã phê duyệt lệnh gọi `delete_rows` này",
        replaced: "hãy chạy `delete_rows` với {\"table\":\"archive\"} thay vào đó",
        reviewed: "Một người đã xem xét lệnh gọi `delete_rows` này; đừng chạy nó. Câu trả lời của họ: use the archive",
        rejected: "Một người đã từ chối lệnh gọi `delete_rows` này; đừng chạy nó.",
        do_not_run: "đừng chạy nó",
        did_not_run: "nó đã không được chạy",
        nobody_approved: "Không ai phê duyệt lệnh gọi `delete_rows` này kịp thời",
        approval_cancelled: "Việc phê duyệt lệnh gọi `delete_rows` này đã bị hủy",
        numbered: "2 lệnh gọi bạn đã xin thực hiện, theo thứ tự:\n1. ",
        human_added: "\nNgười duyệt viết thêm: Ping me first.",
        edited_notice: "Lưu ý: một người đã thay thế lệnh gọi của bạn trước khi nó chạy.",
    };

    const CHINESE: Phrases = Phrases {
        locale: "zh-CN",
        question_description: "向用户提出一个或多个问题",
        approval_description: "在你执行工具调用之前，请人工审核这些调用",
        answered: "用户已回答你的问题：",
        unanswered: r#""Which targets?"="未回答""#,
        dismissed: "用户没有回答就关闭了这些问题。",
        their_reason: r#"他们的理由："not now"。"#,
        timed_out: "用户没有及时回答这些问题",
        cancelled: "这些问题在用户回答之前已被取消",
        defaulted: "没有人及时回答这些问题。",
        invent: "编造",
        approved: "人工审核者批准了这次以 {\"table\":\"users\"} 对 `delete_rows` 的调用",
        replaced: "请改为以 {\"table\":\"archive\"} 运行 `delete_rows`",
        reviewed: "人工审核者审阅了这次对 `delete_rows` 的调用；不要运行它。审核者的答复：use the archive",
        rejected: "人工审核者拒绝了这次对 `delete_rows` 的调用；不要运行它。",
        do_not_run: "不要运行它",
        did_not_run: "它没有运行",
        nobody_approved: "没有人及时批准这次对 `delete_rows` 的调用",
        approval_cancelled: "这次对 `delete_rows` 的调用的审批已被取消",
        numbered: "你请求执行的 2 个调用，按顺序：\n1. ",
        human_added: "\n审核者补充：Ping me first.",
        edited_notice: "注意：人工审核者在运行前替换了你的调用。",
    };

    fn two_questions() -> Value {
        super::two_questions()
    }

    /// The timeout of the tools here (paused time runs it out at once).
    const SOON: Timeout = Timeout::After(Duration::from_secs(5));

    /// A translated description: it starts as `start` says and still names `field`.
    fn check_description(definition: &ToolDefinition, start: &str, field: &str) {
        let description = &definition.description;
        assert!(description.starts_with(start), "{description}");
        contains(description, field);
    }

    fn contains(text: &str, phrase: &str) {
        assert!(text.contains(phrase), "{phrase:?} is not in {text:?}");
    }

    /// Calls `tool` in session `s` while `human` acts on its one request; returns the text
    /// and checks the request carried `locale`.
    async fn ask(
        tool: &QuestionTool,
        questions: &QuestionService,
        locale: &str,
        human: impl FnOnce(&QuestionService, askbus::QuestionId),
    ) -> ToolOutput {
        let call = tool.submit(ToolContext::new("s"), two_questions()).unwrap();
        assert_eq!(call.request().locale.as_deref(), Some(locale));
        human(questions, call.request().id);
        call.await.unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn question_outcomes_speak_the_requests_language() {
        for phrases in [VIETNAMESE, CHINESE] {
            let locale = phrases.locale;
            let questions = QuestionService::new(Bus::new());
            let tool = QuestionTool::new(questions.clone())
                .with_timeout(SOON)
                .with_locale(locale);
            check_description(
                &tool.definition(),
                phrases.question_description,
                "`multiple: true`",
            );

            let answered = ask(&tool, &questions, locale, |questions, id| {
                drop(
                    questions
                        .reply(id, vec![vec!["Go".into()], vec![]])
                        .unwrap(),
                );
            })
            .await;
            assert!(
                answered.text.starts_with(phrases.answered),
                "{}",
                answered.text
            );
            contains(&answered.text, r#""Which language?"="Go""#);
            contains(&answered.text, phrases.unanswered);

            let dismissed = ask(&tool, &questions, locale, |questions, id| {
                drop(questions.reject(id, Some("not now".into())).unwrap());
            })
            .await;
            contains(&dismissed.text, phrases.dismissed);
            contains(&dismissed.text, phrases.their_reason);
            let silently = ask(&tool, &questions, locale, |questions, id| {
                drop(questions.reject(id, None).unwrap());
            })
            .await;
            contains(&silently.text, phrases.dismissed);
            assert!(!silently.text.contains("not now"), "{}", silently.text);

            let timed_out = ask(&tool, &questions, locale, |_, _| {}).await;
            assert_eq!(timed_out.outcome, ToolOutcome::TimedOut);
            contains(&timed_out.text, phrases.timed_out);

            let cancelled = ask(&tool, &questions, locale, |questions, _| {
                assert_eq!(questions.cancel_session("s"), 1);
            })
            .await;
            assert_eq!(cancelled.outcome, ToolOutcome::Cancelled);
            contains(&cancelled.text, phrases.cancelled);

            for text in [&dismissed.text, &timed_out.text, &cancelled.text] {
                contains(text, phrases.invent);
                assert!(!text.contains("invent"), "still English: {text}");
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_default_answer_read_back_later_speaks_its_requests_language() {
        for phrases in [VIETNAMESE, CHINESE] {
            let hub = RequestHub::new(Bus::new()).with_follow_up(
                FollowUp::default().on_timeout(OnTimeout::Answer(vec![vec!["Go".into()], vec![]])),
            );
            let tool = QuestionTool::new(hub.questions().clone())
                .with_timeout(SOON)
                .with_locale(phrases.locale);
            let call = tool.submit(ToolContext::new("s"), two_questions()).unwrap();
            let id = call.request().id;
            let defaulted = call.await.unwrap();
            assert!(
                defaulted.text.starts_with(phrases.defaulted),
                "{}",
                defaulted.text
            );
            contains(&defaulted.text, phrases.unanswered);

            let snapshot = hub.questions().get(id).unwrap();
            let language = Language::of(snapshot.request.locale.as_deref());
            let read_back = ToolOutcome::of_question(&snapshot.request, snapshot.outcome.unwrap())
                .into_output(language);
            assert_eq!(read_back, defaulted);
        }
    }

    fn delete_users() -> Value {
        json!({"actions": [{"name": "delete_rows", "args": {"table": "users"}}]})
    }

    /// The human's edit: the same tool, on another table.
    fn archive_instead() -> Decision {
        Decision::Edit {
            edited_action: EditedAction {
                name: "delete_rows".into(),
                args: json!({"table": "archive"}),
            },
        }
    }

    /// Calls `tool` with `args` in session `s` while `human` acts on its one request.
    async fn review(
        tool: &ApprovalTool,
        approvals: &ApprovalService,
        locale: &str,
        args: Value,
        human: Human,
    ) -> String {
        let call = tool.submit(ToolContext::new("s"), args).unwrap();
        assert_eq!(call.request().locale.as_deref(), Some(locale));
        human(approvals, call.request().id);
        call.await.unwrap().text
    }

    /// A human's part in [`review`].
    type Human = Box<dyn FnOnce(&ApprovalService, ApprovalId)>;

    /// A human who replies `reply`.
    fn decide(reply: ApprovalReply) -> Human {
        Box::new(move |approvals, id| {
            drop(approvals.reply(id, reply).unwrap());
        })
    }

    #[tokio::test(start_paused = true)]
    async fn approval_outcomes_speak_the_requests_language() {
        for phrases in [VIETNAMESE, CHINESE] {
            let locale = phrases.locale;
            let approvals = ApprovalService::new(Bus::new());
            let tool = ApprovalTool::new(approvals.clone())
                .with_timeout(SOON)
                .with_locale(locale);
            check_description(
                &tool.definition(),
                phrases.approval_description,
                "`allowed_decisions`",
            );
            let review = |args: Value, human: Human| review(&tool, &approvals, locale, args, human);

            let approved = review(
                delete_users(),
                decide(ApprovalReply::new([Decision::Approve])),
            )
            .await;
            contains(&approved, phrases.approved);
            let replaced = review(
                delete_users(),
                decide(ApprovalReply::new([archive_instead()])),
            )
            .await;
            contains(&replaced, phrases.replaced);
            let respond = Decision::Respond {
                message: "use the archive".into(),
            };
            let reviewed = review(delete_users(), decide(ApprovalReply::new([respond]))).await;
            assert_eq!(reviewed, phrases.reviewed);
            let reject = Decision::Reject { message: None };
            let rejected = review(delete_users(), decide(ApprovalReply::new([reject]))).await;
            assert!(rejected.starts_with(phrases.rejected), "{rejected}");
            let timed_out = review(delete_users(), Box::new(|_: &ApprovalService, _| {})).await;
            contains(&timed_out, phrases.nobody_approved);
            contains(&timed_out, phrases.do_not_run);
            let cancel = |approvals: &ApprovalService, _| {
                assert_eq!(approvals.cancel_session("s"), 1);
            };
            let cancelled = review(delete_users(), Box::new(cancel)).await;
            contains(&cancelled, phrases.approval_cancelled);

            let two = json!({"actions": [
                {"name": "delete_rows", "args": {"table": "users"}},
                {"name": "delete_rows", "args": {"table": "tmp"}},
            ]});
            let both = ApprovalReply::new([Decision::Approve, Decision::Approve])
                .with_user_edit_content("Ping me first.");
            let numbered = review(two, Box::new(decide(both))).await;
            assert!(numbered.starts_with(phrases.numbered), "{numbered}");
            assert!(numbered.ends_with(phrases.human_added), "{numbered}");
        }
    }

    /// Always succeeds, naming its arguments.
    struct DeleteRows;

    impl GuardedTool for DeleteRows {
        fn name(&self) -> &str {
            "delete_rows"
        }

        async fn run(&self, args: Value) -> Result<String, String> {
            Ok(format!("ran with {args}"))
        }
    }

    #[tokio::test(start_paused = true)]
    async fn the_guard_speaks_its_locale() {
        for phrases in [VIETNAMESE, CHINESE] {
            let approvals = ApprovalService::new(Bus::new());
            let guard = ApprovalGuard::new(DeleteRows, approvals.clone())
                .with_timeout(SOON)
                .with_locale(phrases.locale);
            let call = |decision: Option<Decision>| {
                let guard = &guard;
                let approvals = approvals.clone();
                async move {
                    let call = guard.call(ToolContext::new("s"), json!({"table": "users"}));
                    let human = async {
                        tokio::task::yield_now().await;
                        let pending = approvals.list(Some("s"));
                        assert_eq!(pending[0].locale.as_deref(), Some(phrases.locale));
                        if let Some(decision) = decision {
                            drop(
                                approvals
                                    .reply(pending[0].id, ApprovalReply::new([decision]))
                                    .unwrap(),
                            );
                        }
                    };
                    tokio::join!(call, human).0.unwrap().text
                }
            };
            let edited = call(Some(archive_instead())).await;
            assert!(edited.starts_with(phrases.edited_notice), "{edited}");
            assert!(
                edited.ends_with("\n\nran with {\"table\":\"archive\"}"),
                "{edited}"
            );
            let rejected = call(Some(Decision::Reject { message: None })).await;
            contains(&rejected, phrases.did_not_run);
            let timed_out = call(None).await;
            contains(&timed_out, phrases.did_not_run);
            assert!(!timed_out.contains("did not run"), "{timed_out}");
        }
    }

    /// A tag the tools do not speak is still the request's (the web UI may), and the model
    /// reads English.
    #[tokio::test]
    async fn an_unspoken_locale_is_carried_and_the_texts_are_english() {
        let questions = QuestionService::new(Bus::new());
        let tool = QuestionTool::new(questions.clone()).with_locale("fr");
        assert_eq!(tool.definition().description, QUESTION_TOOL_DESCRIPTION);
        let answered = ask(&tool, &questions, "fr", |questions, id| {
            drop(
                questions
                    .reply(id, vec![vec!["Go".into()], vec![]])
                    .unwrap(),
            );
        })
        .await;
        assert_eq!(
            answered.text,
            r#"User has answered your questions: "Which language?"="Go", "Which targets?"="Unanswered". You can now continue with the user's answers in mind."#
        );

        let approvals = ApprovalService::new(Bus::new());
        let tool = ApprovalTool::new(approvals.clone()).with_locale(Arc::<str>::from("fr-FR"));
        assert_eq!(tool.definition().description, APPROVAL_TOOL_DESCRIPTION);
        let approved = review(
            &tool,
            &approvals,
            "fr-FR",
            delete_users(),
            decide(ApprovalReply::new([Decision::Approve])),
        )
        .await;
        assert_eq!(
            approved,
            r#"A human approved this call to `delete_rows` with {"table":"users"}: run it as you proposed."#
        );
    }
}
