// The askbus UI: pending questions and approvals, live.
//
// State policy, in exact words: the list is the server's pending requests, from a snapshot
// (`GET /question`, `GET /approval`) plus the event stream after it. A fresh stream (first
// load, reload, or the server could not resume) takes a new snapshot, and the events that
// arrive meanwhile are held and applied on top of it in order, so nothing between the
// stream's start and the snapshot is lost or applied twice (asked adds a request once;
// an outcome resolves it once). A stream that resumes with `Last-Event-ID` needs no
// snapshot: the server replays exactly what was missed; `server.resync` takes one. While
// the stream is down the list is refreshed from the snapshot routes when they answer, and a
// banner says the list may be out of date.
//
// A request resolved elsewhere stays on screen, marked with its outcome, until dismissed,
// so a human half-way through a form sees what happened instead of a vanishing card.
//
// Choosing a session (the filter, a card's session link, or `?session=` in the URL) also
// shows that session's timeline below the list (`session.js`): what the agent did around
// its requests, live.

import * as api from './api.js';
import { approvalCard } from './approval.js';
import { h } from './dom.js';
import { pruneDrafts, questionCard } from './question.js';
import { SessionTimeline } from './session.js';
import { EventStreamClient } from './sse.js';

const byId = (id) => document.getElementById(id);
const ui = {
  listTitle: byId('list-title'),
  list: byId('list'),
  empty: byId('empty'),
  loading: byId('loading'),
  count: byId('pending-count'),
  filter: byId('session-filter'),
  connection: byId('connection'),
  connectionText: byId('connection-text'),
  banner: byId('banner'),
  bannerText: byId('banner-text'),
  bannerButton: byId('banner-retry'),
  announcer: byId('announcer'),
  tokenButton: byId('token-button'),
  tokenDialog: byId('token-dialog'),
  tokenForm: byId('token-form'),
  tokenInput: byId('token-input'),
  tokenError: byId('token-error'),
  tokenCancel: byId('token-cancel'),
  timelineTitle: byId('timeline-title'),
};

const state = {
  /** Request id -> card controller, pending and resolved-but-not-dismissed. */
  cards: new Map(),
  /** The session filter ('' for all), mirrored in `?session=`. */
  session: new URLSearchParams(location.search).get('session') ?? '',
  /** Whether the server has approval routes: 'unknown', 'yes' or 'no' (404). */
  approvals: 'unknown',
  /** Events held while a snapshot is in flight; `null` when none is. */
  buffer: null,
  /** Bumped by each snapshot, so a late one never overwrites a newer one. */
  generation: 0,
  /** Whether a snapshot has been shown. */
  loaded: false,
  /** Whether the stream is open. */
  live: false,
  /** Whether a standalone refresh (stream down) is in flight, and when the last ran. */
  refreshing: false,
  lastRefresh: 0,
  /** What the banner is about: null, 'network' or 'token'; and when the next retry is. */
  banner: null,
  retryAt: 0,
  /** Whether the stream is down because the server refused it for a quota (it is up). */
  busy: false,
  /** Requests this tab is resolving now, and outcomes that arrived meanwhile. */
  submitting: new Set(),
  deferred: new Map(),
  /** The session options last rendered, to rebuild the select only when they change. */
  filterSignature: '',
};

// ---- Talking to the server -------------------------------------------------------------

const path = (kind, id, verb) => `/${kind}/${encodeURIComponent(id)}/${verb}`;

/** Runs `call` for request `id` while marking it as being resolved by this tab. */
async function resolving(id, call) {
  state.submitting.add(id);
  try {
    const result = await call();
    state.deferred.delete(id);
    return result;
  } finally {
    state.submitting.delete(id);
  }
}

const actions = {
  reply: (request, answers) =>
    resolving(request.id, () => api.post(path('question', request.id, 'reply'), { answers })),
  reject: (request, reason) =>
    resolving(request.id, () =>
      api.post(path('question', request.id, 'reject'), reason ? { reason } : {}),
    ),
  decide: (request, decisions) =>
    resolving(request.id, () => api.post(path('approval', request.id, 'reply'), { decisions })),
  describe: describeError,
  dismiss: (id) => removeCard(id, true),
  failed: afterFailure,
  /** A card changed how it reads (resolved here): recount. */
  changed: () => render(),
};

/** A failure of an answer, decline or decision, as a sentence for the human. */
function describeError(error, what) {
  const noun = { answer: 'answer', reply: 'reply', decision: 'decision' }[what] ?? 'reply';
  if (error instanceof api.NetworkError) {
    return `Could not reach the server, so your ${noun} was not sent. It is kept here: check the connection and try again.`;
  }
  if (!(error instanceof api.ApiError)) return `Something went wrong: ${error.message}`;
  switch (error.status) {
    case 401:
      return `The server needs a valid access token. Enter it, then send your ${noun} again.`;
    case 403:
      return `Your access token does not allow this: ${error.message}`;
    case 404:
      return 'This request no longer exists on the server.';
    case 409:
      return `Already answered elsewhere: your ${noun} was not sent.`;
    case 400:
    case 422:
      return `The server did not accept this ${noun}: ${error.message}`;
    default:
      return `The server answered ${error.status}: ${error.message}`;
  }
}

/**
 * After a failed answer: an outcome that arrived while it was in flight stands (the
 * failure may even be the lost response to this very answer); a 409 or 404 means someone
 * else settled it; show how.
 */
async function afterFailure(request, error, card) {
  const deferred = state.deferred.get(request.id);
  state.deferred.delete(request.id);
  if (!(error instanceof api.ApiError) || ![404, 409].includes(error.status)) {
    if (deferred) settle(request.id, deferred);
    return;
  }
  const kind = card.kind;
  const noun = kind === 'question' ? 'answer' : 'decision';
  const note =
    error.status === 409
      ? `Your ${noun} was not sent: this ${kind} was already resolved elsewhere.`
      : `Your ${noun} was not sent: this ${kind} no longer exists on the server.`;
  let outcome = deferred;
  if (!outcome && error.status === 409) {
    try {
      const current = await api.get(`/${kind}/${encodeURIComponent(request.id)}`);
      outcome = {
        status: current?.status ?? 'gone',
        answers: current?.answers,
        reason: current?.reason,
        decisions: current?.decisions,
      };
    } catch {
      outcome = null;
    }
  }
  card.resolve({ ...(outcome ?? { status: 'gone' }), note, override: true });
  say(note);
  render();
}

async function fetchSnapshot() {
  const approvals =
    state.approvals === 'no'
      ? Promise.resolve([])
      : api.get('/approval').then(
          (list) => {
            state.approvals = 'yes';
            return Array.isArray(list) ? list : [];
          },
          (error) => {
            // A server without approval routes (they arrived later than questions).
            if (error instanceof api.ApiError && error.status === 404) {
              state.approvals = 'no';
              return [];
            }
            throw error;
          },
        );
  const [questions, approvalList] = await Promise.all([api.get('/question'), approvals]);
  return { questions: Array.isArray(questions) ? questions : [], approvals: approvalList };
}

/** A snapshot for a fresh stream: events arriving meanwhile are held, then applied. */
async function resnapshot() {
  const generation = ++state.generation;
  state.buffer = [];
  try {
    const snapshot = await fetchSnapshot();
    if (generation !== state.generation) return;
    applySnapshot(snapshot);
    const held = state.buffer;
    state.buffer = null;
    for (const event of held) applyEvent(event);
    render();
  } catch {
    if (generation !== state.generation) return;
    state.buffer = null;
    // Without the snapshot the stream's events do not add up to the state: start over.
    stream.restart();
  }
}

/** While the stream is down: show the server's list if it answers (at most every 5 s). */
async function refreshWhileDisconnected() {
  if (state.refreshing || state.buffer || Date.now() - state.lastRefresh < 5000) return;
  state.refreshing = true;
  state.lastRefresh = Date.now();
  const generation = state.generation;
  try {
    const snapshot = await fetchSnapshot();
    if (!state.live && generation === state.generation) applySnapshot(snapshot);
  } catch {
    // The banner already says the server cannot be reached.
  } finally {
    state.refreshing = false;
  }
}

// ---- State ----------------------------------------------------------------------------

function applySnapshot({ questions, approvals }) {
  const pending = new Set([...questions, ...approvals].map((request) => request.id));
  let gone = 0;
  for (const [id, card] of state.cards) {
    if (card.resolved || pending.has(id) || state.submitting.has(id)) continue;
    gone += 1;
    if (card.touched()) card.resolve({ status: 'gone' });
    else removeCard(id, false);
  }
  const first = !state.loaded;
  for (const request of questions) add('question', request, !first);
  for (const request of approvals) add('approval', request, !first);
  pruneDrafts(pending);
  state.loaded = true;
  if (first) {
    const count = pending.size;
    say(count === 0 ? 'No pending requests.' : `${count} pending ${count === 1 ? 'request' : 'requests'}.`);
  } else if (gone > 0) {
    say(`${gone} ${gone === 1 ? 'request was' : 'requests were'} resolved while this page was not connected.`);
  }
  render();
}

function applyEvent(event) {
  const properties = event?.properties ?? {};
  switch (event?.type) {
    case 'question.asked':
      add('question', properties, true);
      break;
    case 'question.replied':
      settle(properties.requestID, { status: 'replied', answers: properties.answers });
      break;
    case 'question.rejected':
      settle(properties.requestID, { status: 'rejected', reason: properties.reason });
      break;
    case 'question.timed_out':
      settle(properties.requestID, { status: 'timed_out' });
      break;
    case 'question.cancelled':
      settle(properties.requestID, { status: 'cancelled' });
      break;
    case 'approval.asked':
      add('approval', properties, true);
      break;
    case 'approval.replied':
      settle(properties.request_id, { status: 'replied', decisions: properties.decisions });
      break;
    case 'approval.timed_out':
      settle(properties.request_id, { status: 'timed_out', decisions: properties.decisions });
      break;
    case 'approval.cancelled':
      settle(properties.request_id, { status: 'cancelled' });
      break;
    default:
      return;
  }
  render();
}

function add(kind, request, announce) {
  if (!request?.id || state.cards.has(request.id)) return;
  const card = kind === 'question' ? questionCard(request, actions) : approvalCard(request, actions);
  state.cards.set(request.id, card);
  card.tick(api.serverNow());
  const key = orderKey(request.id);
  const after = [...ui.list.children].find((element) => orderKey(element.dataset.id) > key);
  ui.list.insertBefore(card.element, after ?? null);
  filterCard(card);
  if (announce) {
    const session = kind === 'question' ? request.sessionID : request.session_id;
    const what =
      kind === 'question'
        ? request.questions?.[0]?.question ?? ''
        : (request.action_requests ?? []).map((action) => action.name).join(', ');
    say(`New ${kind} in session ${session}: ${what}`);
  }
}

function settle(id, outcome) {
  const card = id && state.cards.get(id);
  if (!card || card.resolved) return;
  if (state.submitting.has(id)) {
    // This tab's own call is in flight; its answer decides how the card reads.
    state.deferred.set(id, outcome);
    return;
  }
  card.resolve(outcome);
  const verb = {
    replied: card.kind === 'question' ? 'was answered elsewhere' : 'was decided elsewhere',
    rejected: 'was declined elsewhere',
    timed_out: 'expired',
    cancelled: 'was withdrawn by the agent',
  }[outcome.status];
  if (verb) say(`A ${card.kind} in session ${card.element.dataset.session} ${verb}.`);
}

function removeCard(id, moveFocus) {
  const card = state.cards.get(id);
  if (!card) return;
  const next = shownSibling(card.element, 'nextElementSibling') ?? shownSibling(card.element, 'previousElementSibling');
  const hadFocus = card.element.contains(document.activeElement);
  card.element.remove();
  state.cards.delete(id);
  if (moveFocus || hadFocus) (next ?? ui.listTitle).focus();
  render();
}

/** The nearest card in `direction` from `element` that the session filter shows, if any. */
function shownSibling(element, direction) {
  let sibling = element[direction];
  while (sibling?.hidden) sibling = sibling[direction];
  return sibling;
}

/** Ids sort by their ULID, whatever their kind prefix. */
function orderKey(id) {
  return String(id).slice(String(id).indexOf('_') + 1);
}

// ---- Rendering ----------------------------------------------------------------------

function filterCard(card) {
  card.element.hidden = Boolean(state.session) && card.element.dataset.session !== state.session;
}

function render() {
  const pending = [...state.cards.values()].filter((card) => !card.resolved);
  const shown = pending.filter((card) => !card.element.hidden);
  ui.count.textContent = String(shown.length);
  ui.loading.hidden = state.loaded;
  ui.empty.hidden = !state.loaded || shown.length > 0;
  ui.empty.textContent = state.session
    ? `Nothing is waiting for you in session “${state.session}”.`
    : 'Nothing is waiting for you. When an agent asks a question or wants approval, it appears here.';
  document.title = shown.length > 0 ? `(${shown.length}) askbus` : 'askbus';
  renderFilter(pending);
}

function renderFilter(pending) {
  const counts = new Map();
  for (const card of pending) {
    const session = card.element.dataset.session;
    counts.set(session, (counts.get(session) ?? 0) + 1);
  }
  if (state.session && !counts.has(state.session)) counts.set(state.session, 0);
  const sessions = [...counts.keys()].sort();
  const signature = JSON.stringify([
    state.session,
    pending.length,
    sessions.map((session) => [session, counts.get(session)]),
  ]);
  if (signature === state.filterSignature) return;
  state.filterSignature = signature;
  ui.filter.replaceChildren(
    h('option', { value: '' }, `All sessions (${pending.length})`),
    ...sessions.map((session) => h('option', { value: session }, `${session} (${counts.get(session)})`)),
  );
  ui.filter.value = state.session;
}

function setConnection(kind, text) {
  ui.connection.dataset.state = kind;
  ui.connectionText.textContent = text;
}

function showBanner(kind) {
  state.banner = kind;
  ui.banner.hidden = false;
  ui.banner.dataset.kind = kind;
  updateBanner();
}

function hideBanner() {
  state.banner = null;
  ui.banner.hidden = true;
}

function updateBanner() {
  if (state.banner === 'token') {
    ui.bannerText.textContent = 'This server needs an access token to show and answer requests.';
    ui.bannerButton.textContent = 'Enter token';
    ui.bannerButton.hidden = false;
  } else if (state.banner === 'network') {
    const seconds = Math.max(0, Math.ceil((state.retryAt - Date.now()) / 1000));
    const where = state.busy
      ? 'The server is busy: it holds as many open streams as it allows.'
      : navigator.onLine
        ? 'Lost the connection to the server.'
        : 'You are offline.';
    const when = seconds > 0 ? `Reconnecting in ${seconds} s…` : 'Reconnecting…';
    const meanwhile = state.busy
      ? 'The list may be out of date until then; answers can still be sent.'
      : 'The list may be out of date and answers cannot be sent until it is back.';
    ui.bannerText.textContent = `${where} ${when} ${meanwhile}`;
    ui.bannerButton.textContent = 'Retry now';
    ui.bannerButton.hidden = false;
  }
}

let clearing = null;
/** Tells screen-reader users something, politely. */
function say(text) {
  clearTimeout(clearing);
  // Emptying first makes a repeated message be read again.
  ui.announcer.textContent = '';
  setTimeout(() => {
    ui.announcer.textContent = text;
  }, 50);
  clearing = setTimeout(() => {
    ui.announcer.textContent = '';
  }, 10000);
}

// ---- Token ----------------------------------------------------------------------------

function askForToken() {
  setConnection('locked', 'Token needed');
  if (ui.tokenDialog.open) return;
  const rejected = Boolean(api.token());
  ui.tokenError.textContent = rejected ? 'The server did not accept that token. Check it and try again.' : '';
  ui.tokenError.hidden = !rejected;
  ui.tokenInput.value = '';
  ui.tokenDialog.showModal();
  ui.tokenInput.focus();
}

function updateTokenButton() {
  ui.tokenButton.hidden = !api.token();
}

ui.tokenForm.addEventListener('submit', (event) => {
  event.preventDefault();
  const value = ui.tokenInput.value.trim();
  if (!value) {
    ui.tokenError.textContent = 'Enter the token first.';
    ui.tokenError.hidden = false;
    ui.tokenInput.focus();
    return;
  }
  api.setToken(value);
  updateTokenButton();
  ui.tokenDialog.close();
  hideBanner();
  stream.resume();
  sessionTimeline.resume();
  sessionTimeline.retry();
});

function tokenDeclined() {
  if (ui.tokenDialog.open) ui.tokenDialog.close();
  showBanner('token');
}
ui.tokenCancel.addEventListener('click', tokenDeclined);
ui.tokenDialog.addEventListener('cancel', (event) => {
  event.preventDefault();
  tokenDeclined();
});

ui.tokenButton.addEventListener('click', () => {
  api.setToken('');
  location.reload();
});

ui.bannerButton.addEventListener('click', () => {
  if (state.banner === 'token') askForToken();
  else stream.retryNow();
});

api.onUnauthorized(() => askForToken());

// ---- Wiring -----------------------------------------------------------------------------

const stream = new EventStreamClient({
  url: () => '/event',
  headers: api.authHeaders,
  onConnected({ resumed }) {
    if (!resumed) resnapshot();
  },
  onResync() {
    resnapshot();
  },
  onEvent(event) {
    if (state.buffer) state.buffer.push(event);
    else applyEvent(event);
  },
  onStatus(status, detail) {
    state.live = status === 'live';
    if (status === 'live') {
      setConnection('live', 'Live');
      if (state.banner === 'network') say('Reconnected.');
      if (state.banner !== 'token') hideBanner();
      sessionTimeline.retry();
    } else if (status === 'connecting') {
      if (!state.banner) setConnection('connecting', 'Connecting…');
    } else if (status === 'reconnecting') {
      state.retryAt = detail.retryAt;
      state.busy = Boolean(detail.error?.busy);
      setConnection('offline', 'Disconnected');
      if (state.banner !== 'network') {
        showBanner('network');
        say('Lost the connection to the server; reconnecting.');
      } else {
        updateBanner();
      }
      refreshWhileDisconnected();
    } else if (status === 'unauthorized') {
      askForToken();
    }
  },
});

/** Shows one session ('' for all): its requests, and its timeline. */
function selectSession(session) {
  state.session = session;
  const url = new URL(location.href);
  if (state.session) url.searchParams.set('session', state.session);
  else url.searchParams.delete('session');
  history.replaceState(null, '', url);
  for (const card of state.cards.values()) filterCard(card);
  render();
  sessionTimeline.show(session);
}

/** Takes the human from a pending request in the timeline to its card. */
function reviewRequest(key) {
  const card = [...state.cards.values()].find((card) => !card.resolved && card.element.dataset.key === key);
  if (!card) {
    say('That request is no longer pending.');
    return;
  }
  card.element.scrollIntoView({ block: 'start' });
  card.focus();
}

const sessionTimeline = new SessionTimeline(
  {
    section: byId('timeline-section'),
    session: byId('timeline-session'),
    status: byId('timeline-status'),
    body: byId('timeline'),
    retry: byId('timeline-retry'),
  },
  { review: reviewRequest },
);

ui.filter.addEventListener('change', () => selectSession(ui.filter.value));

// A card's session link shows that session here, without reloading the page (a modified
// click still opens it in a new tab, as links do).
ui.list.addEventListener('click', (event) => {
  const link = event.target.closest('a.session');
  if (!link || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey || event.altKey) return;
  event.preventDefault();
  selectSession(link.dataset.session);
  ui.timelineTitle.scrollIntoView({ block: 'start' });
  ui.timelineTitle.focus();
});

window.addEventListener('online', () => stream.retryNow());
window.addEventListener('offline', () => {
  if (state.banner === 'network') updateBanner();
});

setInterval(() => {
  const now = api.serverNow();
  for (const card of state.cards.values()) card.tick(now);
  if (state.banner === 'network') updateBanner();
}, 1000);

updateTokenButton();
render();
sessionTimeline.show(state.session);
stream.start();
