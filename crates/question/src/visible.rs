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
//! between letters of a script that uses one (not Latin, Greek or Cyrillic).

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
            let letter = |ch: char| {
                GeneralCategoryGroup::Letter
                    .union(GeneralCategoryGroup::Mark)
                    .contains(GeneralCategory::for_char(ch))
            };
            multiline
                && before.is_some_and(|ch| {
                    letter(ch)
                        && ![Script::Latin, Script::Greek, Script::Cyrillic]
                            .contains(&Script::for_char(ch))
                })
                && after.is_some_and(|ch| {
                    GeneralCategoryGroup::Letter.contains(GeneralCategory::for_char(ch))
                })
        }
        _ => false,
    }
}

/// The hidden characters of `text` that are marked, by byte offset.
fn marked(text: &str, multiline: bool) -> impl Iterator<Item = (usize, char)> + '_ {
    let mut before = None;
    let mut chars = text.char_indices().peekable();
    std::iter::from_fn(move || {
        while let Some((index, ch)) = chars.next() {
            let previous = before.replace(ch);
            if is_hidden(ch, multiline)
                && !joins_visibly(previous, ch, chars.peek().map(|&(_, ch)| ch), multiline)
            {
                return Some((index, ch));
            }
        }
        None
    })
}

/// Whether `text` holds a character that would be marked (see the module docs).
pub fn has_hidden(text: &str, multiline: bool) -> bool {
    marked(text, multiline).next().is_some()
}

/// `text` with each hidden character shown as `⟨U+202E⟩`; newlines and tabs stay in
/// `multiline` text and are marked in one-line text (names, labels, ids). Borrowed when
/// nothing is hidden, the common case.
pub fn visible_text(text: &str, multiline: bool) -> Cow<'_, str> {
    rewrite(text, multiline, |shown, ch| {
        let _ = write!(shown, "⟨U+{:04X}⟩", u32::from(ch));
    })
}

/// The JSON text `json` with each hidden character (which can only stand inside its
/// strings) written as `\uXXXX` escapes: what it shows is what it is, and it parses back
/// to the same value.
pub fn visible_json(json: &str) -> Cow<'_, str> {
    rewrite(json, true, |shown, ch| {
        for unit in ch.encode_utf16(&mut [0; 2]) {
            let _ = write!(shown, "\\u{unit:04x}");
        }
    })
}

/// `text` with each marked character replaced by what `mark` writes.
fn rewrite(text: &str, multiline: bool, mark: impl Fn(&mut String, char)) -> Cow<'_, str> {
    let mut marks = marked(text, multiline).peekable();
    if marks.peek().is_none() {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    let mut last = 0;
    for (index, ch) in marks {
        shown.push_str(&text[last..index]);
        mark(&mut shown, ch);
        last = index + ch.len_utf8();
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
            assert_eq!(has_hidden(text, true), text != shown, "{text:?}");
        }
        assert_eq!(visible_text("two\nlines", false), "two⟨U+000A⟩lines");
        assert_eq!(
            visible_text("\u{646}\u{200c}\u{62e}", false),
            "\u{646}⟨U+200C⟩\u{62e}",
            "one-line text marks every non-joiner"
        );
        assert!(matches!(visible_text("plain", true), Cow::Borrowed(_)));
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
    }
}
