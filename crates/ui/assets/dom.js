// Small DOM helpers shared by the views: element construction and text formatting.
//
// Text policy, in exact words: text is only ever inserted as text (DOM text nodes, never
// HTML), so no agent-supplied string can become markup, whatever the CSP says. And text
// from the agent (session ids, questions, labels, action names, arguments, errors quoting
// them) cannot hide or reorder what it says: characters that act without showing
// themselves (controls, format characters such as bidi controls, zero-width characters
// and tag characters, line and paragraph separators, and every default-ignorable code
// point, variation selectors included, which like tag characters can carry hidden bytes)
// are shown as a marked token, `⟨U+202E⟩`, so `report\u202excod.exe` reads
// `report⟨U+202E⟩xcod.exe`, not `reportexe.docx`. Only a joiner that changes how its
// visible neighbours look stays itself (`joinsVisibly`: emoji sequences, and a non-joiner
// between letters of scripts that use one).
// Newline and tab stay themselves in multi-line text and are marked in one-line text
// (ids, names, labels). Every string child of `h()` goes through `visibleText`, so every
// view gets this without asking; `oneLine` marks one-line text, `visibleString` serves
// places that take no markup (an `<option>`, an accessible name), and `jsonText` writes
// JSON with those characters as `\uXXXX` escapes, which read back to the same value.

import { t as pageText } from './i18n.js';

/**
 * Every character that acts without showing itself: controls, format characters (bidi
 * controls, zero-width characters, tag characters), line and paragraph separators, and
 * every other default-ignorable code point (variation selectors, fillers, the combining
 * grapheme joiner). Classes of Unicode, not a list: a list misses what it does not name,
 * and each of the 256 variation selectors can carry a hidden byte after a visible `ok`.
 */
// Alternatives, not one class: Chromium 156 misses some characters of a class that
// unites property escapes (`[\p{Emoji_Modifier}\ufe0f]` misses U+1F3FD).
const HIDDEN_CLASSES = String.raw`\p{Cc}|\p{Cf}|\p{Zl}|\p{Zp}|\p{Default_Ignorable_Code_Point}`;
/** The hidden characters of multi-line text: all but `\t` and `\n`. */
const HIDDEN_MULTILINE = new RegExp(`(?![\\t\\n])(?:${HIDDEN_CLASSES})`, 'gu');
/** The hidden characters of one-line text (ids, names, labels): newline and tab too. */
const HIDDEN_ONE_LINE = new RegExp(`(?:${HIDDEN_CLASSES})`, 'gu');
/**
 * A run of 16 or more blanks that do not break a line (no-break spaces, the blank braille
 * pattern), mixed or not: wrapped, it would fill lines with nothing and push what follows
 * out of sight, so the screen shows it as one marker, `⟨U+00A0 × 3000⟩` (or
 * `⟨3000 blanks⟩` when they differ).
 */
const BLANK_RUN = String.raw`[\u00a0\u2007\u202f\u2800]{16,}`;
/** Whether `found`, a match of the patterns below, is a blank run. */
const isBlankRun = (found) => found.length >= 16;

/** `⟨U+00A0 × 3000⟩`, or `⟨3000 blanks⟩`: how a blank run reads on screen. */
function blankRunMarker(run) {
  const first = run[0];
  return [...run].every((char) => char === first) ? `⟨${codePoint(first)} × ${run.length}⟩` : `⟨${run.length} blanks⟩`;
}
/** What `visibleText` marks: blank runs, then hidden characters. */
const SHOWN_MULTILINE = new RegExp(`${BLANK_RUN}|${HIDDEN_MULTILINE.source}`, 'gu');
const SHOWN_ONE_LINE = new RegExp(`${BLANK_RUN}|${HIDDEN_ONE_LINE.source}`, 'gu');

/**
 * The scripts whose writing uses a zero-width non-joiner (Persian and Arabic, Syriac, the
 * Indic scripts): between two of their characters it changes how the word is shaped.
 */
const NON_JOINING_SCRIPTS = ['Arabic', 'Syriac', 'Devanagari', 'Bengali', 'Gurmukhi', 'Gujarati', 'Oriya', 'Tamil', 'Telugu', 'Kannada', 'Malayalam', 'Sinhala']
  .map((script) => String.raw`\p{Script=${script}}`)
  .join('|');
/** A letter or mark of those scripts ending `before` (a virama is a mark of its script). */
const NON_JOINING_BEFORE = new RegExp(`(?=\\p{L}|\\p{M})(?:${NON_JOINING_SCRIPTS})$`, 'u');
/** A letter of those scripts starting `after`. */
const NON_JOINING_AFTER = new RegExp(`^(?=\\p{L})(?:${NON_JOINING_SCRIPTS})`, 'u');

/**
 * Whether the hidden character at `index` of `text` only joins what shows around it, as
 * emoji and some scripts need, so it stays itself: a variation selector 15 or 16 right
 * after an emoji (`❤️`, a keycap), a zero-width joiner between emoji (`👩🏽‍💻`), and in
 * multi-line text a zero-width non-joiner between characters of a script that uses it. Each
 * one of these changes how its neighbours look; anything else, or a run of them, is marked.
 */
function joinsVisibly(text, index, char, multiline) {
  const before = text.slice(Math.max(0, index - 2), index);
  const after = text.slice(index + char.length, index + char.length + 2);
  switch (char) {
    case '\ufe0e':
    case '\ufe0f':
      return /(?:\p{Extended_Pictographic}|[#*0-9])$/u.test(before) && !/^[\ufe00-\ufe0f]/u.test(after);
    case '\u200d':
      return /(?:\p{Extended_Pictographic}|\p{Emoji_Modifier}|\ufe0f)$/u.test(before) && /^\p{Extended_Pictographic}/u.test(after);
    case '\u200c':
      return multiline && NON_JOINING_BEFORE.test(before) && NON_JOINING_AFTER.test(after);
    default:
      return false;
  }
}

/** What the marked characters are, for the marker's tooltip. */
const HIDDEN_NAMES = {
  0x09: 'CHARACTER TABULATION',
  0x0a: 'LINE FEED',
  0x0d: 'CARRIAGE RETURN',
  0x00ad: 'SOFT HYPHEN',
  0x034f: 'COMBINING GRAPHEME JOINER',
  0x061c: 'ARABIC LETTER MARK',
  0x115f: 'HANGUL CHOSEONG FILLER',
  0x1160: 'HANGUL JUNGSEONG FILLER',
  0x180e: 'MONGOLIAN VOWEL SEPARATOR',
  0x200c: 'ZERO WIDTH NON-JOINER',
  0x200d: 'ZERO WIDTH JOINER',
  0x200b: 'ZERO WIDTH SPACE',
  0x200e: 'LEFT-TO-RIGHT MARK',
  0x200f: 'RIGHT-TO-LEFT MARK',
  0x2028: 'LINE SEPARATOR',
  0x2029: 'PARAGRAPH SEPARATOR',
  0x202a: 'LEFT-TO-RIGHT EMBEDDING',
  0x202b: 'RIGHT-TO-LEFT EMBEDDING',
  0x202c: 'POP DIRECTIONAL FORMATTING',
  0x202d: 'LEFT-TO-RIGHT OVERRIDE',
  0x202e: 'RIGHT-TO-LEFT OVERRIDE',
  0x2060: 'WORD JOINER',
  0x2061: 'FUNCTION APPLICATION',
  0x2062: 'INVISIBLE TIMES',
  0x2063: 'INVISIBLE SEPARATOR',
  0x2064: 'INVISIBLE PLUS',
  0x2066: 'LEFT-TO-RIGHT ISOLATE',
  0x2067: 'RIGHT-TO-LEFT ISOLATE',
  0x2068: 'FIRST STRONG ISOLATE',
  0x2069: 'POP DIRECTIONAL ISOLATE',
  0x3164: 'HANGUL FILLER',
  0xfeff: 'ZERO WIDTH NO-BREAK SPACE',
  0xffa0: 'HALFWIDTH HANGUL FILLER',
};

/** A hidden character's name, for the marker's tooltip. */
function hiddenName(point) {
  if (HIDDEN_NAMES[point]) return HIDDEN_NAMES[point];
  if ((point >= 0xfe00 && point <= 0xfe0f) || (point >= 0xe0100 && point <= 0xe01ef)) return 'VARIATION SELECTOR';
  if (point >= 0xe0000 && point <= 0xe007f) return 'TAG CHARACTER';
  return point < 0xa0 ? 'CONTROL CHARACTER' : 'INVISIBLE CHARACTER';
}

/** `U+202E`: a character's code point as Unicode writes it. */
function codePoint(char) {
  return `U+${char.codePointAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/** `⟨U+202E⟩`: how a hidden character reads on screen. */
const marker = (char) => `⟨${codePoint(char)}⟩`;

/**
 * `text` (any value, as a string) for the screen: a string when nothing in it is hidden
 * (the common case, and cheap), else a fragment in which each hidden character is a
 * `<span class="hidden-char">⟨U+202E⟩</span>` naming it. `multiline: false` marks newlines
 * and tabs too.
 */
export function visibleText(text, { multiline = true } = {}) {
  const string = String(text);
  const pattern = multiline ? SHOWN_MULTILINE : SHOWN_ONE_LINE;
  // `search`, not `test`: it leaves the global pattern's `lastIndex` alone for `matchAll`.
  if (string.search(pattern) === -1) return string;
  const fragment = document.createDocumentFragment();
  let last = 0;
  for (const match of string.matchAll(pattern)) {
    const [found] = match;
    const blank = isBlankRun(found);
    if (!blank && joinsVisibly(string, match.index, found, multiline)) continue;
    const title = blank ? blankRunMarker(found) : `${codePoint(found)} ${hiddenName(found.codePointAt(0))}`;
    fragment.append(
      string.slice(last, match.index),
      h('span', { class: 'hidden-char', title }, blank ? blankRunMarker(found) : marker(found)),
    );
    last = match.index + found.length;
  }
  fragment.append(string.slice(last));
  return fragment;
}

/** One-line agent text (a session id, a name, a label): `visibleText` marking newlines too. */
export const oneLine = (text) => visibleText(text, { multiline: false });

/** `text` with each hidden character as its marker, for places that take no markup. */
export function visibleString(text) {
  return String(text).replace(SHOWN_ONE_LINE, (found, index, string) => {
    if (isBlankRun(found)) return blankRunMarker(found);
    return joinsVisibly(string, index, found, false) ? found : marker(found);
  });
}

/** Replaces `element`'s content with `text`, hidden characters marked (`visibleText`). */
export function setText(element, text) {
  element.replaceChildren(visibleText(text));
}

/**
 * `value` as JSON (indented by `indent`), with every hidden character inside its strings
 * written as a `\uXXXX` escape: what it shows is what it is, and it parses back to
 * `value` (the JSON editor starts from it).
 */
export function jsonText(value, indent) {
  const text = JSON.stringify(value, null, indent) ?? 'null';
  // A character past U+FFFF is two UTF-16 code units: each is escaped, so the JSON reads back.
  return text.replace(HIDDEN_MULTILINE, (char, index, string) =>
    joinsVisibly(string, index, char, true)
      ? char
      : Array.from({ length: char.length }, (_, unit) => `\\u${char.charCodeAt(unit).toString(16).padStart(4, '0')}`).join(''),
  );
}

/**
 * Creates an element. `props`: `class`, `text`, `on<event>` listeners, `dataset`, and any
 * other key as an attribute (`true` for a boolean attribute; `false`/`null`/`undefined`
 * leave it out). Children are nodes or strings (strings become text, never HTML, with
 * hidden characters marked: `visibleText`).
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') element.className = value;
    else if (key === 'text') setText(element, value);
    else if (key === 'dataset') Object.assign(element.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') {
      element.addEventListener(key.slice(2), value);
    } else element.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : visibleText(child));
  }
  return element;
}

/**
 * The accessible name of a button every card has: its visible `text`, then what it is
 * about (`Dismiss` + `question Database` -> `Dismiss: question Database`), so a screen
 * reader's list of buttons tells the cards apart. It starts with the visible text, so a
 * speech user can still say what they see.
 */
export function nameFor(text, subject) {
  return `${text}: ${visibleString(subject)}`;
}

/** The "Dismiss" button of a resolved card about `subject`, in `t`'s language. */
export function dismissButton(subject, dismiss, t = pageText) {
  return h(
    'button',
    { type: 'button', class: 'secondary small', 'aria-label': nameFor(t('Dismiss'), subject), onclick: dismiss },
    t('Dismiss'),
  );
}

/** A DOM id derived from `parts`, safe for `id`/`for`/`aria-*` references. */
export function domId(...parts) {
  return parts.join('-').replace(/[^A-Za-z0-9_-]/g, '_');
}

/** Time left as `m:ss` or `h:mm:ss`; `null` when it has run out. */
export function formatRemaining(milliseconds) {
  if (milliseconds <= 0) return null;
  const total = Math.ceil(milliseconds / 1000);
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  return hours > 0
    ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}`
    : `${minutes}:${seconds}`;
}

/**
 * A countdown element for `expiresAt` (ms since the epoch), kept current by `tick(now)`,
 * in `t`'s language.
 */
export function countdown(expiresAt, t = pageText) {
  const element = h('span', { class: 'timer', role: 'timer' });
  const tick = (now) => {
    if (!expiresAt) {
      element.textContent = t('no time limit');
      element.dataset.state = 'none';
      return;
    }
    const left = formatRemaining(expiresAt - now);
    element.textContent = left === null ? t('time is up') : t('expires in {left}', { left });
    element.dataset.state = left === null ? 'over' : expiresAt - now < 60_000 ? 'urgent' : 'ok';
    element.title = t('Expires at {time}', { time: t.time(expiresAt) });
  };
  return { element, tick };
}

/**
 * What befell a request nobody has answered yet, for its card's meta line: `reminded`,
 * `escalated to bob`, or both (`reminded · escalated to bob`), as the server's
 * `*.reminded` and `*.escalated` events say. Hidden until one did. The names are
 * credential names a request chose, shown as one-line text with hidden characters marked.
 * Returns `{element, reminded(), escalated(names)}`; each step shows once. In `t`'s language.
 */
export function followUpNote(t = pageText) {
  const element = h('span', { class: 'follow-up', hidden: true });
  let reminded = false;
  /** Who it escalated to, once it did (an empty list: the event named nobody). */
  let escalatedTo = null;
  const render = () => {
    const parts = [];
    if (reminded) parts.push(t('reminded'));
    if (escalatedTo) {
      if (parts.length > 0) parts.push(' · ');
      if (escalatedTo.length > 0) parts.push(...t.parts('escalated to {names}', { names: oneLine(escalatedTo.join(', ')) }));
      else parts.push(t('escalated'));
    }
    element.replaceChildren(...parts);
    element.dataset.step = escalatedTo ? 'escalated' : 'reminded';
    element.hidden = parts.length === 0;
  };
  return {
    element,
    reminded() {
      if (reminded) return;
      reminded = true;
      render();
    },
    escalated(names) {
      if (escalatedTo) return;
      escalatedTo = Array.isArray(names) ? names.filter((name) => typeof name === 'string') : [];
      render();
    },
  };
}

/**
 * Who asked or answered a request, as a line: `asked by agent-1 (agent)` (`verb`: `asked`,
 * `answered`, `declined`, `withdrawn`, `decided`, `granted`; in `t`'s
 * language). `identity` is the
 * wire's `{name, role}`, or only a name (the timeline's histories carry the name alone); the
 * name is agent-controlled text, so it is one-line text with hidden characters marked.
 * `null` when the wire names nobody (a server without roles, an outcome nobody decided).
 */
export function byLine(verb, identity, className = 'by', t = pageText) {
  const name = typeof identity === 'string' ? identity : identity?.name;
  if (typeof name !== 'string' || name === '') return null;
  const role = typeof identity === 'object' && typeof identity.role === 'string' ? ` (${identity.role})` : '';
  const line = BY_LINES[verb] ?? 'decided by {name}';
  return h('span', { class: className }, ...t.parts(line, { name: h('span', { class: 'by-name' }, oneLine(name)) }), role);
}

/** `byLine`'s texts by verb. */
const BY_LINES = {
  asked: 'asked by {name}',
  answered: 'answered by {name}',
  declined: 'declined by {name}',
  withdrawn: 'withdrawn by {name}',
  decided: 'decided by {name}',
  granted: 'granted by {name}',
};

/**
 * A request's session, as a link to that session's timeline on the main page
 * (`/?session=`: from an answer link's page too).
 */
export function sessionLink(session, t = pageText) {
  return h(
    'a',
    {
      class: 'session',
      href: `/?session=${encodeURIComponent(session)}`,
      title: t('Show this session and its timeline'),
      // Shown before the name by the style sheet (`.session::before`).
      dataset: { session, label: t('session') },
    },
    oneLine(session),
  );
}

/** `value` as indented JSON (for arguments shown to a human), see `jsonText`. */
export function prettyJson(value) {
  return jsonText(value, 2);
}
