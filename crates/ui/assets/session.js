// One session's timeline on screen: its history, then its stream, as seed 004 reconnects.
//
// `timeline.js` knows how the seeds' history and frames look as groups; this module knows
// where they come from. Showing a session loads `GET /session/{id}/history`, renders it,
// and follows `GET /session/{id}/stream` from the history's `last_event_id` (sent as
// `Last-Event-ID`), so every frame after the history arrives once: the server guarantees
// that history + frames after its cursor equal the live stream. A dropped stream resumes
// from the last frame's `id:`, so it needs no new history, unless the server can no longer
// resume it (the records it came from are no longer kept, or the server was upgraded): it
// then answers `server.resync`, and the timeline loads the history again. The stream is
// read with fetch() like `/event`, because it carries the bearer token when the server
// wants one.
//
// Resyncs in a row back off: the first loads the history again at once, each next one
// waits longer (`RESYNC_BACKOFF_MS`), showing the old timeline as "Catching up…"
// meanwhile. A session trimmed faster than its history loads would otherwise have every
// tab showing it load the whole history again and again, as fast as the server answers.
// A timeline that stayed up `RESYNC_STABLE_MS` since its history loaded starts afresh.
//
// Showing another session (or none) stops the stream and forgets the old view; a load
// that finishes after that is dropped, so a slow history never shows under the wrong name.

import * as api from './api.js';
import { setText } from './dom.js';
import { t } from './i18n.js';
import { EventStreamClient } from './sse.js';
import { Timeline } from './timeline.js';

/** How long the history's reload waits after each resync in a row: at once, then longer. */
const RESYNC_BACKOFF_MS = [0, 1000, 2000, 4000, 8000, 15000, 30000];
/** A timeline up this long since its history loaded counts its next resync as the first. */
const RESYNC_STABLE_MS = 30000;

export class SessionTimeline {
  /**
   * `ui`: the section's elements (`section`, `session` for its name, `status`, `body`,
   * `retry`). `review(key)`: the human wants to answer the pending request `key` shown in
   * the timeline.
   */
  constructor(ui, { review }) {
    this.ui = ui;
    this.review = review;
    /** The session shown, '' for none. */
    this.session = '';
    /** The stream of the session shown, once its history is in. */
    this.stream = null;
    /** Bumped by each stop (a new `show` or load), so a late history is dropped. */
    this.generation = 0;
    /** Whether the last load failed and `retry()` should load again. */
    this.failed = false;
    /** Resyncs in a row, each answered by a reload of the history. */
    this.resyncs = 0;
    /** When the history shown was loaded (`Date.now()`). */
    this.loadedAt = 0;
    ui.retry.addEventListener('click', () => this.retry());
  }

  /** Shows `session`'s timeline, or hides the section for ''. */
  show(session) {
    this.stop();
    this.session = session;
    this.resyncs = 0;
    this.ui.section.hidden = !session;
    this.ui.body.replaceChildren();
    if (session) this.load();
  }

  /** Loads again after a failure (a token was entered, the server is back). */
  retry() {
    if (this.session && this.failed) this.load();
  }

  /** Resumes a stream that stopped for want of a token. */
  resume() {
    this.stream?.resume();
  }

  stop() {
    this.generation += 1;
    this.stream?.stop();
    this.stream = null;
  }

  async load() {
    this.stop();
    const generation = this.generation;
    const session = this.session;
    this.failed = false;
    setText(this.ui.session, session);
    this.setStatus('connecting', t('Loading…'));
    let history;
    try {
      history = await api.get(`/session/${encodeURIComponent(session)}/history`);
    } catch (error) {
      if (generation !== this.generation) return;
      this.failed = true;
      this.setStatus('offline', loadFailure(error));
      this.ui.retry.hidden = false;
      return;
    }
    if (generation !== this.generation) return;
    this.loadedAt = Date.now();
    const timeline = new Timeline({ review: this.review });
    timeline.load(history);
    this.ui.body.replaceChildren(timeline.element);
    this.stream = new EventStreamClient({
      url: () => `/session/${encodeURIComponent(session)}/stream`,
      headers: api.authHeaders,
      cursor: history?.last_event_id,
      onEvent: (frame) => timeline.apply(frame),
      // The history this timeline shows can no longer be continued: show the current one.
      onResync: () => {
        if (generation === this.generation) this.resync();
      },
      onStatus: (status) => {
        if (status === 'live') this.setStatus('live', t('Live'));
        else if (status === 'connecting') this.setStatus('connecting', t('Connecting…'));
        else if (status === 'reconnecting') this.setStatus('offline', t('Disconnected; reconnecting…'));
        else if (status === 'unauthorized') this.setStatus('locked', t('Token needed'));
      },
    });
    this.stream.start();
  }

  /** Loads the history again after a resync, backing off when resyncs come in a row. */
  resync() {
    if (Date.now() - this.loadedAt >= RESYNC_STABLE_MS) this.resyncs = 0;
    const delayMs = RESYNC_BACKOFF_MS[Math.min(this.resyncs, RESYNC_BACKOFF_MS.length - 1)];
    this.resyncs += 1;
    this.stop();
    const generation = this.generation;
    if (delayMs === 0) {
      this.load();
      return;
    }
    this.setStatus('connecting', t('Catching up…'));
    setTimeout(() => {
      if (generation === this.generation) this.load();
    }, delayMs);
  }

  setStatus(state, text) {
    this.ui.status.dataset.state = state;
    this.ui.status.lastElementChild.textContent = text;
    this.ui.retry.hidden = true;
  }
}

/** Why a history could not be loaded, as a sentence. */
function loadFailure(error) {
  if (error instanceof api.NetworkError) return t('Could not reach the server to load this timeline.');
  if (error instanceof api.ApiError && error.status === 401) return t('This server needs an access token.');
  if (error instanceof api.ApiError && error.status === 403) {
    return t('Your access token does not allow this session.');
  }
  return t('Could not load this timeline: {message}', { message: error.message });
}
