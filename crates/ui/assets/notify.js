// Telling a human who is looking elsewhere that a request arrived: a desktop notification
// (after they opt in) and a count in the tab's title.
//
// Policy, in exact words:
// - Permission is asked only when the human clicks "Notify me", never on load (a prompt
//   nobody asked for is the one browsers learn to block). The choice ('on' or 'off') is
//   kept in localStorage, so every tab of this server follows it; notifications show only
//   when it is 'on' and the browser granted the permission. Denied: the control gives way
//   to a note that they are blocked in the browser's settings, which only the human can
//   change. Without the Notification API there is no control at all.
// - The app reports each request that arrives on the event stream (`arrived`) and each
//   that ends (`ended`). Only what arrives while the tab is hidden counts (`unseen`): the
//   app's title shows how many of those are still pending until the tab is shown again.
// - A notification is raised only for a live arrival (`notify`: the app says which are;
//   a stream resumed after a reconnection replays what it missed, which is no news), one
//   per request (tagged with its id), a microtask after the events being applied, so a
//   request that ended in the same burst raises none. A request that ends closes its
//   notification; showing the tab closes them all. Clicking one brings the tab forward
//   and the request's card into view (`reveal`).
// - Agent text reaches a notification as plain text only (the Notification options take
//   no markup), on one line, cut to `PREVIEW` characters, with hidden characters marked as
//   the cards mark them (`visibleString`).

import { visibleString } from './dom.js';
import { t as pageText, translator } from './i18n.js';

/** Where the human's choice is kept. */
const CHOICE_KEY = 'askbus.notifications';
/** The longest title or body of a notification, in characters (before marking). */
const PREVIEW = 120;

/** `text` as one line of at most `PREVIEW` characters, hidden characters marked. */
function preview(text) {
  const chars = [...String(text).replace(/[ \t\r\n]+/g, ' ').trim()];
  const cut = chars.length > PREVIEW ? `${chars.slice(0, PREVIEW - 1).join('')}…` : chars.join('');
  return visibleString(cut);
}

/** A notification's title and body for request `request` of `kind`. */
function describe(kind, request) {
  const question = kind === 'question';
  // In the language of its card: the browser's, else the request's.
  const t = translator(request.locale);
  const who = question ? request.askedBy?.name : request.asked_by?.name;
  const session = question ? request.sessionID : request.session_id;
  const named = typeof who === 'string' && who !== '';
  if (question) {
    const first = request.questions?.[0] ?? {};
    return {
      title: named ? t('Question from {who}', { who }) : t('Question in session {session}', { session }),
      body: [first.header, first.question].filter(Boolean).join(': '),
    };
  }
  const names = (request.action_requests ?? []).map((action) => action.name).join(', ');
  return { title: named ? t('Approval from {who}', { who }) : t('Approval in session {session}', { session }), body: names };
}

function readChoice() {
  try {
    return localStorage.getItem(CHOICE_KEY) === 'on';
  } catch {
    return false;
  }
}

function storeChoice(on) {
  try {
    localStorage.setItem(CHOICE_KEY, on ? 'on' : 'off');
  } catch {
    // Storage disabled: the choice lasts as long as this page.
  }
}

export class ArrivalNotifier {
  /**
   * `toggle`: the "Notify me" button; `blocked`: the note shown instead when the browser
   * denies the permission. `changed()`: the title must be rendered again; `reveal(id)`:
   * bring request `id`'s card into view; `say(text)`: tell screen-reader users.
   */
  constructor({ toggle, blocked }, { changed, reveal, say }) {
    this.toggle = toggle;
    this.blocked = blocked;
    this.changed = changed;
    this.reveal = reveal;
    this.say = say;
    // Browsers offer notifications to secure origins only (localhost counts as one).
    this.supported = window.isSecureContext && typeof Notification === 'function';
    this.on = this.supported && readChoice();
    /** Requests that arrived while the tab was hidden and are still pending. */
    this.unseen = new Set();
    /** Notifications to raise after the events being applied: request id -> text. */
    this.queued = new Map();
    /** Notifications shown, by request id, until clicked, ended or the tab is shown. */
    this.shown = new Map();
    toggle.addEventListener('click', () => this.choose());
    document.addEventListener('visibilitychange', () => this.visibilityChanged());
    // Another tab of this server changed the choice.
    window.addEventListener('storage', (event) => {
      if (event.key !== CHOICE_KEY) return;
      this.on = this.supported && readChoice();
      this.renderControl();
    });
    this.renderControl();
  }

  /** Request `request` of `kind` arrived; `notify`: live, so it may raise a notification. */
  arrived(kind, request, { notify }) {
    if (!document.hidden) return;
    this.unseen.add(request.id);
    if (!notify || !this.enabled()) return;
    if (this.queued.size === 0) queueMicrotask(() => this.raise());
    this.queued.set(request.id, describe(kind, request));
  }

  /** Request `id` ended: it no longer counts, and its notification goes. */
  ended(id) {
    this.unseen.delete(id);
    this.queued.delete(id);
    this.shown.get(id)?.close();
    this.shown.delete(id);
  }

  /** How many requests arrived while the tab was hidden and are still pending. */
  get unseenCount() {
    return this.unseen.size;
  }

  enabled() {
    return this.on && Notification.permission === 'granted';
  }

  raise() {
    for (const [id, { title, body }] of this.queued) {
      let notification;
      try {
        notification = new Notification(preview(title), { body: preview(body), tag: id });
      } catch {
        // Chrome on Android shows notifications through a service worker only; the title
        // still counts the request.
        continue;
      }
      notification.onclick = () => {
        window.focus();
        notification.close();
        this.shown.delete(id);
        this.reveal(id);
      };
      this.shown.set(id, notification);
    }
    this.queued.clear();
  }

  visibilityChanged() {
    if (document.hidden) return;
    this.unseen.clear();
    for (const notification of this.shown.values()) notification.close();
    this.shown.clear();
    // The permission may have changed in the browser's settings meanwhile.
    this.renderControl();
    this.changed();
  }

  /** "Notify me" turns notifications on (asking for the permission first), and back off. */
  async choose() {
    if (this.enabled()) {
      this.on = false;
    } else {
      // Asked here, on the human's click; the browser prompts only if it has no answer yet.
      this.on = (await Notification.requestPermission()) === 'granted';
    }
    // A refusal is not stored as a choice: the browser remembers it, and the note says so.
    if (this.on || Notification.permission === 'granted') storeChoice(this.on);
    this.renderControl();
    if (Notification.permission === 'denied') this.say(this.blocked.textContent);
    else this.say(this.on ? pageText('Notifications on: a request arriving while this tab is hidden raises one.') : pageText('Notifications off.'));
  }

  renderControl() {
    const denied = this.supported && Notification.permission === 'denied';
    this.toggle.hidden = !this.supported || denied;
    this.blocked.hidden = !denied;
    this.toggle.textContent = this.enabled() ? pageText('Notifications on') : pageText('Notify me');
    this.toggle.title = this.enabled()
      ? pageText('Click to stop notifications')
      : pageText('Notify me when a request arrives while this tab is hidden');
  }
}
