// The page of an answer link (`/answer/{token}`): one request, answered without a token.
//
// A reviewer is sent a signed, expiring, single-use link to one question or approval, and
// answers it wherever the link lands (a phone, a chat, an email). This page reads the
// link's token from its address, loads the request with `GET /answer/{token}/request`
// (which also says whom the link acts as and when it expires), and shows the very card the
// main page shows (`question.js`, `approval.js`). The card's answer goes to
// `POST /answer/{token}` (a question's decline to `POST /answer/{token}/reject`) with no
// `Authorization` header: the link is the authority, and it answers as the identity it
// was minted for.
//
// There is no event stream here (that needs a token): what happened elsewhere shows when
// the page loads, and when an answer is refused (a 409: the page reads the request again
// and shows how it ended). States, each said in the notice above the card: loading; the
// link is forged or malformed (404) or expired (410); the server could not be reached (a
// retry); the request is pending (the card alone); it ended already (the card with its
// outcome and who answered); this page's answer was sent (thanks, the card resolved). Under
// a quorum, this link's vote leaves the request pending: the card says how many more
// reviewers it waits for, as on the main page. The page speaks the browser's language,
// as every card does (a request's `locale` only when the browser speaks none of the UI's).

import * as api from './api.js';
import { approvalCard } from './approval.js';
import { formatRemaining, h, oneLine, setText } from './dom.js';
import { NOT_RECORDED_TEXT, sentNouns, t as pageText, translateMarkup, translator } from './i18n.js';
import { questionCard } from './question.js';

const byId = (id) => document.getElementById(id);
const ui = {
  title: byId('answer-title'),
  linkInfo: byId('link-info'),
  actsAs: byId('acts-as'),
  expiry: byId('link-expiry'),
  notice: byId('notice'),
  noticeText: byId('notice-text'),
  retry: byId('notice-retry'),
  card: byId('card'),
};

/** The link's token: what follows `/answer/` in the address. */
const token = (() => {
  const raw = location.pathname.replace(/^\/answer\//, '');
  try {
    return decodeURIComponent(raw);
  } catch {
    // A malformed escape: the server calls the link invalid.
    return raw;
  }
})();

/** The link's route `verb` (`request`, `reject`), or the link itself without one. */
const linkPath = (verb) => `/answer/${encodeURIComponent(token)}${verb ? `/${verb}` : ''}`;

const state = {
  /** Whom the link acts as (`{name, role}`), and when it expires (ms since the epoch). */
  actsAs: null,
  expiresAt: null,
  /** The card's controller, once the request is shown. */
  card: null,
};

/** The page's words: the browser's language, then the request's once it is loaded. */
let t = pageText;
translateMarkup(document);

/** What the page says of a vote that leaves its quorum waiting (the card says how long). */
const VOTE_RECORDED = 'Your decision is recorded: this request waits for more reviewers.';

/** What a notice is about (`data-state`, for its style and for tests) and what it says. */
function notify(kind, text, { retry = false } = {}) {
  ui.notice.dataset.state = kind;
  setText(ui.noticeText, text);
  ui.notice.hidden = !text;
  ui.retry.hidden = !retry;
}

/** Whether two wire identities (`{name, role}`) are the same reviewer. */
const same = (a, b) => Boolean(a && b) && a.name === b.name && a.role === b.role;

/** The request as the link sees it now: `{kind, request, acts_as, expires_at}`. */
const readLink = () => api.linkCall('GET', linkPath('request'));

async function load() {
  notify('loading', t('Loading…'));
  let link;
  try {
    link = await readLink();
  } catch (error) {
    linkFailed(error);
    return;
  }
  show(link);
}

/** The link could not be read (or used): says why, and whether trying again may help. */
function linkFailed(error) {
  if (error instanceof api.ApiError && error.status === 404) {
    ui.card.replaceChildren();
    ui.linkInfo.hidden = true;
    notify(
      'invalid',
      t('This link is not valid. Check that the whole link was opened (some apps cut long links), or ask whoever sent it for a new one.'),
    );
  } else if (error instanceof api.ApiError && error.status === 410) {
    ui.expiry.hidden = true;
    notify('expired', t('This link has expired. Ask whoever sent it for a new one.'));
  } else if (error instanceof api.NetworkError) {
    notify('error', t('Could not reach the server. Check the connection and try again.'), { retry: true });
  } else {
    notify('error', t('Could not load the request: {message}', { message: error.message }), { retry: true });
  }
}

/** Shows the request of the link: its card, whom the link acts as, how it stands. */
function show({ kind, request, acts_as: actsAs, expires_at: expiresAt }) {
  state.actsAs = actsAs;
  state.expiresAt = expiresAt;
  t = translator(request.locale);
  document.documentElement.lang = t.locale;
  ui.title.textContent = t('Answer a request');
  ui.actsAs.replaceChildren(
    ...t.parts('You are answering as {name}', { name: h('strong', { class: 'by-name' }, oneLine(actsAs?.name ?? t('someone'))) }),
    actsAs?.role ? ` (${actsAs.role})` : '',
  );
  ui.linkInfo.hidden = false;
  const card = kind === 'approval' ? approvalCard(request, actions) : questionCard(request, actions);
  state.card = card;
  ui.card.replaceChildren(card.element);
  // The link's time matters only while it can still answer.
  ui.expiry.hidden = true;
  if (request.status && request.status !== 'pending') {
    showEnded(card, request);
  } else if (request.votes?.some((vote) => same(vote.decided_by, actsAs))) {
    // A quorum this link has voted on already: the card waits for the other reviewers.
    card.noteVoted();
    notify('sent', t(VOTE_RECORDED));
  } else {
    ui.expiry.hidden = false;
    notify('pending', '');
  }
  tick();
}

/**
 * Resolves `card` with how `current` (the request, no longer pending) ended, `note` saying
 * what became of this page's answer if it sent one.
 */
function showEnded(card, current, note) {
  const outcome = api.outcomeOf(current);
  // The link's identity is "you": a link opened again after its answer reads "You answered".
  card.resolve({ ...outcome, here: same(outcome.answeredBy, state.actsAs), note, override: true });
  notify('resolved', endedText(card.kind, current.status));
}

/** The notice for a request that ended before this page answered it. */
function endedText(kind, status) {
  const question = kind === 'question';
  return t(
    {
      replied: question ? 'This question was already answered: nothing is left to do here.' : 'This request was already decided: nothing is left to do here.',
      rejected: 'This question was already declined: nothing is left to do here.',
      timed_out: question ? 'This question expired before anyone answered it.' : 'This request expired before anyone answered it.',
      cancelled: question ? 'The agent withdrew this question: it no longer needs an answer.' : 'The agent withdrew this request: it no longer needs an answer.',
    }[status] ?? (question ? 'This question is no longer pending.' : 'This request is no longer pending.'),
  );
}

/** What the cards send (`answer`, `decline`, `decision`), as the page names it. */
const noun = (what) => (what === 'decision' ? 'decision' : 'answer');

/**
 * Sends the card's answer through the link (`verb`: `''` or `reject`); the card learns it
 * was the link's identity that answered.
 */
async function send(verb, body, what) {
  await api.linkCall('POST', linkPath(verb), body);
  ui.expiry.hidden = true;
  notify('sent', t('Thank you: {yours} was sent.', { yours: sentNouns(noun(what), t).yours }));
  return { answeredBy: state.actsAs };
}

/** The card's calls, through the link instead of the token of the main page. */
const actions = {
  reply: (request, answers) => send('', { answers }, 'answer'),
  reject: (request, reason) => send('reject', reason ? { reason } : {}, 'decline'),
  /**
   * A decision; under a quorum this vote may or may not have been the one that ended the
   * request, and no event will say: the request as it now stands does.
   */
  async decide(request, decisions) {
    const sent = await send('', { decisions }, 'decision');
    try {
      const { request: current } = await readLink();
      if (current?.status && current.status !== 'pending') return { ...sent, outcome: api.outcomeOf(current) };
    } catch {
      // Sent all the same: the card shows the decision as this page made it.
    }
    return sent;
  },
  /** The request with its votes so far (the approval card's quorum). */
  fetch: async () => (await readLink()).request,
  describe: describeError,
  dismiss: () => {
    ui.card.replaceChildren();
    ui.title.focus();
  },
  failed: afterFailure,
};

/** A failure of this page's answer, as a sentence on its card (in the card's language). */
function describeError(error, what, text = t) {
  const { yours, thisOne } = sentNouns(noun(what), text);
  if (error instanceof api.NetworkError) {
    return text('Could not reach the server, so {yours} was not sent. Check the connection and try again.', { yours });
  }
  if (!(error instanceof api.ApiError)) return text('Something went wrong: {message}', { message: error.message });
  switch (error.status) {
    case 403:
      return text('This link may not do that: {message}', { message: error.message });
    case 404:
      return text('This link is not valid: {yours} was not sent.', { yours });
    case 409:
      return text('Already answered, or this link was used: {yours} was not sent.', { yours });
    case 410:
      return text('This link has expired: {yours} was not sent.', { yours });
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

/**
 * After a refused answer: a 409 means the request ended elsewhere or this link was used, so
 * the card shows how it stands now; a 404 or 410 is about the link, said above the card
 * (the card keeps its error). A 503 `store_unavailable` (`api.notRecorded`): the link's
 * read says whether the request ended with this answer unrecorded (`outcome_not_recorded`:
 * "Not recorded"), is pending still or cannot be read (the card keeps its error), or ended
 * otherwise.
 */
async function afterFailure(request, error, card) {
  if (!(error instanceof api.ApiError)) return;
  if (error.status === 404 || error.status === 410) {
    linkFailed(error);
    return;
  }
  const refused = api.notRecorded(error);
  if (error.status !== 409 && !refused) return;
  let current;
  try {
    current = (await readLink()).request;
  } catch (readError) {
    if (refused && api.outcomeNotRecorded(readError)) {
      // The request ended with this very answer, which the store refused: it stands
      // nowhere, and the link has nothing left to answer.
      ui.expiry.hidden = true;
      const note = describeError(error, card.kind === 'question' ? 'answer' : 'decision');
      card.resolve({ status: 'unrecorded', note, override: true });
      notify('error', note);
    } else if (!refused) {
      linkFailed(readError);
    }
    return;
  }
  // Refused and still pending (a shared store that took nothing): the card keeps its error.
  if (refused && current?.status === 'pending') return;
  ui.expiry.hidden = true;
  if (current?.status && current.status !== 'pending') {
    showEnded(
      card,
      current,
      t(card.kind === 'question' ? 'Your answer was not sent: this question was already resolved.' : 'Your decision was not sent: this approval was already resolved.'),
    );
  } else {
    // Still pending: this link has voted on its quorum already.
    card.noteVoted?.();
    card.refreshVotes?.();
    notify('sent', t(VOTE_RECORDED));
  }
}

/** The link's time left, and the card's countdown, on the server's clock. */
function tick() {
  const now = api.serverNow();
  state.card?.tick(now);
  if (!state.expiresAt || ui.expiry.hidden) return;
  const left = formatRemaining(state.expiresAt - now);
  const at = t.time(state.expiresAt);
  ui.expiry.dataset.state = left === null ? 'over' : 'ok';
  ui.expiry.textContent =
    left === null
      ? t('This link expired at {at}: answers sent from it are refused.', { at })
      : t('This link expires in {left} (at {at}); it decides as its reviewer, once.', { left, at });
}

ui.retry.addEventListener('click', load);
setInterval(tick, 1000);
load();
