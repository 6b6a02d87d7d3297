//! Validation of questions when asked and of answers when given.
//!
//! Every message names the question (or, for approvals, the action) it is about, by
//! position and text, and what is wrong, so a human reading an HTTP 422, or a model
//! reading a tool error, can fix the input.

use std::collections::{BTreeMap, HashSet};

use aho_corasick::AhoCorasick;

use std::fmt;

use crate::ids::RequestId;
use crate::model::{Answer, NO_PREFERENCE, QuestionInfo, QuestionOption};

/// Longest header, in characters, that a UI chip is expected to show.
pub const MAX_HEADER_CHARS: usize = 30;

/// A request that cannot be made, or an answer (decisions) that does not fit it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ValidationError {
    /// Zero-based position of the question concerned, if one is.
    question_index: Option<usize>,
    /// Zero-based position of the approval action concerned, if one is.
    action_index: Option<usize>,
    /// The earlier request of the same tool call, when this one was refused for asking
    /// something else under its call id.
    conflicting_request: Option<RequestId>,
    /// The full human-readable explanation.
    message: String,
}

impl ValidationError {
    /// Zero-based position of the question concerned, if the error is about one question.
    pub fn question_index(&self) -> Option<usize> {
        self.question_index
    }

    /// Zero-based position of the approval action concerned, if the error is about one.
    pub fn action_index(&self) -> Option<usize> {
        self.action_index
    }

    /// The request this one's tool call already made, when this one was refused because
    /// it asks something else under the same call id (see
    /// [`QuestionAsk::submit`](crate::QuestionAsk::submit)). A client should give
    /// the new request a call id of its own; HTTP answers `409`.
    pub fn conflicting_request(&self) -> Option<RequestId> {
        self.conflicting_request
    }

    pub(crate) fn request(message: impl Into<String>) -> Self {
        Self {
            question_index: None,
            action_index: None,
            conflicting_request: None,
            message: message.into(),
        }
    }

    /// An error about action `index`; `message` names it.
    pub(crate) fn action(index: usize, message: String) -> Self {
        Self {
            action_index: Some(index),
            ..Self::request(message)
        }
    }

    /// This error about answers, said of a request's default answer on timeout, which is
    /// checked when the request is made: its asker would otherwise read a reply's error.
    pub(crate) fn in_default_answer(self) -> Self {
        Self {
            message: format!(
                "the default answer on timeout does not fit: {}",
                self.message
            ),
            ..self
        }
    }

    /// A request refused because its tool call already asked `earlier`, about other
    /// content; `message` names the call.
    pub(crate) fn call_reused(earlier: RequestId, message: String) -> Self {
        Self {
            conflicting_request: Some(earlier),
            ..Self::request(message)
        }
    }

    /// A request whose content has `values` JSON values, over the `limit` of one request.
    pub(crate) fn too_many_values(values: usize, limit: usize) -> Self {
        Self::request(format!(
            "the request holds about {values} JSON values (in its questions, its calls' \
             arguments, or a step's input); one request may hold {limit}"
        ))
    }

    fn question(index: usize, info: &QuestionInfo, problem: impl fmt::Display) -> Self {
        Self {
            question_index: Some(index),
            ..Self::request(format!(
                "question {} ({:?}): {problem}",
                index + 1,
                info.question
            ))
        }
    }
}

/// The longest id a request may carry from its asker, in bytes: its session id, its tool
/// call's and message's ids, each name it escalates to. Far above any id in use (a UUID is
/// 36, OpenCode's some 30), and low enough that the copies the server keeps of each (its
/// indexes, keys, receipts and events) cost it little: the request's weight against the
/// pending quota counts its content, not these.
pub const MAX_ID_BYTES: usize = 256;

/// Checks that `id`, which the request names as `what` ("the session id"), is at most
/// [`MAX_ID_BYTES`] long.
pub(crate) fn check_id_length(what: &str, id: &str) -> Result<(), ValidationError> {
    if id.len() <= MAX_ID_BYTES {
        return Ok(());
    }
    Err(ValidationError::request(format!(
        "{what} is {} bytes long; an id may be at most {MAX_ID_BYTES}",
        id.len()
    )))
}

/// The longest locale a request may carry: BCP 47 advises supporting tags of at least 35
/// characters, which holds every language, script, region and variant combination in use.
const MAX_LOCALE_LEN: usize = 35;

/// Checks a request's locale is shaped as a BCP 47 language tag: a language of 2 to 8
/// letters, then subtags of 1 to 8 letters or digits, joined by `-`. It is shown to
/// readers (the UI picks its texts by it), so anything else is refused rather than passed
/// on; whether the language is one askbus speaks is the reader's affair (it falls back to
/// its own).
pub(crate) fn check_locale(locale: Option<&str>) -> Result<(), ValidationError> {
    let Some(locale) = locale else {
        return Ok(());
    };
    let mut subtags = locale.split('-');
    let language_ok = subtags.next().is_some_and(|language| {
        (2..=8).contains(&language.len()) && language.bytes().all(|b| b.is_ascii_alphabetic())
    });
    let rest_ok = subtags.all(|subtag| {
        (1..=8).contains(&subtag.len()) && subtag.bytes().all(|b| b.is_ascii_alphanumeric())
    });
    if language_ok && rest_ok && locale.len() <= MAX_LOCALE_LEN {
        Ok(())
    } else {
        Err(ValidationError::request(format!(
            "locale {locale:?} is no language tag: give a BCP 47 tag such as \"vi\" or \"zh-CN\" (at most {MAX_LOCALE_LEN} characters), or leave it out"
        )))
    }
}

/// Checks a new request: a session, at least one question, each with text, a short header
/// and unique, non-empty labels, at most one free-text (`input`) option and only where
/// custom answers are on, and some way to answer it.
pub(crate) fn check_questions(
    session_id: &str,
    questions: &[QuestionInfo],
) -> Result<(), ValidationError> {
    if session_id.is_empty() {
        return Err(ValidationError::request("the session id is empty"));
    }
    check_id_length("the session id", session_id)?;
    if questions.is_empty() {
        return Err(ValidationError::request(
            "a question request needs at least one question",
        ));
    }
    for (index, info) in questions.iter().enumerate() {
        if info.question.trim().is_empty() {
            return Err(ValidationError {
                question_index: Some(index),
                ..ValidationError::request(format!(
                    "question {}: the question text is empty",
                    index + 1
                ))
            });
        }
        let header_chars = info.header.chars().count();
        if header_chars > MAX_HEADER_CHARS {
            return Err(ValidationError::question(
                index,
                info,
                format_args!(
                    "header {:?} is {header_chars} characters long; at most {MAX_HEADER_CHARS} are allowed",
                    info.header
                ),
            ));
        }
        let mut seen_labels = SeenLabels::new(info.options.len());
        for (position, option) in info.options.iter().enumerate() {
            if bare_label(&option.label).is_empty() {
                return Err(ValidationError::question(
                    index,
                    info,
                    format_args!("option {} has an empty label", position + 1),
                ));
            }
            // Compared without the blanks around them, which no screen shows: `"Yes "` and
            // `"Yes"` would be two buttons that read alike and answer differently.
            let earlier = info.options[..position].iter();
            if seen_labels.seen_before(
                earlier.map(|option| bare_label(&option.label)),
                bare_label(&option.label),
            ) {
                return Err(ValidationError::question(
                    index,
                    info,
                    format_args!(
                        "the label {:?} is offered twice (labels are compared without the blanks around them); labels must be unique",
                        option.label
                    ),
                ));
            }
        }
        if info.options.iter().filter(|option| option.input).count() > 1 {
            return Err(ValidationError::question(
                index,
                info,
                "more than one option is marked `input` (the free-text option); one is enough",
            ));
        }
        if info.offers_free_text() && !info.custom {
            return Err(ValidationError::question(
                index,
                info,
                "an option is marked `input` (free text) but `custom` is false; drop one of them",
            ));
        }
        if info.options.is_empty() && !info.custom {
            return Err(ValidationError::question(
                index,
                info,
                "it offers no options and accepts no custom answer, so it cannot be answered",
            ));
        }
    }
    Ok(())
}

/// Checks answers against their questions: one per question, at most one selection for a
/// single-choice question, no empty strings, no duplicates, and only offered labels where
/// custom answers are off. An empty answer, or [`NO_PREFERENCE`] alone, skips a question.
pub(crate) fn check_answers(
    questions: &[QuestionInfo],
    answers: &[Answer],
) -> Result<(), ValidationError> {
    if answers.len() != questions.len() {
        return Err(ValidationError::request(format!(
            "expected {} answers, one per question, but got {}",
            questions.len(),
            answers.len()
        )));
    }
    for (index, (info, answer)) in questions.iter().zip(answers).enumerate() {
        if answer.len() == 1 && answer[0] == NO_PREFERENCE {
            continue;
        }
        if !info.multiple && answer.len() > 1 {
            return Err(ValidationError::question(
                index,
                info,
                format_args!("it allows one choice, but {} were given", answer.len()),
            ));
        }
        // Both lookups hash past a few entries, so that a long answer or option list costs
        // linear time: answers are checked under the registry's lock.
        let mut chosen = SeenLabels::new(answer.len());
        let offered = (!info.custom).then(|| Offered::new(&info.options));
        for (position, choice) in answer.iter().enumerate() {
            if choice.is_empty() {
                return Err(ValidationError::question(
                    index,
                    info,
                    "an empty string is not an answer; send an empty list to skip the question",
                ));
            }
            if chosen.seen_before(answer[..position].iter().map(String::as_str), choice) {
                return Err(ValidationError::question(
                    index,
                    info,
                    format_args!("{choice:?} is selected twice"),
                ));
            }
            if let Some(offered) = &offered
                && !offered.contains(choice)
            {
                let offered: Vec<&str> = info
                    .options
                    .iter()
                    .map(|option| option.label.as_str())
                    .collect();
                return Err(ValidationError::question(
                    index,
                    info,
                    format_args!(
                        "{choice:?} is not one of the offered options ({}) and this question takes no custom answer",
                        offered.join(", ")
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Converts the seeds' keyed reply form `{"<question text>": "A, B"}` into one answer per
/// question. A missing question is skipped; a multi-select value is split on `", "`, except
/// inside an offered label that itself contains `", "`.
pub(crate) fn answers_from_keyed(
    questions: &[QuestionInfo],
    keyed: &BTreeMap<String, String>,
) -> Result<Vec<Answer>, ValidationError> {
    if let Some(unknown) = keyed
        .keys()
        .find(|key| !questions.iter().any(|info| &info.question == *key))
    {
        return Err(ValidationError::request(format!(
            "{unknown:?} is not the text of any question in this request"
        )));
    }
    questions
        .iter()
        .map(|info| match keyed.get(&info.question) {
            None => Ok(Vec::new()),
            Some(value) if value.is_empty() => Ok(Vec::new()),
            Some(value) if !info.multiple => Ok(vec![value.clone()]),
            Some(value) => split_selections(value, &info.options),
        })
        .collect()
}

/// Splits a multi-select value joined with `", "` back into its selections. A label that
/// contains `", "` is kept whole wherever it appears among the others: at each position the
/// longest run of pieces that forms an offered label is one selection, otherwise one piece.
///
/// The runs are found in one pass over the value, by an Aho-Corasick automaton of the
/// labels that contain `", "`: the time is linear in the value and the matches, whatever
/// the labels. Joining candidate runs to compare them, as this did before, was cubic: a
/// label and a value of tens of kilobytes of `", "` held the registry's lock for hours.
fn split_selections(value: &str, options: &[QuestionOption]) -> Result<Answer, ValidationError> {
    // Byte ranges of the pieces, as `split(", ")` cuts them.
    let mut pieces = Vec::new();
    let mut from = 0;
    for (at, _) in value.match_indices(SEPARATOR) {
        pieces.push(from..at);
        from = at + SEPARATOR.len();
    }
    pieces.push(from..value.len());
    let joined: Vec<&str> = options
        .iter()
        .map(|option| option.label.as_str())
        .filter(|label| label.contains(SEPARATOR))
        .collect();
    // Where each run ends (exclusive, in pieces), by the piece it starts at: one piece
    // unless a label spans more.
    let mut run_end: Vec<usize> = (1..=pieces.len()).collect();
    if !joined.is_empty() {
        let labels = AhoCorasick::new(&joined).map_err(|error| {
            ValidationError::request(format!("the options' labels cannot be matched: {error}"))
        })?;
        // A match counts where it starts a piece and ends one (the pieces' starts, and
        // their ends, ascend strictly).
        for found in labels.find_overlapping_iter(value) {
            if let (Ok(first), Ok(last)) = (
                pieces.binary_search_by_key(&found.start(), |piece| piece.start),
                pieces.binary_search_by_key(&found.end(), |piece| piece.end),
            ) {
                run_end[first] = run_end[first].max(last + 1);
            }
        }
    }
    let mut selections = Vec::new();
    let mut start = 0;
    while let Some(&end) = run_end.get(start) {
        selections.push(value[pieces[start].start..pieces[end - 1].end].to_owned());
        start = end;
    }
    Ok(selections)
}

/// What joins the selections of a multi-select question in the keyed reply form.
const SEPARATOR: &str = ", ";

/// Duplicate detection (of option labels, of an answer's choices) that allocates nothing
/// for the short lists questions have, and stays linear (a hash set) for the rare long one.
enum SeenLabels<'a> {
    /// Compare against the earlier options directly.
    Few,
    /// Remember labels in a set.
    Many(HashSet<&'a str>),
}

impl<'a> SeenLabels<'a> {
    /// Up to this many options, a quadratic scan beats building a set.
    const SCAN_LIMIT: usize = 16;

    fn new(option_count: usize) -> Self {
        if option_count <= Self::SCAN_LIMIT {
            Self::Few
        } else {
            Self::Many(HashSet::with_capacity(option_count))
        }
    }

    /// Whether `label` appeared among `earlier`, the labels before it.
    fn seen_before<'e>(
        &mut self,
        mut earlier: impl Iterator<Item = &'e str>,
        label: &'a str,
    ) -> bool {
        match self {
            Self::Few => earlier.any(|before| before == label),
            Self::Many(labels) => !labels.insert(label),
        }
    }
}

/// The labels a question offers, to look choices up in: scanned when few, hashed when many.
enum Offered<'a> {
    /// Compare against the options directly.
    Few(&'a [QuestionOption]),
    /// Look labels up in a set.
    Many(HashSet<&'a str>),
}

impl<'a> Offered<'a> {
    fn new(options: &'a [QuestionOption]) -> Self {
        if options.len() <= SeenLabels::SCAN_LIMIT {
            Self::Few(options)
        } else {
            Self::Many(options.iter().map(|option| option.label.as_str()).collect())
        }
    }

    /// Whether `label` is one of the options'.
    fn contains(&self, label: &str) -> bool {
        match self {
            Self::Few(options) => options.iter().any(|option| option.label == label),
            Self::Many(labels) => labels.contains(label),
        }
    }
}

/// A label without the blanks around it (spaces, and the blank braille pattern, which
/// shows as nothing), as a reader sees where it starts and ends.
fn bare_label(label: &str) -> &str {
    label.trim_matches(|ch: char| ch.is_whitespace() || ch == '\u{2800}')
}
