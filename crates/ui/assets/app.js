// The askbus UI: pending questions and approvals, live, however many an agent asks.
//
// State policy, in exact words: the list is a window on the server's pending requests of
// the chosen session (or of all), ascending by id. It holds every pending request up to
// its end (`frontier`; `null`: it holds them all), from a snapshot (one page of
// `GET /question` and `GET /approval`, and the counts of `GET /session/pending`) plus the
// event stream after it. A fresh stream (first load, reload, or the server could not
// resume) takes a new snapshot, and the events that arrive meanwhile are held and applied
// on top of it in order, so nothing between the stream's start and the snapshot is lost
// or applied twice: asked adds a request once (if it falls in the window), an outcome
// resolves it once, and the counts take only the events after the id they stand at
// (`questions_as_of`, `approvals_as_of`), so every event counts once whenever it arrives.
// "Show more" reads the page after the window's end the same way, with the events that
// arrive meanwhile held. A stream that resumes with `Last-Event-ID` needs no snapshot: the
// server replays exactly what was missed; `server.resync` takes one. While the stream is
// down the list is refreshed from the snapshot routes when they answer, and a banner says
// the list may be out of date.
//
// Work per event is O(1) amortised, so no flood locks the human out: cards are indexed by
// id, a new card finds its place by binary search over the listed ids, the counts are a
// map per session, the events of one read of the stream render once (each session whose
// count changed rewrites its one `<option>`), and nothing re-sorts or re-serialises every
// session or every card. The window holds one page (`PAGE` pending
// cards) until the human asks for more; a request beyond it is only counted. A window whose
// cards were all resolved loads the next page by itself.
//
// A request resolved elsewhere stays on screen, marked with its outcome, until dismissed,
// so a human half-way through a form sees what happened instead of a vanishing card. An
// outcome that arrives while this tab's own answer is in flight is applied when that call
// ends, whether it succeeded or failed. "Reject all pending in this session" (confirmed in
// a second step) refuses everything the chosen session has pending with one call; the
// cards it ends leave the list, except those the human had started on, which stay marked.
//
// Choosing a session (the filter, a card's session link, or `?session=` in the URL) loads
// that session's window and shows its timeline below the list (`session.js`): what the
// agent did around its requests, live; above it, the session's standing grants
// (`grants.js`), which the event stream's `approval.granted` / `approval.grant_revoked`
// keep current.
//
// An admin also sees how the webhooks' deliveries stand (`deliveries.js`): read on load,
// every 15 s while the tab is shown, and soon after each request event of the stream.

import * as api from './api.js';
import { approvalCard } from './approval.js';
import { DeliveryStatus } from './deliveries.js';
import { SessionGrants } from './grants.js';
import { h, setText, visibleString } from './dom.js';
import { NOT_RECORDED_TEXT, sentNouns, t, translateMarkup } from './i18n.js';
import { ArrivalNotifier } from './notify.js';
import { pruneDrafts, questionCard } from './question.js';
import { SessionTimeline } from './session.js';
import { EventStreamClient } from './sse.js';

/** Pending cards per page of the list. */
const PAGE = 50;
/** The largest page the server answers (`limit`). */
const MAX_PAGE = 1000;

const byId = (id) => document.getElementById(id);
const ui = {
  listTitle: byId('list-title'),
  list: byId('list'),
  more: byId('show-more'),
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
  notifyToggle: byId('notify-toggle'),
  notifyBlocked: byId('notify-blocked'),
  deliveriesToggle: byId('deliveries-toggle'),
  deliveriesText: byId('deliveries-text'),
  deliveriesPanel: byId('deliveries-panel'),
  deliveriesSummary: byId('deliveries-summary'),
  deliveriesList: byId('deliveries-list'),
  deliveriesError: byId('deliveries-error'),
  deliveriesClose: byId('deliveries-close'),
  timelineTitle: byId('timeline-title'),
  rejectOpen: byId('reject-all'),
  rejectPanel: byId('reject-all-panel'),
  rejectText: byId('reject-all-text'),
  rejectReason: byId('reject-all-reason'),
  rejectError: byId('reject-all-error'),
  rejectConfirm: byId('reject-all-confirm'),
  rejectCancel: byId('reject-all-cancel'),
};
// The static markup is written in English; the browser's language is shown.
translateMarkup(document);

const state = {
  /** Request id -> card controller: the window's cards, and resolved ones not dismissed. */
  cards: new Map(),
  /** The ids of the listed cards, in list (id) order. */
  order: [],
  /** The ids of the listed cards still pending. */
  pending: new Set(),
  /** The session filter ('' for all), mirrored in `?session=`. */
  session: new URLSearchParams(location.search).get('session') ?? '',
  /** Where the window ends: every pending request of the view up to this id is listed.
   * `null`: every pending request of the view is listed. */
  frontier: null,
  /** How many pending cards the window may hold; "Show more" adds a page. */
  room: PAGE,
  /** Whether "Show more" is loading a page, and whether the last one failed (then the
   * window does not load its next page by itself until the next snapshot). */
  paging: false,
  pageFailed: false,
  /** Whether "Reject all" is in flight. */
  rejecting: false,
  /** Pending requests per session (`{question, approval}`), and in all. */
  counts: new Map(),
  total: 0,
  /** The event id each kind's counts stand at: only later events change them. */
  countedUpTo: { question: '', approval: '' },
  /** The session filter's options by session, and their sessions in option order. */
  options: new Map(),
  sessions: [],
  /** Sessions whose count changed since the last render, and whether a render is queued. */
  recounted: new Set(),
  renderQueued: false,
  /** Whether the server has approval routes: 'unknown', 'yes' or 'no' (404). */
  approvals: 'unknown',
  /** Events held while a snapshot or a page is in flight; `null` when none is. */
  buffer: null,
  /** Bumped by each snapshot, so a late one (or a late page) never overwrites a newer one. */
  generation: 0,
  /** Whether a snapshot has been shown. */
  loaded: false,
  /** The view ('' or a session) of the last snapshot shown; `null` before the first. */
  listed: null,
  /** Whether the stream is open. */
  live: false,
  /** Whether the cards may have missed events: from the start, and after the stream
   * broke, until a full snapshot has been applied. */
  stale: true,
  /** When (server time) the stream last resumed with `Last-Event-ID`; 0 if it started
   * fresh. Events from before it are replayed, not live (`isLive`). */
  resumedAt: 0,
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
  /** Requests this tab's "Reject all" ended, until their outcome arrives. */
  rejectedHere: new Set(),
  /** Requests whose refused answer this tab is reading back (`afterRefusal`). */
  rereading: new Set(),
  /** Request id -> the outcome that arrived while it was read back. */
  reread: new Map(),
};

// ---- Talking to the server -------------------------------------------------------------

const requestPath = (kind, id) => `/${kind}/${encodeURIComponent(id)}`;
const path = (kind, id, verb) => `${requestPath(kind, id)}/${verb}`;

/**
 * Runs `call` for request `id` while marking it as being resolved by this tab. Resolves to
 * `{answeredBy, outcome}`: the outcome whose event came while the call was in flight, if
 * one did, and who it says resolved it (this tab's identity; a later event names it to the
 * card instead). Under a quorum the call is one vote: no outcome means the request goes on.
 */
async function resolving(id, call) {
  state.submitting.add(id);
  try {
    await call();
    const deferred = state.deferred.get(id);
    state.deferred.delete(id);
    return { answeredBy: deferred?.answeredBy, outcome: deferred };
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
  /** OpenCode's `always`: approves, and grants the session's later identical calls. */
  always: (request) =>
    resolving(request.id, () => api.post(path('permission', request.id, 'reply'), { reply: 'always' })),
  /** The request as it stands now, with the votes so far of one that needs a quorum. */
  fetch: (request) => api.get(requestPath('approval', request.id)),
  describe: describeError,
  dismiss: (id) => removeCard(id, true),
  failed: afterFailure,
  /** Card `id` resolved (here or elsewhere): it no longer counts as pending in the window. */
  changed: (id) => {
    state.pending.delete(id);
    render();
  },
};

/**
 * A failure of an answer, decline, decision or rejection, as a sentence for the human, in
 * `text`'s language (the card's).
 */
function describeError(error, what, text = t) {
  const { yours, thisOne } = sentNouns(what, text);
  if (error instanceof api.NetworkError) {
    return text('Could not reach the server, so {yours} was not sent. It is kept here: check the connection and try again.', { yours });
  }
  if (!(error instanceof api.ApiError)) return text('Something went wrong: {message}', { message: error.message });
  switch (error.status) {
    case 401:
      return text('The server needs a valid access token. Enter it, then send {yours} again.', { yours });
    case 403:
      if (mayNotAnswer(error)) return `${text(AGENT_TOKEN_TEXT)} ${text('Then send {yours} again.', { yours })}`;
      return text('Your access token does not allow this: {message}', { message: error.message });
    case 404:
      return text('This request no longer exists on the server.');
    case 409:
      return text('Already answered elsewhere: {yours} was not sent.', { yours });
    case 400:
    case 422:
      return text('The server did not accept {thisOne}: {message}', { thisOne, message: error.message });
    case 503:
      if (api.notRecorded(error)) return text(NOT_RECORDED_TEXT, { yours });
      return text('The server answered {status}: {message}', { status: error.status, message: error.message });
    default:
      return text('The server answered {status}: {message}', { status: error.status, message: error.message });
  }
}

/** What the human reads when the token they gave belongs to an agent. */
const AGENT_TOKEN_TEXT = 'This token belongs to an agent; agents cannot answer. Enter a reviewer token.';

/**
 * Whether `error` is the server refusing an answer because the token's identity may not
 * answer at all (an agent's: `forbidden`, "agent-1 (agent) may not answer, reject or
 * review requests: that is a reviewer's"), as opposed to a reviewer refused one request.
 */
function mayNotAnswer(error) {
  return (
    error instanceof api.ApiError &&
    error.status === 403 &&
    error.code === 'forbidden' &&
    /\bmay not answer\b/.test(error.message)
  );
}

/**
 * After a failed answer: an outcome that arrived while it was in flight stands (the
 * failure may even be the lost response to this very answer), unless the store refused the
 * answer (`afterRefusal`); a 409 or 404 means someone else settled it; show how.
 */
async function afterFailure(request, error, card) {
  const deferred = state.deferred.get(request.id);
  state.deferred.delete(request.id);
  // An agent's token: no answer of this tab will go through until it has a reviewer's.
  if (mayNotAnswer(error)) askForToken(t(AGENT_TOKEN_TEXT));
  if (api.notRecorded(error)) {
    // The store refused what this tab sent. An outcome that came meanwhile may be this very
    // answer, which stands nowhere: the server's read says how the request stands.
    await afterRefusal(request, error, card, deferred);
    return;
  }
  if (deferred?.status === 'unrecorded') {
    // The outcome that came meanwhile was refused by the store (`notRecorded`).
    endCard(card, deferred, deferred.note);
    return;
  }
  if (!(error instanceof api.ApiError) || ![404, 409].includes(error.status)) {
    if (deferred) settle(request.id, deferred);
    return;
  }
  const kind = card.kind;
  let outcome = deferred;
  if (!outcome && error.status === 409) {
    try {
      outcome = api.outcomeOf(await api.get(requestPath(kind, request.id)));
    } catch {
      outcome = null;
    }
  }
  endCard(card, outcome ?? { status: 'gone' }, t(NOT_SENT[kind][error.status]));
}

/** Why this tab's answer was not sent, by the card's kind and the refusal's status. */
const NOT_SENT = {
  question: {
    409: 'Your answer was not sent: this question was already resolved elsewhere.',
    404: 'Your answer was not sent: this question no longer exists on the server.',
  },
  approval: {
    409: 'Your decision was not sent: this approval was already resolved elsewhere.',
    404: 'Your decision was not sent: this approval no longer exists on the server.',
  },
};

/** Ends `card` with `outcome`, whatever it showed, and says `note` on it and aloud. */
function endCard(card, outcome, note) {
  card.resolve({ ...outcome, note, override: true });
  say(note);
  render();
}

/**
 * After the store refused what this tab sent (`api.notRecorded`): the request as the
 * server reads it now decides the card. Its read answers `outcome_not_recorded` when the
 * request ended with this answer unrecorded (one server's store): the card reads "Not
 * recorded". Pending still (a shared store that took nothing, a vote), or not readable
 * (the store down): the card keeps its error, to be sent again, unless an outcome `came`
 * meanwhile, which stands. Ended otherwise (someone else's answer, which the store took):
 * as after a 409.
 */
async function afterRefusal(request, error, card, came) {
  const kind = card.kind;
  let current;
  let readError;
  // Events of the request that come meanwhile wait, as during the call: the read decides.
  state.rereading.add(request.id);
  try {
    current = await api.get(requestPath(kind, request.id));
  } catch (failed) {
    readError = failed;
  }
  state.rereading.delete(request.id);
  const meanwhile = state.reread.get(request.id) ?? came;
  state.reread.delete(request.id);
  if (api.outcomeNotRecorded(readError)) {
    endCard(card, { status: 'unrecorded' }, actions.describe(error, kind === 'question' ? 'reply' : 'decision'));
    return;
  }
  const outcome = readError ? { status: 'pending' } : api.outcomeOf(current);
  if (outcome.status === 'pending') {
    // Still pending when read (or not read): the card keeps its error, unless an outcome
    // came since, which stands.
    if (meanwhile) settle(request.id, meanwhile);
    return;
  }
  endCard(card, outcome, t(NOT_SENT[kind][409]));
}

// ---- Loading the window ------------------------------------------------------------------

/** Ids order by their ULID, whatever their kind prefix (both kinds share one order). */
function orderKey(id) {
  return String(id).slice(String(id).indexOf('_') + 1);
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** When the server minted `id` (ms since the epoch): a ULID starts with it, in ten
 * characters of Crockford's base 32. */
function mintedAt(id) {
  let time = 0;
  for (const char of orderKey(id).slice(0, 10)) time = time * 32 + CROCKFORD.indexOf(char);
  return time;
}

/** Where `key` goes in `list`, ascending by `keyOf`: the index of its first larger entry. */
function insertionPoint(list, key, keyOf) {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if (keyOf(list[middle]) <= key) low = middle + 1;
    else high = middle;
  }
  return low;
}

/** One page of a list, `{items, next}`; approvals are none on a server without them. */
async function listPage(kind, query) {
  if (kind === 'approval' && state.approvals === 'no') return { items: [], next: null };
  try {
    const page = await api.getPage(`/${kind}?${query}`);
    if (kind === 'approval') state.approvals = 'yes';
    return page;
  } catch (error) {
    // A server without approval routes (they arrived later than questions).
    if (kind === 'approval' && error instanceof api.ApiError && error.status === 404) {
      state.approvals = 'no';
      return { items: [], next: null };
    }
    throw error;
  }
}

/**
 * The view's next `limit` pending requests after id `after` (from the start if none), both
 * kinds merged in id order: `{items: [{kind, request}], frontier}`, `frontier` being the
 * last id the page covers, or `null` when nothing of the view comes after it. Either kind's
 * id is a cursor for both lists (they share one order).
 */
async function fetchPage(after, limit) {
  const query = new URLSearchParams({ limit: String(limit) });
  if (state.session) query.set('sessionID', state.session);
  if (after) query.set('after', after);
  const [questions, approvals] = await Promise.all([listPage('question', query), listPage('approval', query)]);
  const items = [
    ...questions.items.map((request) => ({ kind: 'question', request })),
    ...approvals.items.map((request) => ({ kind: 'approval', request })),
  ].sort((a, b) => (orderKey(a.request.id) < orderKey(b.request.id) ? -1 : 1));
  // A list whose page ended with more to come: the merged page cannot reach past its end.
  let frontier = null;
  for (const page of [questions, approvals]) {
    if (page.next && (frontier === null || orderKey(page.next) < orderKey(frontier))) frontier = page.next;
  }
  let covered = frontier === null ? items : items.filter((item) => orderKey(item.request.id) <= orderKey(frontier));
  if (covered.length > limit) {
    covered = covered.slice(0, limit);
    frontier = covered[limit - 1].request.id;
  }
  return { items: covered, frontier };
}

/** What a snapshot shows: the window's first pages, and every session's counts. */
async function fetchSnapshot() {
  const limit = Math.min(MAX_PAGE, Math.max(PAGE, state.room));
  const [page, counts] = await Promise.all([fetchPage(null, limit), api.get('/session/pending')]);
  return { page, counts };
}

/**
 * A snapshot for a fresh stream or another view: events arriving meanwhile are held, then
 * applied. `continuous`: the stream has not broken since the cards were shown (the view
 * changed), so a card the snapshot no longer lists has an outcome on its way (held, or
 * still in flight on the stream) and waits for it rather than vanishing.
 */
async function resnapshot({ continuous = false } = {}) {
  const generation = ++state.generation;
  // A stream that broke leaves the cards stale until a full snapshot has been applied.
  if (!continuous) state.stale = true;
  const trusted = continuous && !state.stale;
  state.buffer = [];
  // A page in flight belongs to the list this snapshot replaces.
  state.paging = false;
  try {
    const snapshot = await fetchSnapshot();
    if (generation !== state.generation) return;
    applySnapshot(snapshot, { continuous: trusted });
    state.stale = false;
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

/**
 * "Show more": the next page after the window's end joins the window, the events that
 * arrive meanwhile held and applied after it. `focus`: move the keyboard focus to its
 * first card.
 */
async function showMore({ focus }) {
  if (state.paging || state.buffer || state.frontier === null) return;
  const generation = state.generation;
  const from = state.frontier;
  state.paging = true;
  state.buffer = [];
  render();
  let page = null;
  try {
    page = await fetchPage(from, PAGE);
  } catch (error) {
    if (generation !== state.generation) return;
    say(
      error instanceof api.NetworkError
        ? t('Could not reach the server to load more requests.')
        : t('Could not load more requests: {message}', { message: error.message }),
    );
  }
  if (generation !== state.generation) return;
  state.pageFailed = !page;
  if (page) {
    state.room = Math.max(state.room, state.pending.size + PAGE);
    state.frontier = page.frontier;
    for (const { kind, request } of page.items) add(kind, request, { inWindow: true });
  }
  const held = state.buffer;
  state.buffer = null;
  state.paging = false;
  for (const event of held) applyEvent(event);
  render();
  if (page && focus) {
    const first = state.order.find((id) => orderKey(id) > orderKey(from) && state.pending.has(id));
    state.cards.get(first)?.element.focus();
    say(t('Showing {shown} of {total} pending requests.', { shown: state.pending.size, total: viewTotal() }));
  }
}

// ---- State ----------------------------------------------------------------------------

function applySnapshot({ page, counts }, { continuous = false } = {}) {
  applyCounts(counts);
  state.frontier = page.frontier;
  state.pageFailed = false;
  const listed = new Set(page.items.map((item) => item.request.id));
  let gone = 0;
  for (const [id, card] of [...state.cards]) {
    if (state.session && card.element.dataset.session !== state.session) {
      removeCard(id, false);
    } else if (card.resolved || state.submitting.has(id)) {
      continue;
    } else if (listed.has(id)) {
      // Still pending: its votes cast while this page did not follow the stream were missed.
      card.refreshVotes?.();
    } else if (covers(id)) {
      // The stream never broke: this card's outcome event settles it.
      if (continuous) continue;
      gone += 1;
      if (card.touched()) card.resolve({ status: 'gone' });
      else removeCard(id, false);
    } else if (!card.touched()) {
      // Past the window's new end: counted, no longer listed.
      removeCard(id, false);
    }
  }
  // The first snapshot of a view is announced as a whole, a later one card by card.
  const first = state.listed !== state.session;
  for (const { kind, request } of page.items) add(kind, request, { announce: !first, inWindow: true });
  // Drafts of requests the window covers but no longer lists were answered elsewhere.
  if (!state.session) pruneDrafts((id) => !listed.has(id) && covers(id));
  state.loaded = true;
  state.listed = state.session;
  if (first) {
    const count = viewTotal();
    say(count === 0 ? t('No pending requests.') : count === 1 ? t('1 pending request.') : t('{count} pending requests.', { count }));
  } else if (gone > 0) {
    say(
      gone === 1
        ? t('1 request was resolved while this page was not connected.')
        : t('{count} requests were resolved while this page was not connected.', { count: gone }),
    );
  }
  render();
}

/** Whether the window covers request `id`: listed if pending, unless resolved meanwhile. */
function covers(id) {
  return state.frontier === null || orderKey(id) <= orderKey(state.frontier);
}

/** Takes the counts of `GET /session/pending` as they stand, and rebuilds the filter. */
function applyCounts({ sessions, questions_as_of: questionsAsOf, approvals_as_of: approvalsAsOf }) {
  state.counts = new Map();
  state.total = 0;
  for (const session of sessions ?? []) {
    state.counts.set(session.session_id, { question: session.questions, approval: session.approvals });
    state.total += session.questions + session.approvals;
  }
  state.countedUpTo = { question: questionsAsOf ?? '', approval: approvalsAsOf ?? '' };
  rebuildFilter();
}

function applyEvent(event) {
  const properties = event?.properties ?? {};
  switch (event?.type) {
    case 'question.asked':
      count(event, 'question', properties.sessionID, 1);
      add('question', properties, { announce: true });
      arrived(event, 'question', properties, properties.sessionID);
      break;
    case 'question.replied':
      ended(event, 'question', properties.sessionID, properties.requestID, {
        status: 'replied',
        answers: properties.answers,
        answeredBy: properties.answeredBy,
      });
      break;
    case 'question.rejected':
      // The companion OpenCode clients get after `question.timed_out` / `question.cancelled`
      // (`endedAs` names which): that event settled the card already.
      if (properties.endedAs) break;
      ended(event, 'question', properties.sessionID, properties.requestID, {
        status: 'rejected',
        reason: properties.reason,
        answeredBy: properties.answeredBy,
      });
      break;
    case 'question.timed_out':
      ended(event, 'question', properties.sessionID, properties.requestID, { status: 'timed_out' });
      break;
    case 'question.cancelled':
      ended(event, 'question', properties.sessionID, properties.requestID, { status: 'cancelled' });
      break;
    case 'question.not_recorded':
      notRecorded(properties.requestID);
      break;
    case 'question.reminded':
      // Nobody answered yet: the card says so, and stays pending.
      state.cards.get(properties.requestID)?.noteFollowUp('reminded');
      break;
    case 'question.escalated':
      state.cards.get(properties.requestID)?.noteFollowUp('escalated', properties.escalatedTo);
      break;
    case 'approval.asked':
      count(event, 'approval', properties.session_id, 1);
      add('approval', properties, { announce: true });
      arrived(event, 'approval', properties, properties.session_id);
      break;
    case 'approval.replied':
      ended(event, 'approval', properties.session_id, properties.request_id, {
        status: 'replied',
        decisions: properties.decisions,
        votes: properties.votes,
        answeredBy: properties.answered_by,
        granted: properties.granted,
        autoApprovedBy: properties.auto_approved_by,
      });
      break;
    case 'approval.decided':
      // One reviewer's vote on a request that needs a quorum: it stays pending.
      state.cards.get(properties.request_id)?.noteVotes([properties]);
      break;
    case 'approval.timed_out':
      ended(event, 'approval', properties.session_id, properties.request_id, { status: 'timed_out', decisions: properties.decisions });
      break;
    case 'approval.cancelled':
      ended(event, 'approval', properties.session_id, properties.request_id, { status: 'cancelled' });
      break;
    case 'approval.not_recorded':
      notRecorded(properties.request_id);
      break;
    case 'approval.reminded':
      state.cards.get(properties.request_id)?.noteFollowUp('reminded');
      break;
    case 'approval.escalated':
      state.cards.get(properties.request_id)?.noteFollowUp('escalated', properties.escalated_to);
      break;
    case 'approval.granted':
      sessionGrants.granted(properties);
      break;
    case 'approval.grant_revoked':
      sessionGrants.revoked(properties);
      break;
    default:
      return;
  }
  renderSoon();
}

/** A request's outcome event: one fewer pending in its session, and its card settles. */
function ended(event, kind, session, id, outcome) {
  count(event, kind, session, -1);
  notifier.ended(id);
  settle(id, outcome);
}

/**
 * The store refused an outcome whose event came before (`*.not_recorded`): it does not
 * stand, and the card says so, whoever answered. This tab's own refused call reads the
 * request back (`afterRefusal`), which says the same: a card it checks, or already shows
 * as not recorded, is left to it.
 */
function notRecorded(id) {
  const card = state.cards.get(id);
  if (!card || state.rereading.has(id)) return;
  if (card.element.dataset.status === 'unrecorded') return;
  const told = {
    question: 'The outcome of a question in session {session} was not recorded: the server could not store it, and the agent was not given it.',
    approval: 'The outcome of an approval in session {session} was not recorded: the server could not store it, and the agent was not given it.',
  }[card.kind];
  const refused = { status: 'unrecorded', note: t(told, { session: card.element.dataset.session }) };
  if (state.submitting.has(id)) {
    // This tab's call is in flight: the outcome that came meanwhile, which its answer
    // would defer to, does not stand; the card says so once the call ends.
    state.deferred.set(id, refused);
    return;
  }
  endCard(card, refused, refused.note);
}

/** A request asked on the stream: news for a hidden tab (`notify.js`), if it is of the view. */
function arrived(event, kind, request, session) {
  if (!request.id || (state.session && session !== state.session)) return;
  notifier.arrived(kind, request, { notify: isLive(event) });
}

/**
 * Whether `event` happened while the stream was open, rather than being replayed by a
 * stream that resumed (`Last-Event-ID`): a replay after a laptop slept all night is no
 * news to notify of. Event ids carry the server's time, and a replayed one predates the
 * resumption (as far as `api.serverNow` knows the server's clock: to within 2 s, so an
 * event that close to a resumption may go either way).
 */
function isLive(event) {
  return mintedAt(String(event.id)) >= state.resumedAt;
}

/** Applies `delta` to `session`'s count of `kind`, unless the counts include `event`. */
function count(event, kind, session, delta) {
  if (typeof session !== 'string' || !(String(event.id) > state.countedUpTo[kind])) return;
  const counts = state.counts.get(session) ?? { question: 0, approval: 0 };
  const before = counts[kind];
  counts[kind] = Math.max(0, before + delta);
  state.total = Math.max(0, state.total + counts[kind] - before);
  if (counts.question + counts.approval === 0) state.counts.delete(session);
  else state.counts.set(session, counts);
  state.recounted.add(session);
}

/**
 * Lists request `request` of `kind` if it belongs to the window (`inWindow`: it does, it
 * came with a page); `announce`: tell screen-reader users.
 */
function add(kind, request, { announce = false, inWindow = false }) {
  const id = request?.id;
  if (!id || state.cards.has(id)) return;
  const session = kind === 'question' ? request.sessionID : request.session_id;
  if (state.session && session !== state.session) return;
  if (!inWindow && !fits(id)) return;
  const card = kind === 'question' ? questionCard(request, actions) : approvalCard(request, actions);
  state.cards.set(id, card);
  state.pending.add(id);
  card.tick(api.serverNow());
  const at = insertionPoint(state.order, orderKey(id), orderKey);
  const next = state.order[at];
  state.order.splice(at, 0, id);
  ui.list.insertBefore(card.element, next === undefined ? null : state.cards.get(next).element);
  if (announce) {
    const what =
      kind === 'question'
        ? request.questions?.[0]?.question ?? ''
        : (request.action_requests ?? []).map((action) => action.name).join(', ');
    say(t(kind === 'question' ? 'New question in session {session}: {what}' : 'New approval in session {session}: {what}', { session, what }));
  }
}

/**
 * Whether a request asked now joins the window. While the window holds every pending
 * request it takes new ones until it is full; from then on it ends at its last card, and
 * a request after that is only counted until "Show more" reaches it.
 */
function fits(id) {
  if (state.frontier === null) {
    if (state.pending.size < state.room) return true;
    state.frontier = state.order.at(-1);
  }
  return covers(id);
}

function settle(id, outcome) {
  const card = id && state.cards.get(id);
  if (!card) return;
  if (card.resolved) {
    // This tab's own answer, whose call ended before its event came: now it says who.
    card.noteAnsweredBy(outcome.answeredBy);
    return;
  }
  if (state.submitting.has(id)) {
    // This tab's own call is in flight; its answer decides how the card reads.
    state.deferred.set(id, outcome);
    return;
  }
  if (state.rereading.has(id)) {
    // This tab's refused call is being checked (`afterRefusal`); its read decides.
    state.reread.set(id, outcome);
    return;
  }
  if (state.rejectedHere.delete(id)) {
    // Ended by this tab's "Reject all": the human knows. A card they had started on stays.
    if (card.touched()) card.resolve({ ...outcome, here: true });
    else removeCard(id, false);
    return;
  }
  card.resolve(outcome);
  const told = {
    question: {
      replied: 'A question in session {session} was answered elsewhere.',
      rejected: 'A question in session {session} was declined elsewhere.',
      timed_out: 'A question in session {session} expired.',
      cancelled: 'A question in session {session} was withdrawn by the agent.',
    },
    approval: {
      replied: 'An approval in session {session} was decided elsewhere.',
      rejected: 'An approval in session {session} was declined elsewhere.',
      timed_out: 'An approval in session {session} expired.',
      cancelled: 'An approval in session {session} was withdrawn by the agent.',
    },
  }[card.kind]?.[outcome.status];
  if (told) say(t(told, { session: card.element.dataset.session }));
}

function removeCard(id, moveFocus) {
  const card = state.cards.get(id);
  if (!card) return;
  const next = card.element.nextElementSibling ?? card.element.previousElementSibling;
  const hadFocus = card.element.contains(document.activeElement);
  card.element.remove();
  state.cards.delete(id);
  state.pending.delete(id);
  state.rejectedHere.delete(id);
  const at = insertionPoint(state.order, orderKey(id), orderKey) - 1;
  if (state.order[at] === id) state.order.splice(at, 1);
  if (moveFocus || hadFocus) (next ?? ui.listTitle).focus();
  render();
}

// ---- Rendering ----------------------------------------------------------------------

/** How many requests `session` has pending. */
function sessionCount(session) {
  const counts = state.counts.get(session);
  return counts ? counts.question + counts.approval : 0;
}

/** How many requests the view (one session, or all) has pending. */
function viewTotal() {
  return state.session ? sessionCount(state.session) : state.total;
}

/** Sets `element`'s text, if it changed (a flood sets the same text often). */
function show(element, text) {
  if (element.textContent !== text) element.textContent = text;
}

/**
 * Renders once after the events being applied: the events of one read of the stream (a
 * burst of a flood) cost one render, not one each.
 */
function renderSoon() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  queueMicrotask(() => {
    state.renderQueued = false;
    render();
  });
}

function render() {
  if (state.recounted.size > 0) {
    for (const session of state.recounted) updateOption(session);
    state.recounted.clear();
    setAllText();
  }
  const total = viewTotal();
  const shown = state.pending.size;
  show(ui.count, String(total));
  ui.loading.hidden = state.loaded;
  ui.empty.hidden = !state.loaded || total > 0 || shown > 0;
  if (!ui.empty.hidden) {
    setText(
      ui.empty,
      state.session
        ? t('Nothing is waiting for you in session “{session}”.', { session: state.session })
        : t('Nothing is waiting for you. When an agent asks a question or wants approval, it appears here.'),
    );
  }
  // A hidden tab counts what arrived since it was hidden and is still pending (`notify.js`),
  // as `(N new)`: `(N)` is the pending total, and a count that drops when a request
  // arrives would read wrong.
  const unseen = notifier.unseenCount;
  const title = unseen > 0 ? t('({count} new) askbus', { count: unseen }) : total > 0 ? `(${total}) askbus` : 'askbus';
  if (document.title !== title) document.title = title;
  const more = Math.max(0, total - shown);
  ui.more.hidden = !state.loaded || state.frontier === null || more === 0;
  ui.more.disabled = state.paging;
  show(ui.more, state.paging ? t('Loading more…') : t('Show {count} more ({more} not shown)', { count: Math.min(PAGE, more), more }));
  ui.rejectOpen.hidden = !state.loaded || !state.session || total === 0;
  if (ui.rejectOpen.hidden && !state.rejecting) closeRejectAll();
  // A window whose cards were all resolved goes on with the next page by itself.
  if (state.live && !ui.more.hidden && shown === 0 && !state.rejecting && !state.pageFailed) {
    showMore({ focus: false });
  }
}

/** The session filter, rebuilt from the counts (after a snapshot). */
function rebuildFilter() {
  state.sessions = [...state.counts.keys()];
  if (state.session && !state.counts.has(state.session)) state.sessions.push(state.session);
  state.sessions.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  state.options = new Map(state.sessions.map((session) => [session, h('option', { value: session })]));
  for (const session of state.sessions) setOptionText(session);
  ui.filter.replaceChildren(h('option', { value: '' }), ...state.options.values());
  ui.filter.value = state.session;
  state.recounted.clear();
  setAllText();
}

/** Rewrites the one option of `session` after its count changed: adds or drops it (then
 * `setAllText`). */
function updateOption(session) {
  const listed = state.options.has(session);
  if (sessionCount(session) === 0 && session !== state.session) {
    if (listed) {
      state.options.get(session).remove();
      state.options.delete(session);
      state.sessions.splice(insertionPoint(state.sessions, session, (name) => name) - 1, 1);
    }
  } else if (!listed) {
    const at = insertionPoint(state.sessions, session, (name) => name);
    const option = h('option', { value: session });
    const next = state.options.get(state.sessions[at]);
    state.sessions.splice(at, 0, session);
    state.options.set(session, option);
    ui.filter.insertBefore(option, next ?? null);
    setOptionText(session);
  } else {
    setOptionText(session);
  }
}

function setOptionText(session) {
  // An option takes no markup: hidden characters are marked in its text.
  show(state.options.get(session), `${visibleString(session)} (${sessionCount(session)})`);
}

function setAllText() {
  show(ui.filter.options[0], t('All sessions ({count})', { count: state.total }));
}

// ---- Reject all pending in a session -----------------------------------------------------

function openRejectAll() {
  const total = sessionCount(state.session);
  setText(
    ui.rejectText,
    `${
      total === 1
        ? t('Reject the 1 pending request of session “{session}”?', { session: state.session })
        : t('Reject all {count} pending requests of session “{session}”?', { count: total, session: state.session })
    } ${t(
      'Its questions are declined and its tool calls rejected (an approval that does not allow rejecting is cancelled): nothing of it runs. This cannot be undone.',
    )}`,
  );
  show(ui.rejectConfirm, t('Reject all {count}', { count: total }));
  ui.rejectError.hidden = true;
  ui.rejectReason.value = '';
  ui.rejectPanel.hidden = false;
  ui.rejectOpen.setAttribute('aria-expanded', 'true');
  ui.rejectReason.focus();
}

function closeRejectAll() {
  ui.rejectPanel.hidden = true;
  ui.rejectOpen.setAttribute('aria-expanded', 'false');
}

/** Refuses everything the chosen session has pending (`POST /session/{id}/reject`). */
async function rejectAll() {
  const session = state.session;
  if (!session || state.rejecting) return;
  const reason = ui.rejectReason.value.trim();
  // Their outcomes read as this tab's, whenever they arrive.
  const mine = [...state.pending].filter((id) => !state.submitting.has(id));
  for (const id of mine) state.rejectedHere.add(id);
  state.rejecting = true;
  for (const control of [ui.rejectConfirm, ui.rejectCancel, ui.rejectReason]) control.disabled = true;
  try {
    const result = await api.post(`/session/${encodeURIComponent(session)}/reject`, reason ? { reason } : {});
    closeRejectAll();
    const rejected =
      result.rejected === 1
        ? t('Rejected 1 pending request of session {session}.', { session })
        : t('Rejected {count} pending requests of session {session}.', { count: result.rejected, session });
    const cancelled = !result.cancelled
      ? ''
      : result.cancelled === 1
        ? ` ${t('1 approval that may not be rejected was cancelled.')}`
        : ` ${t('{count} approvals that may not be rejected were cancelled.', { count: result.cancelled })}`;
    say(`${rejected}${cancelled}`);
    ui.listTitle.focus();
  } catch (error) {
    // The server answered: it refused nothing of it.
    if (error instanceof api.ApiError) for (const id of mine) state.rejectedHere.delete(id);
    setText(ui.rejectError, describeError(error, 'reject'));
    ui.rejectError.hidden = false;
  } finally {
    state.rejecting = false;
    for (const control of [ui.rejectConfirm, ui.rejectCancel, ui.rejectReason]) control.disabled = false;
    render();
  }
}

ui.rejectOpen.addEventListener('click', openRejectAll);
ui.rejectCancel.addEventListener('click', () => {
  closeRejectAll();
  ui.rejectOpen.focus();
});
ui.rejectConfirm.addEventListener('click', rejectAll);
ui.rejectReason.addEventListener('keydown', (event) => {
  if (event.key === 'Enter') {
    event.preventDefault();
    rejectAll();
  } else if (event.key === 'Escape') {
    ui.rejectCancel.click();
  }
});
ui.more.addEventListener('click', () => showMore({ focus: true }));

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
    ui.bannerText.textContent = t('This server needs an access token to show and answer requests.');
    ui.bannerButton.textContent = t('Enter token');
    ui.bannerButton.hidden = false;
  } else if (state.banner === 'network') {
    const seconds = Math.max(0, Math.ceil((state.retryAt - Date.now()) / 1000));
    const where = state.busy
      ? t('The server is busy: it holds as many open streams as it allows.')
      : navigator.onLine
        ? t('Lost the connection to the server.')
        : t('You are offline.');
    const when = seconds > 0 ? t('Reconnecting in {seconds} s…', { seconds }) : t('Reconnecting…');
    const meanwhile = state.busy
      ? t('The list may be out of date until then; answers can still be sent.')
      : t('The list may be out of date and answers cannot be sent until it is back.');
    ui.bannerText.textContent = `${where} ${when} ${meanwhile}`;
    ui.bannerButton.textContent = t('Retry now');
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
    ui.announcer.textContent = visibleString(text);
  }, 50);
  clearing = setTimeout(() => {
    ui.announcer.textContent = '';
  }, 10000);
}

// ---- Token ----------------------------------------------------------------------------

/**
 * Opens the token dialog. `why`: what is wrong with the token this tab has, when the server
 * took it but refused what it tried (an agent's token answering); without it, a token this
 * tab has was not accepted at all (401).
 */
function askForToken(why) {
  if (!why) setConnection('locked', t('Token needed'));
  if (ui.tokenDialog.open) return;
  const rejected = Boolean(api.token());
  ui.tokenError.textContent = why ?? (rejected ? t('The server did not accept that token. Check it and try again.') : '');
  ui.tokenError.hidden = !why && !rejected;
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
    ui.tokenError.textContent = t('Enter the token first.');
    ui.tokenError.hidden = false;
    ui.tokenInput.focus();
    return;
  }
  api.setToken(value);
  updateTokenButton();
  ui.tokenDialog.close();
  hideBanner();
  stream.resume();
  deliveries.tokenChanged();
  sessionTimeline.resume();
  sessionTimeline.retry();
  sessionGrants.reload();
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

const notifier = new ArrivalNotifier(
  { toggle: ui.notifyToggle, blocked: ui.notifyBlocked },
  {
    changed: render,
    // A request beyond the window, or dismissed meanwhile, has no card: the list, then.
    reveal: (id) => {
      const card = state.cards.get(id);
      if (card) reveal(card);
      else ui.listTitle.focus();
    },
    say,
  },
);

// An admin's view of the webhooks' deliveries (`deliveries.js`): nothing for anyone else.
const deliveries = new DeliveryStatus({
  toggle: ui.deliveriesToggle,
  text: ui.deliveriesText,
  panel: ui.deliveriesPanel,
  summary: ui.deliveriesSummary,
  list: ui.deliveriesList,
  error: ui.deliveriesError,
  close: ui.deliveriesClose,
});

const stream = new EventStreamClient({
  url: () => '/event',
  headers: api.authHeaders,
  onConnected({ resumed }) {
    state.resumedAt = resumed ? api.serverNow() : 0;
    if (!resumed) {
      resnapshot();
      sessionGrants.reload();
    }
  },
  onResync() {
    resnapshot();
    sessionGrants.reload();
  },
  onEvent(event) {
    if (state.buffer) state.buffer.push(event);
    else applyEvent(event);
    deliveries.eventArrived(event);
  },
  onStatus(status, detail) {
    state.live = status === 'live';
    if (status === 'live') {
      setConnection('live', t('Live'));
      if (state.banner === 'network') say(t('Reconnected.'));
      if (state.banner !== 'token') hideBanner();
      sessionTimeline.retry();
    } else if (status === 'connecting') {
      if (!state.banner) setConnection('connecting', t('Connecting…'));
    } else if (status === 'reconnecting') {
      state.retryAt = detail.retryAt;
      state.busy = Boolean(detail.error?.busy);
      setConnection('offline', t('Disconnected'));
      if (state.banner !== 'network') {
        showBanner('network');
        say(t('Lost the connection to the server; reconnecting.'));
      } else {
        updateBanner();
      }
      refreshWhileDisconnected();
    } else if (status === 'unauthorized') {
      askForToken();
    }
  },
});

/** Shows one session ('' for all): its window of requests, and its timeline. */
function selectSession(session) {
  state.session = session;
  const url = new URL(location.href);
  if (state.session) url.searchParams.set('session', state.session);
  else url.searchParams.delete('session');
  history.replaceState(null, '', url);
  closeRejectAll();
  // Another view: its own window, from its first page.
  for (const [id, card] of [...state.cards]) {
    if (session && card.element.dataset.session !== session) removeCard(id, false);
  }
  state.room = PAGE;
  state.frontier = null;
  rebuildFilter();
  if (state.live) {
    resnapshot({ continuous: true });
  } else {
    // Drops a load for the other view; the list follows when the server answers.
    state.generation += 1;
    state.buffer = null;
    state.lastRefresh = 0;
    refreshWhileDisconnected();
  }
  render();
  sessionTimeline.show(session);
  sessionGrants.show(session);
}

/** Takes the human from a pending request in the timeline to its card. */
function reviewRequest(key) {
  const card = [...state.cards.values()].find((card) => !card.resolved && card.element.dataset.key === key);
  if (!card) {
    say(t('That request is not in the list: it is no longer pending, or further down (use “Show more”).'));
    return;
  }
  reveal(card);
}

/** Scrolls `card` into view and moves the keyboard focus into it. */
function reveal(card) {
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

const sessionGrants = new SessionGrants(
  {
    section: byId('grants-section'),
    list: byId('grants-list'),
    empty: byId('grants-empty'),
    status: byId('grants-status'),
    error: byId('grants-error'),
  },
  { say },
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
rebuildFilter();
render();
sessionTimeline.show(state.session);
sessionGrants.show(state.session);
stream.start();
deliveries.start();
