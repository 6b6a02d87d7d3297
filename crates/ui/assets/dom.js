// Small DOM helpers shared by the views: element construction and text formatting.

/**
 * Creates an element. `props`: `class`, `text`, `on<event>` listeners, `dataset`, and any
 * other key as an attribute (`true` for a boolean attribute; `false`/`null`/`undefined`
 * leave it out). Children are nodes or strings (strings become text, never HTML).
 */
export function h(tag, props = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') element.className = value;
    else if (key === 'text') element.textContent = value;
    else if (key === 'dataset') Object.assign(element.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') {
      element.addEventListener(key.slice(2), value);
    } else element.setAttribute(key, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
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
  return `${text}: ${subject}`;
}

/** The "Dismiss" button of a resolved card about `subject`. */
export function dismissButton(subject, dismiss) {
  return h(
    'button',
    { type: 'button', class: 'secondary small', 'aria-label': nameFor('Dismiss', subject), onclick: dismiss },
    'Dismiss',
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

/** A countdown element for `expiresAt` (ms since the epoch), kept current by `tick(now)`. */
export function countdown(expiresAt) {
  const element = h('span', { class: 'timer', role: 'timer' });
  const tick = (now) => {
    if (!expiresAt) {
      element.textContent = 'no time limit';
      element.dataset.state = 'none';
      return;
    }
    const left = formatRemaining(expiresAt - now);
    element.textContent = left === null ? 'time is up' : `expires in ${left}`;
    element.dataset.state = left === null ? 'over' : expiresAt - now < 60_000 ? 'urgent' : 'ok';
    element.title = `Expires at ${new Date(expiresAt).toLocaleString()}`;
  };
  return { element, tick };
}

/** A request's session, as a link to that session's timeline (`?session=`). */
export function sessionLink(session) {
  return h(
    'a',
    {
      class: 'session',
      href: `?session=${encodeURIComponent(session)}`,
      title: 'Show this session and its timeline',
      dataset: { session },
    },
    session,
  );
}

/** `value` as indented JSON (for arguments shown to a human). */
export function prettyJson(value) {
  return JSON.stringify(value, null, 2) ?? 'null';
}
