//! Every text the model reads, in every language the tools speak: English, Vietnamese and
//! Simplified Chinese (the seeds' languages, the web UI's).
//!
//! **Which language.** A tool speaks its [`with_locale`](crate::QuestionTool::with_locale)
//! in its definition (the description the model reads), and the request's own `locale` in
//! every text about that request's outcome, so a request read back later (an MCP
//! `wait_for_answer`) reads as it was asked. [`Language::of`] picks the language from a
//! BCP 47 tag as the web UI does: by its primary subtag (`vi`, `vi-VN` → Vietnamese; `zh`,
//! `zh-CN`, `zh-Hant-TW` → Chinese); any other tag, or none, is English.
//!
//! **What stays English.** Tool names, JSON field names and decision names (the wire),
//! the JSON-Schema descriptions of the arguments (generated from the doc comments of the
//! argument types, read by the model beside the translated description), and the messages
//! of a [`ToolError`](crate::ToolError) about bad arguments (they quote the schema).
//!
//! **One table.** [`Text`] names each text with its values; [`Text::in_language`] is the
//! table, one `match` arm per text with one `format!` per language, so the compiler refuses
//! a text missing a language and checks every placeholder. The English texts are the
//! tools' long-standing wording, byte for byte (tests pin them).

use serde_json::Value;

use crate::review::Runner;

/// The tool name the model calls to ask the user.
pub const QUESTION_TOOL_NAME: &str = "question";

/// The tool name the model calls to have tool calls reviewed.
pub const APPROVAL_TOOL_NAME: &str = "request_approval";

/// What the model reads to decide when to ask (English; see [`Language`] for the others).
pub const QUESTION_TOOL_DESCRIPTION: &str = "\
Ask the user one or more questions and wait for their answers. Use this tool when you need \
the user's input during the task to:
1. Gather user preferences or requirements
2. Clarify ambiguous instructions
3. Get decisions on implementation choices as you work
4. Offer choices to the user about what direction to take.

Usage notes:
- Give each question a short header (at most 30 characters), the full question, and distinct \
options, each with a label of 1-5 words and a description of what choosing it means.
- The user can always type their own answer instead of picking an option; do not add an \
\"Other\" option yourself.
- Set `multiple: true` when more than one option may be chosen.
- If you recommend an option, list it first and add \"(Recommended)\" to its label.
- Ask only when the answer changes what you will do; do not ask for what you can find out \
yourself.";

const QUESTION_TOOL_DESCRIPTION_VI: &str = "\
Đặt một hoặc nhiều câu hỏi cho người dùng và chờ câu trả lời của họ. Dùng công cụ này khi \
bạn cần ý kiến của người dùng trong lúc làm nhiệm vụ để:
1. Thu thập mong muốn hoặc yêu cầu của người dùng
2. Làm rõ những chỉ dẫn còn mơ hồ
3. Xin quyết định về các phương án triển khai trong lúc làm
4. Đưa ra cho người dùng các lựa chọn về hướng đi tiếp theo.

Lưu ý khi dùng:
- Mỗi câu hỏi cần một tiêu đề ngắn (tối đa 30 ký tự), nội dung câu hỏi đầy đủ và các lựa \
chọn khác nhau, mỗi lựa chọn có một nhãn dài 1-5 từ và một mô tả cho biết chọn nó nghĩa là gì.
- Người dùng luôn có thể tự nhập câu trả lời thay vì chọn một lựa chọn; đừng tự thêm lựa \
chọn \"Khác\".
- Đặt `multiple: true` khi được chọn nhiều hơn một lựa chọn.
- Nếu bạn đề xuất một lựa chọn, hãy xếp nó đầu tiên và thêm \"(Recommended)\" vào nhãn của nó.
- Chỉ hỏi khi câu trả lời làm thay đổi việc bạn sẽ làm; đừng hỏi những gì bạn có thể tự \
tìm ra.";

const QUESTION_TOOL_DESCRIPTION_ZH: &str = "\
向用户提出一个或多个问题，并等待他们的回答。在任务进行中需要用户的意见时使用此工具，以便：
1. 收集用户的偏好或需求
2. 澄清含糊的指示
3. 在工作过程中就实现方案做出决定
4. 向用户提供下一步方向的选择。

使用说明：
- 为每个问题提供一个简短的标题（最多 30 个字符）、完整的问题，以及互不相同的选项；每个选项\
有一个 1-5 个词的标签，以及一段说明选择它意味着什么的描述。
- 用户总是可以不选任何选项而自行输入答案；不要自己添加“其他”选项。
- 允许选择多个选项时，设置 `multiple: true`。
- 如果你推荐某个选项，把它列在第一位，并在它的标签后加上 \"(Recommended)\"。
- 只有当答案会改变你的做法时才提问；不要询问你自己就能查到的信息。";

/// What the model reads to decide when to ask for approval (English; see [`Language`] for
/// the others).
pub const APPROVAL_TOOL_DESCRIPTION: &str = "\
Ask a human to review tool calls before you make them, and wait for their decision. Use this \
tool before a call that is destructive, irreversible, costly or visible to others (deleting \
data, spending money, sending messages, deploying), or whenever the user wants to approve such \
steps. This tool runs nothing itself.

Usage notes:
- List each call you want to make under `actions`: the tool's `name`, its complete `args`, and \
a short `description` of what it will do, written for the human.
- The human decides on each call: approve (run it as proposed), edit (run their version \
instead), reject (do not run it; they may say why) or respond (do not run it; their message \
answers it). Limit the choices with `allowed_decisions` when some make no sense.
- Afterwards run exactly what was approved: an edited call with the human's name and \
arguments, never your original. Never run a rejected call, nor any call when the review timed \
out or was cancelled.";

const APPROVAL_TOOL_DESCRIPTION_VI: &str = "\
Nhờ một người xem xét các lệnh gọi công cụ trước khi bạn thực hiện chúng, và chờ quyết định \
của họ. Dùng công cụ này trước một lệnh gọi có tính phá hủy, không thể hoàn tác, tốn kém hoặc \
người khác nhìn thấy được (xóa dữ liệu, tiêu tiền, gửi tin nhắn, triển khai), hoặc bất cứ khi \
nào người dùng muốn tự duyệt những bước như vậy. Bản thân công cụ này không chạy gì cả.

Lưu ý khi dùng:
- Liệt kê trong `actions` từng lệnh gọi bạn muốn thực hiện: `name` của công cụ, `args` đầy đủ \
của nó, và một `description` ngắn về việc nó sẽ làm, viết cho người duyệt đọc.
- Người duyệt quyết định từng lệnh gọi: approve (chạy đúng như đề xuất), edit (chạy phiên bản \
của họ thay vào đó), reject (không được chạy; họ có thể nói lý do) hoặc respond (không được \
chạy; tin nhắn của họ là câu trả lời). Hãy giới hạn các quyết định bằng `allowed_decisions` khi \
có quyết định không hợp lý.
- Sau đó chỉ chạy đúng những gì đã được duyệt: một lệnh gọi đã được sửa thì chạy với tên và \
đối số của người duyệt, không bao giờ chạy bản gốc của bạn. Không bao giờ chạy một lệnh gọi bị \
từ chối, cũng không chạy bất kỳ lệnh gọi nào khi việc xem xét đã hết thời gian hoặc bị hủy.";

const APPROVAL_TOOL_DESCRIPTION_ZH: &str = "\
在你执行工具调用之前，请人工审核这些调用，并等待审核者的决定。在执行具有破坏性、不可撤销、代价\
高昂或他人可见的调用（删除数据、花钱、发送消息、部署）之前，或者用户希望亲自审批此类步骤时，使用\
此工具。此工具本身不运行任何东西。

使用说明：
- 在 `actions` 中列出你想执行的每个调用：工具的 `name`、完整的 `args`，以及一段写给审核者看的\
简短 `description`，说明它将做什么。
- 审核者对每个调用作出决定：approve（按提议运行）、edit（改为运行审核者的版本）、reject（不得\
运行；审核者可能会说明原因）或 respond（不得运行；审核者的消息就是答复）。某些决定没有意义时，\
用 `allowed_decisions` 限制可选的决定。
- 之后只运行已批准的内容，一字不差：被编辑的调用使用审核者给出的名称和参数，绝不运行你原来的\
调用。绝不运行被拒绝的调用；审核超时或被取消时，也不得运行任何调用。";

/// A language the tools speak to the model.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Language {
    /// English: the tools' own wording, and the language of any tag not listed here.
    #[default]
    English,
    /// Vietnamese (`vi`).
    Vietnamese,
    /// Simplified Chinese (`zh`, whatever its region or script subtag).
    Chinese,
}

impl Language {
    /// Every language the tools speak.
    pub const ALL: [Self; 3] = [Self::English, Self::Vietnamese, Self::Chinese];

    /// The language of a BCP 47 `locale` (a request's, a tool's): by its primary subtag,
    /// as the web UI picks it; English for any other tag, and for none.
    ///
    /// ```
    /// use askbus_tool::Language;
    ///
    /// assert_eq!(Language::of(Some("vi-VN")), Language::Vietnamese);
    /// assert_eq!(Language::of(Some("zh-Hant-TW")), Language::Chinese);
    /// assert_eq!(Language::of(Some("fr")), Language::English);
    /// assert_eq!(Language::of(None), Language::English);
    /// ```
    pub fn of(locale: Option<&str>) -> Self {
        let primary = locale
            .and_then(|tag| tag.trim().split(['-', '_']).next())
            .unwrap_or_default();
        if primary.eq_ignore_ascii_case("vi") {
            Self::Vietnamese
        } else if primary.eq_ignore_ascii_case("zh") {
            Self::Chinese
        } else {
            Self::English
        }
    }
}

/// A text the model reads, with the values it names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Text<'a> {
    /// The question tool's description.
    QuestionDescription,
    /// The approval tool's description.
    ApprovalDescription,
    /// The user answered; `answers` as [`describe_answers`](crate::question_tool) writes them.
    Answered { answers: &'a str },
    /// Nobody answered, and the default answers apply.
    Defaulted { answers: &'a str },
    /// The user dismissed the questions, with their reason if any.
    Dismissed { reason: Option<&'a str> },
    /// Nobody answered the questions in time.
    QuestionsTimedOut,
    /// The questions were cancelled.
    QuestionsCancelled,
    /// The answer of a question the user skipped.
    Unanswered,
    /// A human approved the call of `tool` with `args`.
    Approved { tool: &'a str, args: &'a Value },
    /// A human replaced the call of `tool` with `args` by `edited_tool` with `edited_args`.
    Replaced {
        tool: &'a str,
        args: &'a Value,
        edited_tool: &'a str,
        edited_args: &'a Value,
    },
    /// The clause saying a refused call does not run: the guard runs calls itself, so a
    /// refused one "did not run"; the model runs what the approval tool approved, so it
    /// must "not run" a refused one.
    NotRun { runner: Runner },
    /// A human refused the call of `tool`, with their message if any; `not_run` is
    /// [`NotRun`](Self::NotRun)'s.
    Refused {
        tool: &'a str,
        message: Option<&'a str>,
        not_run: &'a str,
    },
    /// Nobody approved the call of `tool` in time.
    ApprovalTimedOut { tool: &'a str, not_run: &'a str },
    /// The approval of the call of `tool` was cancelled.
    ApprovalCancelled { tool: &'a str, not_run: &'a str },
    /// The head of the numbered list of `count` calls' texts (`list`).
    NumberedCalls { count: usize, list: &'a str },
    /// The free text a human added to their decisions.
    HumanAdded { added: &'a str },
    /// The guarded `tool` ran.
    GuardRan { tool: &'a str },
    /// The notice before the result of a guarded call a human edited.
    EditedNotice {
        tool: &'a str,
        used: &'a str,
        original: &'a Value,
    },
}

impl Text<'_> {
    /// This text in `language`.
    pub(crate) fn in_language(self, language: Language) -> String {
        use Language::{Chinese, English, Vietnamese};
        match self {
            Self::QuestionDescription => match language {
                English => QUESTION_TOOL_DESCRIPTION,
                Vietnamese => QUESTION_TOOL_DESCRIPTION_VI,
                Chinese => QUESTION_TOOL_DESCRIPTION_ZH,
            }
            .to_owned(),
            Self::ApprovalDescription => match language {
                English => APPROVAL_TOOL_DESCRIPTION,
                Vietnamese => APPROVAL_TOOL_DESCRIPTION_VI,
                Chinese => APPROVAL_TOOL_DESCRIPTION_ZH,
            }
            .to_owned(),
            Self::Answered { answers } => match language {
                English => format!(
                    "User has answered your questions: {answers}. You can now continue with the user's answers in mind."
                ),
                Vietnamese => format!(
                    "Người dùng đã trả lời các câu hỏi của bạn: {answers}. Giờ bạn có thể tiếp tục, dựa trên các câu trả lời của người dùng."
                ),
                Chinese => format!("用户已回答你的问题：{answers}。现在你可以根据用户的回答继续。"),
            },
            Self::Defaulted { answers } => match language {
                English => format!(
                    "Nobody answered these questions in time. No human chose any answer: the default answers set for this case apply: {answers}. Continue with these defaults, and do not present them as the user's choice."
                ),
                Vietnamese => format!(
                    "Không ai trả lời các câu hỏi này kịp thời. Không có người nào chọn câu trả lời: áp dụng các câu trả lời mặc định đã đặt sẵn cho trường hợp này: {answers}. Hãy tiếp tục với các giá trị mặc định này, và đừng trình bày chúng như lựa chọn của người dùng."
                ),
                Chinese => format!(
                    "没有人及时回答这些问题。没有任何人选择答案：适用为这种情况预设的默认答案：{answers}。请按这些默认答案继续，不要把它们说成是用户的选择。"
                ),
            },
            Self::Dismissed { reason } => {
                let reason = reason
                    .map(|reason| match language {
                        English => format!(" Their reason: {reason:?}."),
                        Vietnamese => format!(" Lý do của họ: {reason:?}."),
                        Chinese => format!("他们的理由：{reason:?}。"),
                    })
                    .unwrap_or_default();
                match language {
                    English => format!(
                        "The user dismissed these questions without answering.{reason} Do not assume or invent answers: continue with what you already know, or explain what you need."
                    ),
                    Vietnamese => format!(
                        "Người dùng đã gạt bỏ các câu hỏi này mà không trả lời.{reason} Không được tự giả định hay bịa ra câu trả lời: hãy tiếp tục với những gì bạn đã biết, hoặc giải thích bạn cần gì."
                    ),
                    Chinese => format!(
                        "用户没有回答就关闭了这些问题。{reason}不得假设或编造答案：请基于你已知的信息继续，或者说明你需要什么。"
                    ),
                }
            }
            Self::QuestionsTimedOut => match language {
                English => "The user did not answer these questions in time, so there are no answers. Do not assume or invent answers: continue with what you already know, or stop and explain what you need.",
                Vietnamese => "Người dùng đã không trả lời các câu hỏi này kịp thời, nên không có câu trả lời nào. Không được tự giả định hay bịa ra câu trả lời: hãy tiếp tục với những gì bạn đã biết, hoặc dừng lại và giải thích bạn cần gì.",
                Chinese => "用户没有及时回答这些问题，因此没有任何答案。不得假设或编造答案：请基于你已知的信息继续，或者停下来说明你需要什么。",
            }
            .to_owned(),
            Self::QuestionsCancelled => match language {
                English => "The questions were cancelled before the user answered (the session was stopped). There are no answers; do not assume or invent any.",
                Vietnamese => "Các câu hỏi đã bị hủy trước khi người dùng trả lời (phiên làm việc đã bị dừng). Không có câu trả lời nào; không được tự giả định hay bịa ra câu trả lời.",
                Chinese => "这些问题在用户回答之前已被取消（会话已停止）。没有任何答案；不得假设或编造答案。",
            }
            .to_owned(),
            Self::Unanswered => match language {
                English => "Unanswered",
                Vietnamese => "Chưa trả lời",
                Chinese => "未回答",
            }
            .to_owned(),
            Self::Approved { tool, args } => match language {
                English => format!(
                    "A human approved this call to `{tool}` with {args}: run it as you proposed."
                ),
                Vietnamese => format!(
                    "Một người đã phê duyệt lệnh gọi `{tool}` này với {args}: hãy chạy nó đúng như bạn đã đề xuất."
                ),
                Chinese => format!(
                    "人工审核者批准了这次以 {args} 对 `{tool}` 的调用：请按你的提议运行它。"
                ),
            },
            Self::Replaced {
                tool,
                args,
                edited_tool,
                edited_args,
            } => match language {
                English => format!(
                    "A human replaced this call to `{tool}` with {args}: run `{edited_tool}` with {edited_args} instead, not your original call."
                ),
                Vietnamese => format!(
                    "Một người đã thay thế lệnh gọi `{tool}` này với {args}: hãy chạy `{edited_tool}` với {edited_args} thay vào đó, không chạy lệnh gọi ban đầu của bạn."
                ),
                Chinese => format!(
                    "人工审核者替换了这次以 {args} 对 `{tool}` 的调用：请改为以 {edited_args} 运行 `{edited_tool}`，不要运行你原来的调用。"
                ),
            },
            Self::NotRun { runner } => match (runner, language) {
                (Runner::Guard, English) => "it did not run",
                (Runner::Model, English) => "do not run it",
                (Runner::Guard, Vietnamese) => "nó đã không được chạy",
                (Runner::Model, Vietnamese) => "đừng chạy nó",
                (Runner::Guard, Chinese) => "它没有运行",
                (Runner::Model, Chinese) => "不要运行它",
            }
            .to_owned(),
            Self::Refused {
                tool,
                message: Some(message),
                not_run,
            } => {
                match language {
                    English => format!(
                        "A human reviewed this call to `{tool}`; {not_run}. Their answer: {message}"
                    ),
                    Vietnamese => format!(
                        "Một người đã xem xét lệnh gọi `{tool}` này; {not_run}. Câu trả lời của họ: {message}"
                    ),
                    Chinese => format!(
                        "人工审核者审阅了这次对 `{tool}` 的调用；{not_run}。审核者的答复：{message}"
                    ),
                }
            }
            Self::Refused {
                tool,
                message: None,
                not_run,
            } => {
                match language {
                    English => format!(
                        "A human rejected this call to `{tool}`; {not_run}. Do not retry it unchanged: continue without it, or ask the user what they want."
                    ),
                    Vietnamese => format!(
                        "Một người đã từ chối lệnh gọi `{tool}` này; {not_run}. Đừng thử lại y nguyên: hãy tiếp tục mà không có nó, hoặc hỏi người dùng họ muốn gì."
                    ),
                    Chinese => format!(
                        "人工审核者拒绝了这次对 `{tool}` 的调用；{not_run}。不要原样重试：请在没有它的情况下继续，或者询问用户想要什么。"
                    ),
                }
            }
            Self::ApprovalTimedOut { tool, not_run } => {
                match language {
                    English => format!(
                        "Nobody approved this call to `{tool}` in time, so {not_run}. Do not report it as done."
                    ),
                    Vietnamese => format!(
                        "Không ai phê duyệt lệnh gọi `{tool}` này kịp thời, nên {not_run}. Đừng báo rằng nó đã được thực hiện."
                    ),
                    Chinese => format!(
                        "没有人及时批准这次对 `{tool}` 的调用，因此{not_run}。不要报告它已完成。"
                    ),
                }
            }
            Self::ApprovalCancelled { tool, not_run } => {
                match language {
                    English => format!(
                        "The approval of this call to `{tool}` was cancelled (the session was stopped); {not_run}."
                    ),
                    Vietnamese => format!(
                        "Việc phê duyệt lệnh gọi `{tool}` này đã bị hủy (phiên làm việc đã bị dừng); {not_run}."
                    ),
                    Chinese => format!(
                        "这次对 `{tool}` 的调用的审批已被取消（会话已停止）；{not_run}。"
                    ),
                }
            }
            Self::NumberedCalls { count, list } => match language {
                English => format!("The {count} calls you asked to make, in order:\n{list}"),
                Vietnamese => {
                    format!("{count} lệnh gọi bạn đã xin thực hiện, theo thứ tự:\n{list}")
                }
                Chinese => format!("你请求执行的 {count} 个调用，按顺序：\n{list}"),
            },
            Self::HumanAdded { added } => match language {
                English => format!("The human added: {added}"),
                Vietnamese => format!("Người duyệt viết thêm: {added}"),
                Chinese => format!("审核者补充：{added}"),
            },
            Self::GuardRan { tool } => match language {
                English => format!("`{tool}` ran."),
                Vietnamese => format!("`{tool}` đã chạy."),
                Chinese => format!("`{tool}` 已运行。"),
            },
            Self::EditedNotice {
                tool,
                used,
                original,
            } => match language {
                English => format!(
                    "Note: a human replaced your call before it ran. `{tool}` ran with {used} instead of {original}; the result below is of their call."
                ),
                Vietnamese => format!(
                    "Lưu ý: một người đã thay thế lệnh gọi của bạn trước khi nó chạy. `{tool}` đã chạy với {used} thay vì {original}; kết quả bên dưới là của lệnh gọi do họ sửa."
                ),
                Chinese => format!(
                    "注意：人工审核者在运行前替换了你的调用。`{tool}` 以 {used} 而不是 {original} 运行；下面的结果来自审核者的调用。"
                ),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// One of each text, with values that can be found again in what it renders.
    fn every_text<'a>(args: &'a Value, edited: &'a Value) -> Vec<(Text<'a>, Vec<String>)> {
        let mut texts = vec![
            (Text::QuestionDescription, vec!["`multiple: true`".into()]),
            (
                Text::ApprovalDescription,
                vec!["`actions`".into(), "`allowed_decisions`".into()],
            ),
            (Text::Answered { answers: "<A1>" }, vec!["<A1>".into()]),
            (Text::Defaulted { answers: "<D1>" }, vec!["<D1>".into()]),
            (
                Text::Dismissed {
                    reason: Some("<why>"),
                },
                vec![r#""<why>""#.into()],
            ),
            (Text::Dismissed { reason: None }, vec![]),
            (Text::QuestionsTimedOut, vec![]),
            (Text::QuestionsCancelled, vec![]),
            (Text::Unanswered, vec![]),
            (
                Text::Approved { tool: "t1", args },
                vec!["`t1`".into(), args.to_string()],
            ),
            (
                Text::Replaced {
                    tool: "t1",
                    args,
                    edited_tool: "t2",
                    edited_args: edited,
                },
                vec![
                    "`t1`".into(),
                    args.to_string(),
                    "`t2`".into(),
                    edited.to_string(),
                ],
            ),
            (
                Text::NumberedCalls {
                    count: 7,
                    list: "<list>",
                },
                vec!["7".into(), "\n<list>".into()],
            ),
            (Text::HumanAdded { added: "<more>" }, vec!["<more>".into()]),
            (Text::GuardRan { tool: "t1" }, vec!["`t1`".into()]),
            (
                Text::EditedNotice {
                    tool: "t1",
                    used: "<used>",
                    original: args,
                },
                vec!["`t1`".into(), "<used>".into(), args.to_string()],
            ),
        ];
        let refused = vec!["`t1`".to_owned(), "<not run>".to_owned()];
        texts.extend([
            (
                Text::NotRun {
                    runner: Runner::Guard,
                },
                vec![],
            ),
            (
                Text::NotRun {
                    runner: Runner::Model,
                },
                vec![],
            ),
            (
                Text::Refused {
                    tool: "t1",
                    message: Some("<msg>"),
                    not_run: "<not run>",
                },
                vec!["`t1`".into(), "<not run>".into(), "<msg>".into()],
            ),
            (
                Text::Refused {
                    tool: "t1",
                    message: None,
                    not_run: "<not run>",
                },
                refused.clone(),
            ),
            (
                Text::ApprovalTimedOut {
                    tool: "t1",
                    not_run: "<not run>",
                },
                refused.clone(),
            ),
            (
                Text::ApprovalCancelled {
                    tool: "t1",
                    not_run: "<not run>",
                },
                refused,
            ),
        ]);
        texts
    }

    /// Every text exists in every language (the `match` makes that so), each translation is
    /// one (not the English left in place) and keeps every value it names.
    #[test]
    fn every_language_has_every_text_with_its_values() {
        let args = json!({"k": 1});
        let edited = json!({"k": 2});
        for (text, values) in every_text(&args, &edited) {
            let english = text.in_language(Language::English);
            for language in Language::ALL {
                let translated = text.in_language(language);
                assert!(!translated.trim().is_empty(), "{text:?} in {language:?}");
                if language != Language::English {
                    assert_ne!(
                        translated, english,
                        "{text:?} is not translated to {language:?}"
                    );
                }
                for value in &values {
                    assert!(
                        translated.contains(value.as_str()),
                        "{text:?} in {language:?} lost {value:?}: {translated}"
                    );
                }
            }
        }
    }

    /// The two runners' refusals differ in every language: the guard's says the call did
    /// not run, the approval tool's tells the model not to run it.
    #[test]
    fn a_refusal_says_who_would_have_run_the_call_in_every_language() {
        for language in Language::ALL {
            let not_run = |runner| Text::NotRun { runner }.in_language(language);
            assert_ne!(not_run(Runner::Guard), not_run(Runner::Model));
        }
    }

    #[test]
    fn the_language_follows_the_primary_subtag_as_in_the_web_ui() {
        let cases = [
            (Some("vi"), Language::Vietnamese),
            (Some("VI-vn"), Language::Vietnamese),
            (Some("vi_VN"), Language::Vietnamese),
            (Some("zh"), Language::Chinese),
            (Some("zh-CN"), Language::Chinese),
            (Some("zh-Hant-TW"), Language::Chinese),
            (Some("en-GB"), Language::English),
            (Some("fr"), Language::English),
            (Some("vie"), Language::English),
            (Some(""), Language::English),
            (None, Language::English),
        ];
        for (locale, language) in cases {
            assert_eq!(Language::of(locale), language, "{locale:?}");
        }
    }
}
