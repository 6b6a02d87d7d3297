//! The approval data model and its events, with the seeds' snake_case names on the wire.
//!
//! An approval request asks a human to review tool calls (`action_requests`) before they
//! run; the reply carries one [`Decision`] per action. The names (`action_requests`,
//! `review_configs`, `allowed_decisions`, `edited_action`, `user_edit_content`,
//! `approval_key`) are the seeds', so their UIs read requests and send replies unchanged.

use std::sync::Arc;

use askbus_bus::Event;

use crate::identity::Identity;
use crate::ids::{ApprovalId, VoteId};
use crate::model::OnTimeout;
use crate::outcome::OutcomeKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call the agent wants to make, shown to the human for review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Action {
    /// The tool's name.
    #[cfg_attr(feature = "openapi", schema(pattern = r"\S"))]
    pub name: String,
    /// The tool's complete arguments.
    #[cfg_attr(feature = "openapi", schema(value_type = HashMap<String, serde_json::Value>))]
    pub args: Value,
    /// The id of the model's `tool_use` block for this call, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_use_id: Option<String>,
    /// What the call does, in words for the human.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the tool's arguments, if known: `args`, and the arguments of any
    /// `edit` of this action, must fit it. It must be a valid JSON Schema that refers to
    /// nothing outside itself (nothing is fetched).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub args_schema: Option<Value>,
}

/// The decisions a human may take on the actions of one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewConfig {
    /// The tool (action name) this applies to.
    pub action_name: String,
    /// What the human may decide; absent: every decision.
    #[serde(default = "every_decision")]
    pub allowed_decisions: Vec<DecisionType>,
    /// How many distinct reviewers must take the same decisions before this tool runs:
    /// `M` of an "M of N" rule. Absent or 1: the first reply decides. Above 1, each
    /// reply is one reviewer's vote (`approval.decided`), and the request ends when `M`
    /// reviewers have decided alike, or at once when one of them runs nothing (every
    /// action rejected or responded to: a veto needs no quorum). No identity votes twice,
    /// and the asker never votes. The request's quorum is the largest of its actions'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub quorum: Option<u32>,
    /// The names of the reviewers who may decide this tool (the `N` of "M of N"); absent:
    /// any identity allowed to decide. A reviewer must be named by every review config of
    /// the request that names reviewers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reviewers: Option<Vec<String>>,
}

/// The type of a [`Decision`], as listed in [`ReviewConfig::allowed_decisions`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(
    feature = "schema",
    schemars(description = "A decision the human may take on a tool call.")
)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DecisionType {
    /// Run the action as asked.
    Approve,
    /// Run the action with other arguments.
    Edit,
    /// Do not run the action.
    Reject,
    /// Do not run the action; the human's message is its result.
    Respond,
}

/// A human's decision on one action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Decision {
    /// Run the action as asked.
    Approve,
    /// Run this action with other arguments (the human replaced the call). The edited
    /// action names the same tool, its `args` are a JSON object, and they fit the action's
    /// `args_schema` if it has one.
    Edit {
        /// The call to make instead.
        edited_action: EditedAction,
    },
    /// Do not run the action, optionally saying why.
    Reject {
        /// The human's message, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// Do not run the action; answer it with this message instead.
    Respond {
        /// What the agent gets instead of the tool's result.
        message: String,
    },
}

/// The call a human put in place of an action: the same tool, other arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EditedAction {
    /// The tool to call: the action's own.
    pub name: String,
    /// Its arguments: a JSON object.
    #[cfg_attr(feature = "openapi", schema(value_type = HashMap<String, serde_json::Value>))]
    pub args: Value,
}

/// A human's answer to an approval request.
///
/// As sent, it may hold fewer decisions than actions (the first fills the rest); as
/// delivered to the asker and published, it holds exactly one per action, by position.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalReply {
    /// One decision per action, by position.
    pub decisions: Vec<Decision>,
    /// Free text the human added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_edit_content: Option<String>,
    /// Under a quorum (`review_configs[].quorum`), every reviewer's decision, in the
    /// order they came: the outcome's `decisions` are the ones the quorum agreed on (or
    /// the veto). Empty otherwise. Set by the service: what a client sends here is
    /// ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub votes: Vec<ApprovalVote>,
    /// The grant this reply made: the human answered `always` (see
    /// [`ApprovalService::reply_always`](crate::ApprovalService::reply_always)). Set by the
    /// service: what a client sends here is ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted: Option<Box<Grant>>,
    /// The grants that approved this request without asking a human (an auto-approval: no
    /// human decided it, though it acts as the one who granted). Set by the service: what a
    /// client sends here is ignored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub auto_approved_by: Vec<Grant>,
}

/// One reviewer's decisions on a request under a quorum: a vote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalVote {
    /// The vote's id (`vot_` + an ascending ULID).
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "vot_01JZ6Q3V8R5M2K7D4T9WXYZABC"))]
    pub id: VoteId,
    /// Who decided.
    pub decided_by: Identity,
    /// Their decisions, one per action.
    pub decisions: Vec<Decision>,
    /// Their free text, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_edit_content: Option<String>,
    /// When, milliseconds since the Unix epoch.
    pub decided_at: u64,
}

/// A pending (or resolved) request to review tool calls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalRequest {
    /// Ascending id; creation order.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "apr_01JZ6Q3V8R5M2K7D4T9WXYZABC"))]
    pub id: ApprovalId,
    /// The seeds' key, `{session_id}_{n}`: the session's `n`th request (in a hub, its
    /// questions and approvals counted together). Addresses the request as well as `id`
    /// does.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "abc-123_1"))]
    pub approval_key: Arc<str>,
    /// The session (conversation, run) that asks.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub session_id: Arc<str>,
    /// The tool calls to review.
    pub action_requests: Vec<Action>,
    /// What may be decided per tool; an action without one allows every decision.
    #[serde(default)]
    pub review_configs: Vec<ReviewConfig>,
    /// Creation time, milliseconds since the Unix epoch.
    pub created_at: u64,
    /// When the request times out (every action rejected), milliseconds since the Unix
    /// epoch; absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// Who asked: the identity of the credential that made the request (`local` without
    /// credentials); absent on requests recorded before identities were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_by: Option<Identity>,
    /// When `approval.reminded` is due, milliseconds since the Unix epoch; absent: no
    /// reminder (see [`FollowUp`](crate::FollowUp)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_at: Option<u64>,
    /// When the request escalates to `escalate_to` (`approval.escalated`), milliseconds
    /// since the Unix epoch; from then on they may decide it too, beside the reviewers its
    /// review configs name. Absent: never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalate_at: Option<u64>,
    /// Who the request escalates to (credential names); empty: nobody.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate_to: Vec<String>,
    /// `escalate` when the request escalates on expiry (and waits once more) before every
    /// action is rejected; absent: rejected on expiry. Never a default answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_timeout: Option<OnTimeout>,
    /// The language the asker wrote in and its reader should see, as a BCP 47 tag
    /// (`vi`, `zh-CN`); absent: each reader's own. The web UI shows the request's card in
    /// it, the tool writes its results to the model in it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>, example = "vi"))]
    pub locale: Option<Arc<str>>,
}

/// `approval.asked`: a new request is waiting; its properties are the request itself.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub struct ApprovalAsked {
    /// The new request.
    pub request: Arc<ApprovalRequest>,
}

/// `approval.replied`: a human decided, one decision per action.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalReplied {
    /// The request's session.
    pub session_id: Arc<str>,
    /// The request answered.
    pub request_id: ApprovalId,
    /// Its key.
    pub approval_key: Arc<str>,
    /// The decisions, one per action, and the human's text.
    #[serde(flatten)]
    pub reply: Arc<ApprovalReply>,
    /// Who decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<Identity>,
}

/// `approval.decided`: one reviewer decided a request that needs a quorum
/// (`review_configs[].quorum`). Partial: the request stays pending until the quorum agrees
/// (or a veto), and then `approval.replied` follows, once, listing every vote.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApprovalDecided {
    /// The request's session.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub session_id: Arc<str>,
    /// The request decided.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub request_id: ApprovalId,
    /// Its key.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub approval_key: Arc<str>,
    /// The reviewer's vote.
    #[serde(flatten)]
    pub vote: ApprovalVote,
    /// How many reviewers have now decided alike with this one (itself included).
    pub agreeing: u32,
    /// How many must.
    pub quorum: u32,
}

/// `approval.timed_out`: nobody decided before the deadline; every action is rejected.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalTimedOut {
    /// The request's session.
    pub session_id: Arc<str>,
    /// The request that expired.
    pub request_id: ApprovalId,
    /// Its key.
    pub approval_key: Arc<str>,
    /// A `reject` per action.
    pub decisions: Vec<Decision>,
    /// `escalate` when the request escalated on expiry and waited once more before this;
    /// absent for a plain expiry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fallback: Option<&'static str>,
}

/// `approval.reminded`: nobody decided yet, and the request's reminder fell due.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalReminded {
    /// The request's session.
    pub session_id: Arc<str>,
    /// The request still waiting.
    pub request_id: ApprovalId,
    /// Its key.
    pub approval_key: Arc<str>,
}

/// `approval.escalated`: nobody decided yet, and `escalated_to` may now decide it too.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalEscalated {
    /// The request's session.
    pub session_id: Arc<str>,
    /// The request still waiting.
    pub request_id: ApprovalId,
    /// Its key.
    pub approval_key: Arc<str>,
    /// Who it escalated to (credential names).
    pub escalated_to: Vec<String>,
}

/// `approval.not_recorded`: the store refused the outcome of this request, whose event
/// (`outcome`: `replied`, `timed_out` or `cancelled`) came before it. That outcome does
/// not stand: no action of it may run, the asker was handed the store's failure, and every
/// read of the request answers `503 outcome_not_recorded`. As `question.not_recorded`.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalNotRecorded {
    /// The request's session.
    pub session_id: Arc<str>,
    /// The request whose outcome was not recorded.
    pub request_id: ApprovalId,
    /// Its key.
    pub approval_key: Arc<str>,
    /// Which outcome was announced and not recorded.
    pub outcome: OutcomeKind,
}

/// `approval.cancelled`: the asker went away, or its session was cancelled.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalCancelled {
    /// The request's session.
    pub session_id: Arc<str>,
    /// The request cancelled.
    pub request_id: ApprovalId,
    /// Its key.
    pub approval_key: Arc<str>,
}

impl Event for ApprovalAsked {
    const TYPE: &'static str = "approval.asked";

    fn session_id(&self) -> Option<&str> {
        Some(&self.request.session_id)
    }
}

impl Event for ApprovalReplied {
    const TYPE: &'static str = "approval.replied";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for ApprovalDecided {
    const TYPE: &'static str = "approval.decided";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for ApprovalTimedOut {
    const TYPE: &'static str = "approval.timed_out";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for ApprovalReminded {
    const TYPE: &'static str = "approval.reminded";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for ApprovalEscalated {
    const TYPE: &'static str = "approval.escalated";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for ApprovalNotRecorded {
    const TYPE: &'static str = "approval.not_recorded";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Event for ApprovalCancelled {
    const TYPE: &'static str = "approval.cancelled";

    fn session_id(&self) -> Option<&str> {
        Some(&self.session_id)
    }
}

impl Action {
    /// An action calling `name` with `args`.
    pub fn new(name: impl Into<String>, args: Value) -> Self {
        Self {
            name: name.into(),
            args,
            tool_use_id: None,
            description: None,
            args_schema: None,
        }
    }

    /// Records the id of the model's `tool_use` block.
    #[must_use]
    pub fn with_tool_use_id(mut self, tool_use_id: impl Into<String>) -> Self {
        self.tool_use_id = Some(tool_use_id.into());
        self
    }

    /// Describes the call for the human.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Gives the JSON Schema of the tool's arguments: the request is refused unless
    /// `args` fit it, and so is a human's `edit` whose arguments do not.
    #[must_use]
    pub fn with_args_schema(mut self, args_schema: Value) -> Self {
        self.args_schema = Some(args_schema);
        self
    }
}

impl ReviewConfig {
    /// Actions named `action_name` allow only `allowed_decisions`.
    pub fn new(
        action_name: impl Into<String>,
        allowed_decisions: impl IntoIterator<Item = DecisionType>,
    ) -> Self {
        Self {
            action_name: action_name.into(),
            allowed_decisions: allowed_decisions.into_iter().collect(),
            quorum: None,
            reviewers: None,
        }
    }

    /// Requires `quorum` distinct reviewers to decide alike (see [`Self::quorum`]).
    #[must_use]
    pub fn with_quorum(mut self, quorum: u32) -> Self {
        self.quorum = Some(quorum);
        self
    }

    /// Lets only the reviewers named `reviewers` decide (see [`Self::reviewers`]).
    #[must_use]
    pub fn with_reviewers(
        mut self,
        reviewers: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.reviewers = Some(reviewers.into_iter().map(Into::into).collect());
        self
    }
}

impl DecisionType {
    /// Every decision type, in their usual order.
    pub const ALL: [Self; 4] = [Self::Approve, Self::Edit, Self::Reject, Self::Respond];

    /// The wire name: `approve`, `edit`, `reject`, `respond`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Approve => "approve",
            Self::Edit => "edit",
            Self::Reject => "reject",
            Self::Respond => "respond",
        }
    }
}

impl std::fmt::Display for DecisionType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Decision {
    /// This decision's type.
    pub fn decision_type(&self) -> DecisionType {
        match self {
            Self::Approve => DecisionType::Approve,
            Self::Edit { .. } => DecisionType::Edit,
            Self::Reject { .. } => DecisionType::Reject,
            Self::Respond { .. } => DecisionType::Respond,
        }
    }

    /// Whether the action runs (as asked or edited).
    pub fn runs(&self) -> bool {
        matches!(self, Self::Approve | Self::Edit { .. })
    }
}

impl ApprovalReply {
    /// A reply with these decisions and no text.
    pub fn new(decisions: impl IntoIterator<Item = Decision>) -> Self {
        Self {
            decisions: decisions.into_iter().collect(),
            user_edit_content: None,
            votes: Vec::new(),
            granted: None,
            auto_approved_by: Vec::new(),
        }
    }

    /// Adds the human's free text.
    #[must_use]
    pub fn with_user_edit_content(mut self, content: impl Into<String>) -> Self {
        self.user_edit_content = Some(content.into());
        self
    }
}

impl ApprovalRequest {
    /// The decision types allowed for the action at `index`: those of the review config
    /// naming its tool, or every one when no config does.
    pub fn allowed_decisions(&self, index: usize) -> &[DecisionType] {
        self.action_requests
            .get(index)
            .and_then(|action| {
                self.review_configs
                    .iter()
                    .find(|config| config.action_name == action.name)
            })
            .map_or(&DecisionType::ALL, |config| &config.allowed_decisions)
    }

    /// The review configs of this request's actions (a config naming no action of it is
    /// refused when the request is made).
    fn action_configs(&self) -> impl Iterator<Item = &ReviewConfig> {
        self.review_configs.iter().filter(|config| {
            self.action_requests
                .iter()
                .any(|action| action.name == config.action_name)
        })
    }

    /// How many distinct reviewers must decide alike: the largest quorum of its actions'
    /// review configs, at least 1.
    pub fn quorum(&self) -> u32 {
        self.action_configs()
            .filter_map(|config| config.quorum)
            .fold(1, u32::max)
    }

    /// Whether the reviewer named `name` may decide this request: it is named by every
    /// review config that names reviewers.
    pub fn names_reviewer(&self, name: &str) -> bool {
        self.action_configs().all(|config| {
            config
                .reviewers
                .as_ref()
                .is_none_or(|named| named.iter().any(|reviewer| reviewer == name))
        })
    }
}

impl ApprovalReply {
    /// Whether `self` and `other` run the same calls: per action, both approve, both edit
    /// to the same arguments, or both run nothing (reject or respond, whatever the
    /// message). A quorum counts votes that agree so.
    pub fn agrees_with(&self, other: &Self) -> bool {
        self.decisions.len() == other.decisions.len()
            && self
                .decisions
                .iter()
                .zip(&other.decisions)
                .all(|(mine, theirs)| match (mine, theirs) {
                    (Decision::Approve, Decision::Approve) => true,
                    (Decision::Edit { edited_action: a }, Decision::Edit { edited_action: b }) => {
                        a == b
                    }
                    (mine, theirs) => !mine.runs() && !theirs.runs(),
                })
    }

    /// Whether this reply runs none of the actions: under a quorum, a veto.
    pub fn runs_nothing(&self) -> bool {
        !self.decisions.iter().any(Decision::runs)
    }
}

fn every_decision() -> Vec<DecisionType> {
    DecisionType::ALL.to_vec()
}

/// A human's standing approval of one tool's calls in one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Grant {
    /// The approval request whose `always` made the grant; it names the grant.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub id: ApprovalId,
    /// The session the grant covers.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub session_id: Arc<str>,
    /// The tool whose calls it covers.
    pub tool: String,
    /// What those calls touch (see [`pattern_of`]), as OpenCode clients show a grant.
    pub patterns: Vec<String>,
    /// The arguments of the calls it approved, each once: the calls it covers.
    pub args: Vec<Value>,
    /// Who asked the approved calls: the grant covers that asker's calls only (another
    /// agent in the session repeating them is asked again).
    pub asked_by: Option<Identity>,
    /// The human who granted it.
    pub granted_by: Identity,
    /// When, milliseconds since the Unix epoch.
    pub created_at: u64,
}

/// `approval.granted`: a human's `always` made a grant.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalGranted {
    /// The grant.
    #[serde(flatten)]
    pub grant: Grant,
}

/// `approval.grant_revoked`: a grant was revoked; later calls are asked again.
#[derive(Debug, Clone, Serialize)]
pub struct ApprovalGrantRevoked {
    /// The grant revoked.
    #[serde(flatten)]
    pub grant: Grant,
    /// Who revoked it.
    pub revoked_by: Identity,
}

impl Event for ApprovalGranted {
    const TYPE: &'static str = "approval.granted";

    fn session_id(&self) -> Option<&str> {
        Some(&self.grant.session_id)
    }
}

impl Event for ApprovalGrantRevoked {
    const TYPE: &'static str = "approval.grant_revoked";

    fn session_id(&self) -> Option<&str> {
        Some(&self.grant.session_id)
    }
}

/// The arguments whose value says what a call touches, in the order they are looked for.
pub const PATTERN_ARGUMENTS: [&str; 6] =
    ["command", "filePath", "file_path", "path", "url", "pattern"];

/// What a client shows of `action` (OpenCode's pattern of a permission): the value of its
/// first [`PATTERN_ARGUMENTS`] argument when that is all its arguments hold, else the whole
/// arguments as compact JSON. Never a summary that leaves something out: OpenCode clients
/// show the patterns, and the human approves every argument, not only the one that names
/// what the call touches.
///
/// # Examples
///
/// ```
/// use askbus_question::{Action, pattern_of};
/// use serde_json::json;
///
/// assert_eq!(pattern_of(&Action::new("bash", json!({"command": "ls"}))), "ls");
/// assert_eq!(pattern_of(&Action::new("deploy", json!({"env": "prod"}))), r#"{"env":"prod"}"#);
/// assert_eq!(
///     pattern_of(&Action::new("bash", json!({"command": "make", "cwd": "/"}))),
///     r#"{"command":"make","cwd":"/"}"#
/// );
/// ```
pub fn pattern_of(action: &Action) -> String {
    let only_argument = action.args.as_object().filter(|args| args.len() == 1);
    PATTERN_ARGUMENTS
        .iter()
        .find_map(|name| only_argument?.get(*name)?.as_str())
        .map_or_else(|| action.args.to_string(), str::to_owned)
}
