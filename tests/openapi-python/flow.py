"""Drives askbus through the client openapi-python-client generated from its /openapi.json.

Run by tests/openapi_clients.rs: `python flow.py URL` with the token in `ASKBUS_TOKEN` and
the generated project on `PYTHONPATH`. Only the generated client talks to the server, and
it is told to fail on any status the document does not list. Prints one JSON summary line,
which the Rust test checks against what the server holds.
"""

import json
import os
import sys

from askbus_client import AuthenticatedClient
from askbus_client.api.approval import approval_create, approval_reply, approval_wait
from askbus_client.api.question import (
    question_create,
    question_get,
    question_reply,
    question_wait,
)
from askbus_client.api.session import session_interrupt
from askbus_client.models import (
    Action,
    ActionArgs,
    ApprovalReply,
    ApprovalRequest,
    ApprovalStatus,
    CreateApproval,
    CreateQuestion,
    DecisionType0,
    DecisionType0Type,
    Interrupt,
    InterruptState,
    PendingRequestKind,
    QuestionInfo,
    QuestionOption,
    QuestionRequest,
    QuestionStatus,
    ReplyAnswers,
    RequestState,
)


def expect(value, kind):
    """`value` if it is a `kind`; otherwise the run fails naming what came instead."""
    if not isinstance(value, kind):
        raise SystemExit(f"expected a {kind.__name__}, got {value!r}")
    return value


def ask(client, session):
    """Asks two questions in `session`: one choice (custom text allowed), and several."""
    body = CreateQuestion(
        session_id=session,
        questions=[
            QuestionInfo(
                question="Which language?",
                header="Language",
                options=[
                    QuestionOption(label="Rust", description="fast"),
                    QuestionOption(label="Go", description="simple"),
                ],
            ),
            QuestionInfo(
                question="Which targets?",
                header="Targets",
                options=[QuestionOption(label="Linux"), QuestionOption(label="macOS")],
                multiple=True,
                custom=False,
            ),
        ],
    )
    return expect(question_create.sync(client=client, body=body), QuestionRequest)


def main():
    client = AuthenticatedClient(
        base_url=sys.argv[1],
        token=os.environ["ASKBUS_TOKEN"],
        raise_on_unexpected_status=True,
    )

    # A question: asked, waited on (still pending), answered, read back.
    question = ask(client, "ses_python_question")
    waited = expect(question_wait.sync(question.id, client=client, timeout=0), QuestionStatus)
    assert waited.status == RequestState.PENDING, waited
    answers = [["Rust"], ["Linux", "macOS"]]
    replied = question_reply.sync(question.id, client=client, body=ReplyAnswers(answers=answers))
    assert replied is True, replied
    answered = expect(question_get.sync(question.id, client=client), QuestionStatus)

    # An approval of one tool call: requested, approved, waited on.
    approval = expect(
        approval_create.sync(
            client=client,
            body=CreateApproval(
                session_id="ses_python_approval",
                action_requests=[
                    Action(name="delete_rows", args=ActionArgs.from_dict({"table": "users"}))
                ],
            ),
        ),
        ApprovalRequest,
    )
    decision = DecisionType0(type_=DecisionType0Type.APPROVE)
    decided = approval_reply.sync(
        approval.id, client=client, body=ApprovalReply(decisions=[decision])
    )
    assert decided is True, decided
    approved = expect(approval_wait.sync(approval.id, client=client, timeout=1), ApprovalStatus)

    # A session waiting on a question: its interrupt state (seed 002).
    interrupting = ask(client, "ses_python_interrupt")
    interrupt = expect(
        session_interrupt.sync("ses_python_interrupt", client=client), Interrupt
    )
    state = expect(interrupt.state, InterruptState)
    assert state.kind == PendingRequestKind.QUESTION, state
    assert expect(state.request, QuestionRequest).id == interrupting.id, state

    print(
        json.dumps(
            {
                "question": {
                    "id": answered.id,
                    "status": str(answered.status),
                    "answers": answered.answers,
                },
                "approval": {"id": approved.id, "status": str(approved.status)},
                "interrupt": {
                    "interrupted": interrupt.interrupted,
                    "kind": str(state.kind),
                    "session_id": state.session_id,
                    "checkpoint_id": state.checkpoint_id,
                },
            }
        )
    )


main()
