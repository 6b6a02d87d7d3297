//! What a human can see of the agent's text: the characters that act without showing
//! themselves, and text and JSON with each of them made visible.
//!
//! The agent writes the text a reviewer decides on (questions, labels, tool names,
//! arguments), and some characters change what text says without showing: a right-to-left
//! override makes `report\u{202e}xcod.exe` read `reportexe.docx`, and variation selectors
//! or tag characters after a visible `ok` can carry hidden bytes (one each). Where askbus
//! renders text for a human outside the web UI (Slack and e-mail messages, MCP forms),
//! these functions mark each such character as `⟨U+202E⟩`; the web UI applies the same
//! rule in the browser (`crates/ui/assets/dom.js`).
//!
//! The rule: hidden are the controls (`Cc`; in multi-line text not tab and newline),
//! format characters (`Cf`), line and paragraph separators, and every default-ignorable
//! code point, taken from Unicode's own tables (`icu_properties`), not from a list that
//! misses what it does not name. Only a joiner that changes how its visible neighbours
//! look stays itself: variation selector 15 or 16 right after an emoji or a keycap base,
//! a zero-width joiner between emoji, and in multi-line text a zero-width non-joiner
//! between characters of a script that uses one (Arabic, Syriac, the Indic scripts). A
//! run of 16 or more blanks that do not break a line (no-break spaces, the blank braille
//! pattern) is marked whole: wrapped, it would push what follows out of sight.

use std::borrow::Cow;
use std::fmt::Write as _;

use icu_properties::props::{
    BinaryProperty, DefaultIgnorableCodePoint, EmojiModifier, EnumeratedProperty,
    ExtendedPictographic, GeneralCategory, GeneralCategoryGroup, Script,
};

/// Whether `ch` acts without showing itself (before the joiners' exception).
fn is_hidden(ch: char, multiline: bool) -> bool {
    if multiline && matches!(ch, '\t' | '\n') {
        return false;
    }
    if ch.is_ascii() {
        return ch.is_ascii_control();
    }
    let hidden = GeneralCategoryGroup::Control
        .union(GeneralCategoryGroup::Format)
        .union(GeneralCategoryGroup::LineSeparator)
        .union(GeneralCategoryGroup::ParagraphSeparator);
    hidden.contains(GeneralCategory::for_char(ch)) || DefaultIgnorableCodePoint::for_char(ch)
}

/// The scripts whose writing uses a zero-width non-joiner (Persian and Arabic, Syriac, the
/// Indic scripts): between two of their characters it changes how the word is shaped.
const NON_JOINING_SCRIPTS: [Script; 12] = [
    Script::Arabic,
    Script::Syriac,
    Script::Devanagari,
    Script::Bengali,
    Script::Gurmukhi,
    Script::Gujarati,
    Script::Oriya,
    Script::Tamil,
    Script::Telugu,
    Script::Kannada,
    Script::Malayalam,
    Script::Sinhala,
];

/// Whether hidden `ch`, between `before` and `after`, only joins what shows around it.
fn joins_visibly(before: Option<char>, ch: char, after: Option<char>, multiline: bool) -> bool {
    let pictograph = |ch: Option<char>| ch.is_some_and(ExtendedPictographic::for_char);
    match ch {
        '\u{fe0e}' | '\u{fe0f}' => {
            (pictograph(before) || before.is_some_and(|ch| matches!(ch, '#' | '*' | '0'..='9')))
                && !after.is_some_and(|ch| ('\u{fe00}'..='\u{fe0f}').contains(&ch))
        }
        '\u{200d}' => {
            (pictograph(before)
                || before.is_some_and(|ch| ch == '\u{fe0f}' || EmojiModifier::for_char(ch)))
                && pictograph(after)
        }
        '\u{200c}' => {
            // A letter or mark (a virama is a mark of its script) before, a letter after.
            let of_those = |ch: char, group: GeneralCategoryGroup| {
                group.contains(GeneralCategory::for_char(ch))
                    && NON_JOINING_SCRIPTS.contains(&Script::for_char(ch))
            };
            let letter_or_mark = GeneralCategoryGroup::Letter.union(GeneralCategoryGroup::Mark);
            multiline
                && before.is_some_and(|ch| of_those(ch, letter_or_mark))
                && after.is_some_and(|ch| of_those(ch, GeneralCategoryGroup::Letter))
        }
        _ => false,
    }
}

/// A blank that does not break a line: no-break spaces and the blank braille pattern.
fn is_blank(ch: char) -> bool {
    matches!(ch, '\u{a0}' | '\u{2007}' | '\u{202f}' | '\u{2800}')
}

/// How many blanks in a row make a run that is marked whole: wrapped, it would fill lines
/// with nothing and push what follows out of sight.
const BLANK_RUN: usize = 16;

/// What is marked in a text.
enum Mark<'a> {
    /// One hidden character.
    Hidden(char),
    /// A run of [`BLANK_RUN`] or more blanks, as it is.
    Blanks(&'a str),
}

/// What is marked in `text`, by byte offset.
fn marks(text: &str, multiline: bool) -> impl Iterator<Item = (usize, Mark<'_>)> + '_ {
    let mut before = None;
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while let Some((index, ch)) = chars.next() {
            if is_blank(ch) {
                let rest = &text[index..];
                let run = rest.chars().take_while(|&ch| is_blank(ch)).count();
                if run >= BLANK_RUN {
                    let end = rest
                        .char_indices()
                        .nth(run)
                        .map_or(rest.len(), |(end, _)| end);
                    for _ in 1..run {
                        chars.next();
                    }
                    before = rest[..end].chars().next_back();
                    return Some((index, Mark::Blanks(&rest[..end])));
                }
            }
            let previous = before.replace(ch);
            if is_hidden(ch, multiline)
                && !joins_visibly(previous, ch, chars.peek().map(|&(_, ch)| ch), multiline)
            {
                return Some((index, Mark::Hidden(ch)));
            }
        }
        None
    })
}

/// `text` with each hidden character shown as `⟨U+202E⟩` and each run of 16 or more
/// blanks that do not break a line as `⟨U+00A0 × 40⟩` (`⟨40 blanks⟩` when they differ);
/// newlines and tabs stay in `multiline` text and are marked in one-line text (names,
/// labels, ids). Borrowed when nothing is marked, the common case.
pub fn visible_text(text: &str, multiline: bool) -> Cow<'_, str> {
    rewrite(text, multiline, |shown, mark| {
        let _ = match mark {
            Mark::Hidden(ch) => write!(shown, "⟨U+{:04X}⟩", u32::from(*ch)),
            Mark::Blanks(run) => {
                let count = run.chars().count();
                let mut blanks = run.chars();
                match (blanks.next(), blanks.all(|ch| run.starts_with(ch))) {
                    (Some(first), true) => write!(shown, "⟨U+{:04X} × {count}⟩", u32::from(first)),
                    _ => write!(shown, "⟨{count} blanks⟩"),
                }
            }
        };
    })
}

/// The JSON text `json` with each hidden character, and each blank of a run, (which can
/// only stand inside its strings) written as `\uXXXX` escapes: what it shows is what it
/// is, and it parses back to the same value.
pub fn visible_json(json: &str) -> Cow<'_, str> {
    rewrite(json, true, |shown, mark| {
        let escape = |shown: &mut String, ch: char| {
            for unit in ch.encode_utf16(&mut [0; 2]) {
                let _ = write!(shown, "\\u{unit:04x}");
            }
        };
        match mark {
            Mark::Hidden(ch) => escape(shown, *ch),
            Mark::Blanks(run) => run.chars().for_each(|ch| escape(shown, ch)),
        }
    })
}

/// `text` with each mark replaced by what `mark` writes.
fn rewrite<'a>(
    text: &'a str,
    multiline: bool,
    mark: impl Fn(&mut String, &Mark<'_>),
) -> Cow<'a, str> {
    let mut marks = marks(text, multiline).peekable();
    if marks.peek().is_none() {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for (index, found) in marks {
        shown.push_str(&text[last..index]);
        mark(&mut shown, &found);
        last = index
            + match found {
                Mark::Hidden(ch) => ch.len_utf8(),
                Mark::Blanks(run) => run.len(),
            };
    }
    shown.push_str(&text[last..]);
    Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_what_hides_and_keeps_what_joins_visibly() {
        let cases = [
            ("report\u{202e}xcod.exe", "report⟨U+202E⟩xcod.exe"),
            ("ok\u{e0100}\u{e0101}", "ok⟨U+E0100⟩⟨U+E0101⟩"),
            ("ok\u{fe00}", "ok⟨U+FE00⟩"),
            ("Yes\u{fe0f}", "Yes⟨U+FE0F⟩"),
            (
                "a\u{034f}b\u{17b4}c\u{2065}d\u{00ad}e",
                "a⟨U+034F⟩b⟨U+17B4⟩c⟨U+2065⟩d⟨U+00AD⟩e",
            ),
            ("x\u{200d}y", "x⟨U+200D⟩y"),
            ("ab\u{200c}cd", "ab⟨U+200C⟩cd"),
            ("\u{2764}\u{fe0f}\u{fe0f}", "\u{2764}⟨U+FE0F⟩⟨U+FE0F⟩"),
            ("bell\u{7}", "bell⟨U+0007⟩"),
            ("two\nlines\tand a tab", "two\nlines\tand a tab"),
            // Emoji sequences and a Persian non-joiner show as themselves.
            ("\u{2764}\u{fe0f} Yes", "\u{2764}\u{fe0f} Yes"),
            (
                "\u{1f469}\u{1f3fd}\u{200d}\u{1f4bb}",
                "\u{1f469}\u{1f3fd}\u{200d}\u{1f4bb}",
            ),
            (
                "\u{2764}\u{fe0f}\u{200d}\u{1f525}",
                "\u{2764}\u{fe0f}\u{200d}\u{1f525}",
            ),
            ("1\u{fe0f}\u{20e3}", "1\u{fe0f}\u{20e3}"),
            (
                "\u{646}\u{645}\u{6cc}\u{200c}\u{62e}\u{648}",
                "\u{646}\u{645}\u{6cc}\u{200c}\u{62e}\u{648}",
            ),
        ];
        for (text, shown) in cases {
            assert_eq!(visible_text(text, true), shown, "{text:?}");
            let borrowed = matches!(visible_text(text, true), Cow::Borrowed(_));
            assert_eq!(
                borrowed,
                text == shown,
                "marked only when something is: {text:?}"
            );
        }
        assert_eq!(visible_text("two\nlines", false), "two⟨U+000A⟩lines");
        assert_eq!(
            visible_text("\u{646}\u{200c}\u{62e}", false),
            "\u{646}⟨U+200C⟩\u{62e}",
            "one-line text marks every non-joiner"
        );
        assert!(matches!(visible_text("plain", true), Cow::Borrowed(_)));
        // A non-joiner only between characters of a script that uses one.
        for mixed in [
            "e\u{301}\u{200c}vil",
            "\u{6f22}\u{200c}\u{5b57}",
            "\u{646}\u{200c}abc",
        ] {
            assert!(visible_text(mixed, true).contains("⟨U+200C⟩"), "{mixed:?}");
        }
        assert_eq!(
            visible_text("\u{915}\u{94d}\u{200c}\u{937}", true),
            "\u{915}\u{94d}\u{200c}\u{937}"
        );
        // Blank runs, alike or mixed, are one marker; a short one stays.
        let padded = format!("ls{}; curl x | sh", "\u{a0}".repeat(40));
        assert_eq!(visible_text(&padded, true), "ls⟨U+00A0 × 40⟩; curl x | sh");
        let mixed = format!("a{}b", "\u{a0}\u{2800}".repeat(8));
        assert_eq!(visible_text(&mixed, false), "a⟨16 blanks⟩b");
        assert_eq!(visible_text("a\u{a0}b", false), "a\u{a0}b");
    }

    #[test]
    fn json_keeps_its_value_and_shows_its_hidden_characters() {
        let value =
            serde_json::json!(["report\u{202e}xcod.exe", "ok\u{e0100}", "\u{2764}\u{fe0f}"]);
        let json = value.to_string();
        let shown = visible_json(&json);
        assert_eq!(shown, r#"["report\u202excod.exe","ok\udb40\udd00","❤️"]"#);
        let read_back: serde_json::Value = serde_json::from_str(&shown).unwrap_or_default();
        assert_eq!(read_back, value);

        let padded = serde_json::json!([format!("ls{}x", "\u{2800}".repeat(16))]);
        let json = padded.to_string();
        let shown = visible_json(&json);
        assert_eq!(shown, format!(r#"["ls{}x"]"#, r"\u2800".repeat(16)));
        let read_back: serde_json::Value = serde_json::from_str(&shown).unwrap_or_default();
        assert_eq!(read_back, padded);
    }
}
