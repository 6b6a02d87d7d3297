// Outbound webhook deliveries at a glance, for whoever may see them: a status control in
// the top bar ("Webhooks: all delivered", "Webhooks: 2 pending · 1 abandoned") that opens a
// panel listing the deliveries that are not delivered.
//
// Policy, in exact words:
// - Only a credential that may read `GET /webhook/deliveries` (an admin's for every
//   session; without tokens, everyone local) sees anything. A 401, 403 or 404 hides the
//   control and the panel and stops the refreshes, quietly: no banner, no error, and no
//   token prompt (the read asks `api.js` not to report its 401), because a reviewer's page
//   without it is how things should be, not a fault. A new token (`tokenChanged`) asks
//   again.
// - The control shows only when the server has deliveries at all (a server without
//   webhooks answers `[]`). It counts the newest `PAGE` deliveries (the server's default
//   page): pending and abandoned, leaving a zero out, or "all delivered".
// - The panel (a disclosure button with `aria-expanded`; Escape closes it and gives the
//   focus back) lists the pending and abandoned ones of that page, newest first: event
//   type, target, attempts, the last attempt's error (or status), and for a pending one
//   when it is next tried, relative to the server's clock ("in 4 s", kept current each
//   second while the panel is open). Targets and errors are server strings: they go in as
//   text, through `dom.js`, never as markup.
// - Refreshes: every `REFRESH` ms while the tab is visible and none while it is hidden (one
//   as soon as it is shown again); and `SOON` ms after a request event arrives
//   (`eventArrived`), so a burst of events costs one read, and the first attempt at the
//   message it caused, usually made within milliseconds, is already recorded (a healthy
//   receiver does not flash "1 pending"). At most one read is in flight.
// - Any other failure (no answer, a 503 of a store that cannot be read) keeps what is
//   shown; the panel says the last refresh failed, and the next one tries again.
// - `window.askbusDeliveriesRefreshMs`, when set before this module runs (a test's init
//   script), replaces `REFRESH`.

import * as api from './api.js';
import { h, oneLine, setText } from './dom.js';
import { t } from './i18n.js';

/** How many of the newest deliveries are counted (the route's default page). */
const PAGE = 100;
/** How often the deliveries are read while the tab is visible, in ms. */
const REFRESH = 15_000;
/** How long after a request event the deliveries are read, in ms. */
const SOON = 1_000;
/** The statuses that mean this credential (or this server) has no deliveries to show. */
const REFUSED = [401, 403, 404];

/** Events that become webhook messages: every request event. */
const REQUEST_EVENT = /^(question|approval)\./;

/** "in 4 s", "in 3 min", "in 2 h": how far `milliseconds` ahead is; `null` when it is not. */
function relativeTime(milliseconds) {
  if (milliseconds <= 0) return null;
  const seconds = Math.ceil(milliseconds / 1000);
  if (seconds < 60) return t('in {count} s', { count: seconds });
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return t('in {count} min', { count: minutes });
  return t('in {count} h', { count: Math.round(minutes / 60) });
}

/** The control's text for `counts` (`{pending, abandoned}`). */
function statusText({ pending, abandoned }) {
  const parts = [];
  if (pending > 0) parts.push(t('{count} pending', { count: pending }));
  if (abandoned > 0) parts.push(t('{count} abandoned', { count: abandoned }));
  return t('Webhooks: {state}', { state: parts.length > 0 ? parts.join(' · ') : t('all delivered') });
}

export class DeliveryStatus {
  /**
   * `toggle`: the top bar's button (its `text` span holds its words); `panel`: the section
   * it opens, with `summary` (a line), `list` (a `<ul>`), `error` (the failed refresh's
   * note) and `close` (a button).
   */
  constructor({ toggle, text, panel, summary, list, error, close }) {
    this.ui = { toggle, text, panel, summary, list, error, close };
    const override = Number(window.askbusDeliveriesRefreshMs);
    /** The refresh interval while visible, in ms. */
    this.every = override > 0 ? override : REFRESH;
    /** 'unknown' until the first answer, 'shown' while readable, 'refused' after a 401,
     * 403 or 404 (nothing shown, nothing read until the token changes). */
    this.access = 'unknown';
    /** Whether a read is in flight, and whether another was asked for meanwhile. */
    this.reading = false;
    this.again = false;
    /** The next read's timer, and when it is due (ms since the epoch, this clock). */
    this.timer = null;
    this.dueAt = Infinity;
    /** Bumped by a token change: a read begun before it does not count. */
    this.generation = 0;
    /** The pending rows' "next attempt" texts: `{element, at}`, `at` on the server's clock. */
    this.countdowns = [];
    toggle.addEventListener('click', () => (this.isOpen() ? this.closePanel() : this.openPanel()));
    close.addEventListener('click', () => this.closePanel());
    for (const element of [toggle, panel]) {
      element.addEventListener('keydown', (event) => {
        if (event.key === 'Escape' && this.isOpen()) {
          event.preventDefault();
          this.closePanel();
        }
      });
    }
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) this.cancel();
      else this.schedule(0);
    });
    setInterval(() => this.tick(), 1000);
  }

  /** Reads the deliveries now (if the tab is visible), then every `every` ms. */
  start() {
    this.schedule(0);
  }

  /** An event arrived on the stream: a request event makes a message, so read soon. */
  eventArrived(event) {
    if (this.access === 'refused' || !REQUEST_EVENT.test(String(event?.type))) return;
    this.schedule(SOON);
  }

  /** The tab's token changed: what it may read is asked again. */
  tokenChanged() {
    this.generation += 1;
    this.access = 'unknown';
    this.schedule(0);
  }

  /** Reads in `delay` ms, unless a read is due sooner; none while the tab is hidden. */
  schedule(delay) {
    if (document.hidden || this.access === 'refused') return;
    const at = Date.now() + delay;
    if (this.timer !== null && this.dueAt <= at) return;
    clearTimeout(this.timer);
    this.dueAt = at;
    this.timer = setTimeout(() => {
      this.timer = null;
      this.dueAt = Infinity;
      this.refresh();
    }, delay);
  }

  cancel() {
    clearTimeout(this.timer);
    this.timer = null;
    this.dueAt = Infinity;
  }

  async refresh() {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    const generation = this.generation;
    let deliveries = null;
    let failure = null;
    try {
      ({ items: deliveries } = await api.getPage(`/webhook/deliveries?limit=${PAGE}`, { quiet: true }));
    } catch (error) {
      failure = error;
    } finally {
      this.reading = false;
    }
    // A read begun before the token changed says nothing about the new one's access.
    if (generation === this.generation) {
      if (failure instanceof api.ApiError && REFUSED.includes(failure.status)) {
        this.access = 'refused';
        this.again = false;
        this.cancel();
        this.hide();
        return;
      }
      this.access = 'shown';
      if (failure) this.failed(failure);
      else this.show(deliveries);
    }
    if (this.again) {
      this.again = false;
      this.schedule(0);
    } else {
      this.schedule(this.every);
    }
  }

  hide() {
    this.ui.toggle.hidden = true;
    this.closePanel({ focus: false });
  }

  /** Shows `deliveries` (the newest page, newest first). */
  show(deliveries) {
    this.ui.error.hidden = true;
    if (deliveries.length === 0) {
      this.hide();
      return;
    }
    const unsettled = deliveries.filter((delivery) => delivery.state === 'pending' || delivery.state === 'abandoned');
    const counts = {
      pending: unsettled.filter((delivery) => delivery.state === 'pending').length,
      abandoned: unsettled.filter((delivery) => delivery.state === 'abandoned').length,
    };
    const { toggle, text, summary, list } = this.ui;
    const words = statusText(counts);
    if (text.textContent !== words) text.textContent = words;
    toggle.dataset.state = counts.abandoned > 0 ? 'abandoned' : counts.pending > 0 ? 'pending' : 'delivered';
    toggle.hidden = false;
    setText(
      summary,
      unsettled.length === 0
        ? deliveries.length === 1
          ? t('The newest delivery was delivered.')
          : t('The newest {count} deliveries were all delivered.', { count: deliveries.length })
        : t(
            deliveries.length === 1
              ? 'Of the newest delivery: {pending} pending, {abandoned} abandoned, the rest delivered.'
              : 'Of the newest {count} deliveries: {pending} pending, {abandoned} abandoned, the rest delivered.',
            { count: deliveries.length, pending: counts.pending, abandoned: counts.abandoned },
          ),
    );
    this.countdowns = [];
    list.replaceChildren(...unsettled.map((delivery) => this.row(delivery)));
    list.hidden = unsettled.length === 0;
    this.tick();
  }

  /** One pending or abandoned delivery, as a list item. */
  row(delivery) {
    const last = delivery.last_attempt;
    const lastText = last?.error ?? (last?.status !== undefined ? t('the receiver answered {status}', { status: last.status }) : null);
    const attempts = Number(delivery.attempts) || 0;
    let next = null;
    if (delivery.state === 'pending' && typeof delivery.next_attempt_at === 'number') {
      next = h('span', { class: 'delivery-next' });
      this.countdowns.push({ element: next, at: delivery.next_attempt_at });
    }
    return h(
      'li',
      { class: 'delivery', dataset: { state: delivery.state, message: String(delivery.message_id) } },
      h(
        'p',
        { class: 'delivery-head' },
        h('span', { class: 'delivery-type' }, oneLine(delivery.type ?? t('unknown event'))),
        h('span', { class: 'delivery-state' }, delivery.state === 'pending' ? t('pending') : t('abandoned')),
      ),
      h('p', { class: 'delivery-target' }, ...t.parts('to {target}', { target: h('span', { class: 'delivery-url' }, oneLine(delivery.target)) })),
      h(
        'p',
        { class: 'delivery-detail' },
        attempts === 0 ? t('not tried yet') : attempts === 1 ? t('1 attempt') : t('{count} attempts', { count: attempts }),
        lastText === null ? null : t.parts('; last: {error}', { error: h('span', { class: 'delivery-error' }, lastText) }),
        next === null ? null : t.parts('; next attempt {when}', { when: next }),
      ),
    );
  }

  /** A failed refresh: what is shown stays, and the panel says so. */
  failed(error) {
    const why =
      error instanceof api.NetworkError
        ? t('the server could not be reached')
        : error instanceof api.ApiError
          ? t('the server answered {status}: {message}', { status: error.status, message: error.message })
          : String(error?.message ?? error);
    setText(this.ui.error, t('Could not refresh the deliveries ({why}); trying again.', { why }));
    this.ui.error.hidden = false;
  }

  /** Keeps the "next attempt" texts current while the panel is open. */
  tick() {
    if (!this.isOpen()) return;
    const now = api.serverNow();
    for (const { element, at } of this.countdowns) {
      const left = relativeTime(at - now);
      const words = left ?? t('due now');
      if (element.textContent !== words) element.textContent = words;
      element.title = t.time(at);
    }
  }

  isOpen() {
    return !this.ui.panel.hidden;
  }

  openPanel() {
    this.ui.panel.hidden = false;
    this.ui.toggle.setAttribute('aria-expanded', 'true');
    this.tick();
  }

  /** Closes the panel; `focus`: give the focus back to the control, if the panel had it. */
  closePanel({ focus = true } = {}) {
    const hadFocus = this.ui.panel.contains(document.activeElement);
    this.ui.panel.hidden = true;
    this.ui.toggle.setAttribute('aria-expanded', 'false');
    if (focus && hadFocus) this.ui.toggle.focus();
  }
}
