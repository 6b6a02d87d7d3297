// Webhook deliveries in the web UI (`deliveries.js`), in Debian's chromium.
//
// Run by tests/ui.rs (`the_web_ui_shows_webhook_deliveries_to_admins`), which serves askbus
// twice with a webhook to one local receiver whose answer this script sets
// (`PUT ASKBUS_UI_DELIVERIES_RECEIVER` with `503`, `204` or `410`): once without tokens
// (everyone local is an admin) and once with an admin's and a reviewer's tokens. The
// questions are asked over HTTP from here, as an agent in another process asks them:
//   - before any delivery the top bar has no webhooks control;
//   - the receiver answering 503: "Webhooks: 1 pending", whose panel (opened from the
//     keyboard, closed with Escape) lists the question.asked delivery to the receiver with
//     its attempts, "the receiver answered 503 Service Unavailable" and "next attempt in
//     N s"; answering 204 again, "Webhooks: all delivered" within a refresh;
//   - a 410 abandons at once ("Webhooks: 1 abandoned"), then a 503 makes
//     "Webhooks: 1 pending · 1 abandoned", both listed, newest first;
//   - a hidden tab reads nothing, and reads at once when shown again;
//   - a page with the default 15 s refresh reads soon after a request event: a delivery
//     abandoned right after it shows within 5 s;
//   - with tokens, a reviewer's page shows no control, no error and no token prompt for
//     it: a quiet 401 before the token (the prompt the stream raised, declined, does not
//     come back), a 403 after it, then no more reads; an admin's page shows the control.
// Refreshes: an init script sets `window.askbusDeliveriesRefreshMs` (200 ms instead of
// 15 s), and answers `document.hidden` from a flag `setHidden` flips (as notify.mjs does).
// stdout: one line, {"done": true}; the test checks the deliveries on the server.
// Environment: ASKBUS_UI_DELIVERIES_URL, ASKBUS_UI_DELIVERIES_AUTH_URL,
// ASKBUS_UI_DELIVERIES_RECEIVER, ASKBUS_UI_DELIVERIES_HOOK, ASKBUS_UI_DELIVERIES_ADMIN,
// ASKBUS_UI_DELIVERIES_REVIEWER, ASKBUS_UI_CHROMIUM; ASKBUS_UI_SCREENSHOTS (optional).

import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { launch } from './chromium.mjs';
import { WAIT, env, live, logger, post, setHidden } from './support.mjs';

const BASE = env('ASKBUS_UI_DELIVERIES_URL');
const AUTH = env('ASKBUS_UI_DELIVERIES_AUTH_URL');
const RECEIVER = env('ASKBUS_UI_DELIVERIES_RECEIVER');
/** The webhook's name, as deliveries are listed under it (its origin and a fingerprint). */
const HOOK = env('ASKBUS_UI_DELIVERIES_HOOK');
const ADMIN = env('ASKBUS_UI_DELIVERIES_ADMIN');
const REVIEWER = env('ASKBUS_UI_DELIVERIES_REVIEWER');
const SCREENSHOTS = process.env.ASKBUS_UI_SCREENSHOTS;
const SESSION = 'ui-deliveries';
/** The refresh interval the init script sets, in ms. */
const REFRESH = 200;
const log = logger('ui deliveries');

/** The receiver answers every post with `status` from now on. */
async function receiverAnswers(status) {
  const response = await fetch(RECEIVER, { method: 'PUT', body: String(status) });
  assert.equal(response.status, 204, await response.text());
}

/** The agent asks one question on the server at `base` (with `token`, if any). */
const ask = (question, { base = BASE, token } = {}) =>
  post(
    base,
    '/question',
    { sessionID: SESSION, questions: [{ question, header: 'Webhooks', options: [{ label: 'Yes', description: 'go ahead' }] }] },
    { token },
  );

/** Installed before the page's scripts: the refresh interval, and a tab that can hide. */
function instrument(refresh) {
  window.askbusDeliveriesRefreshMs = refresh;
  const test = { hidden: false };
  window.askbusTest = test;
  Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => test.hidden });
  Object.defineProperty(Document.prototype, 'visibilityState', {
    configurable: true,
    get: () => (test.hidden ? 'hidden' : 'visible'),
  });
}

/** Hides or shows the tab, as far as the page can tell. */

const isDeliveries = (url) => new URL(url).pathname === '/webhook/deliveries';

/** A page on `base`, its errors collected, its reads of the deliveries recorded. */
async function open(context, base, { refresh, pageErrors }) {
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.stack || error}`));
  const reads = { requests: 0, statuses: [] };
  page.on('request', (request) => {
    if (isDeliveries(request.url())) reads.requests += 1;
  });
  page.on('response', (response) => {
    if (isDeliveries(response.url())) reads.statuses.push(response.status());
  });
  if (refresh) await page.addInitScript(instrument, refresh);
  return { page, reads };
}

/** Gives `page` a token through the token dialog, as a human does. */
async function enterToken(page, token) {
  const dialog = page.getByRole('dialog', { name: 'Access token needed' });
  await dialog.waitFor({ timeout: WAIT });
  await dialog.getByLabel('Access token').fill(token);
  await dialog.getByRole('button', { name: 'Use token' }).click();
}

const control = (page) => page.locator('#deliveries-toggle');
/** Waits until the control reads `text` (its accessible name). */
const controlReads = (page, text) => page.getByRole('button', { name: text, exact: true }).waitFor({ timeout: WAIT });
const panel = (page) => page.getByRole('region', { name: 'Webhook deliveries' });
const rows = (page) => panel(page).locator('li.delivery');
const nextRead = (page) => page.waitForResponse((response) => isDeliveries(response.url()), { timeout: WAIT });
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function screenshot(page, name) {
  if (!SCREENSHOTS) return;
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`) });
}

async function main() {
  const pageErrors = [];
  const context = await launch();
  try {
    await receiverAnswers(503);
    const { page, reads: pageReads } = await open(context, BASE, { refresh: REFRESH, pageErrors });

    // No delivery yet: no control, however often it reads.
    const first = nextRead(page);
    await page.goto(BASE);
    await live(page);
    assert.equal((await first).status(), 200);
    await nextRead(page);
    assert.equal(await control(page).isHidden(), true, 'no control before any delivery');
    log('no deliveries, no control');

    // A receiver answering 503: pending, with the error, retried.
    await ask('Ship the release?');
    await controlReads(page, 'Webhooks: 1 pending');
    await control(page).focus();
    await page.keyboard.press('Enter');
    await panel(page).waitFor({ timeout: WAIT });
    assert.equal(await control(page).getAttribute('aria-expanded'), 'true');
    const row = rows(page).first();
    await row.filter({ hasText: 'the receiver answered 503 Service Unavailable' }).waitFor({ timeout: WAIT });
    await row.filter({ hasText: /next attempt in \d+ s/ }).waitFor({ timeout: WAIT });
    const text = await row.innerText();
    assert.match(text, /question\.asked/, text);
    assert.match(text, /pending/, text);
    assert.ok(text.includes(`to ${HOOK}`), text);
    // Not the URL: a webhook's path may be the receiver's secret.
    assert.ok(!text.includes('/hook'), text);
    assert.match(text, /\d+ attempts?; last: the receiver answered 503 Service Unavailable; next attempt/, text);
    assert.equal(await rows(page).count(), 1);
    // Server strings went in as text: no element but the ones the row is made of.
    const tags = await row.evaluate((element) => [...element.querySelectorAll('*')].map((child) => child.tagName));
    assert.ok(tags.every((tag) => ['P', 'SPAN'].includes(tag)), tags.join());
    await page.keyboard.press('Escape');
    await panel(page).waitFor({ state: 'hidden', timeout: WAIT });
    assert.equal(await control(page).getAttribute('aria-expanded'), 'false');
    assert.equal(await control(page).evaluate((element) => element === document.activeElement), true);
    await page.keyboard.press('Enter');
    await panel(page).waitFor({ timeout: WAIT });
    log('pending, with the error');

    // The receiver takes it again: all delivered, within a refresh.
    await receiverAnswers(204);
    await controlReads(page, 'Webhooks: all delivered');
    await panel(page).getByText('The newest delivery was delivered.').waitFor({ timeout: WAIT });
    assert.equal(await rows(page).count(), 0);
    log('all delivered');

    // 410 abandons at once; then a 503 keeps one pending beside it.
    await receiverAnswers(410);
    await ask('Rotate the keys?');
    await controlReads(page, 'Webhooks: 1 abandoned');
    await receiverAnswers(503);
    await ask('Drop the cache?');
    await controlReads(page, 'Webhooks: 1 pending · 1 abandoned');
    await rows(page).nth(1).waitFor({ timeout: WAIT });
    await rows(page).first().filter({ hasText: 'the receiver answered 503 Service Unavailable' }).waitFor({ timeout: WAIT });
    const states = await rows(page).evaluateAll((items) => items.map((item) => item.dataset.state));
    assert.deepEqual(states, ['pending', 'abandoned'], 'newest first');
    const abandoned = await rows(page).nth(1).innerText();
    assert.match(abandoned, /1 attempt; last: the receiver answered 410 Gone/, abandoned);
    assert.doesNotMatch(abandoned, /next attempt/, abandoned);
    await panel(page)
      .getByText('Of the newest 3 deliveries: 1 pending, 1 abandoned, the rest delivered.')
      .waitFor({ timeout: WAIT });
    await screenshot(page, 'deliveries-light');
    await page.emulateMedia({ colorScheme: 'dark' });
    await screenshot(page, 'deliveries-dark');
    await page.emulateMedia({ colorScheme: 'light' });
    log('pending beside abandoned');

    // Hidden, the tab reads nothing; shown again, it reads at once.
    await setHidden(page, true);
    // A read in flight when it hid may still end.
    await pause(REFRESH);
    const before = pageReads.requests;
    await pause(5 * REFRESH);
    assert.equal(pageReads.requests, before, 'a hidden tab reads no deliveries');
    const shown = nextRead(page);
    await setHidden(page, false);
    await shown;
    log('hidden, no reads');

    await receiverAnswers(204);
    await controlReads(page, 'Webhooks: 1 abandoned');

    // The default refresh (15 s): a request event makes the page read soon after it.
    const { page: plain } = await open(context, BASE, { pageErrors });
    await plain.goto(BASE);
    await live(plain);
    await controlReads(plain, 'Webhooks: 1 abandoned');
    const loaded = Date.now();
    await receiverAnswers(410);
    await ask('Archive the logs?');
    const asked = Date.now();
    await plain.getByRole('button', { name: 'Webhooks: 2 abandoned', exact: true }).waitFor({ timeout: 5_000 });
    assert.ok(Date.now() - loaded < 14_000, 'read after the event, not by the 15 s refresh');
    log(`read ${Date.now() - asked} ms after the event`);
    await receiverAnswers(204);
    await plain.close();
    await page.close();

    // With tokens: a reviewer reads a quiet 401 (before the token) and a 403, then nothing.
    await ask('Restart the workers?', { base: AUTH, token: ADMIN });
    const reviewer = await open(context, AUTH, { refresh: REFRESH, pageErrors });
    await reviewer.page.goto(AUTH);
    // Without a token the stream asks for one; declined, nothing asks again.
    const prompt = reviewer.page.getByRole('dialog', { name: 'Access token needed' });
    await prompt.getByRole('button', { name: 'Cancel' }).click({ timeout: WAIT });
    await reviewer.page.locator('#banner[data-kind="token"]').waitFor({ timeout: WAIT });
    await pause(5 * REFRESH);
    assert.equal(await reviewer.page.getByRole('dialog').count(), 0, 'no second prompt');
    assert.deepEqual(reviewer.reads.statuses, [401]);
    await reviewer.page.getByRole('button', { name: 'Enter token' }).click();
    await enterToken(reviewer.page, REVIEWER);
    await live(reviewer.page);
    const deadline = Date.now() + WAIT;
    while (!reviewer.reads.statuses.includes(403)) {
      assert.ok(Date.now() < deadline, `no 403: ${reviewer.reads.statuses}`);
      await pause(50);
    }
    const refused = reviewer.reads.requests;
    await pause(5 * REFRESH);
    assert.deepEqual(reviewer.reads.statuses, [401, 403]);
    assert.equal(reviewer.reads.requests, refused, 'no reads after a 403');
    assert.equal(await control(reviewer.page).isHidden(), true);
    assert.equal(await reviewer.page.locator('#deliveries-panel').isHidden(), true);
    assert.equal(await reviewer.page.getByRole('dialog').count(), 0, 'no token prompt');
    assert.equal(await reviewer.page.locator('#banner').isHidden(), true, 'no banner');
    assert.equal(await reviewer.page.locator('#connection').getAttribute('data-state'), 'live');
    log('a reviewer sees nothing of it');

    // An admin on the same server does.
    const admin = await open(context, AUTH, { refresh: REFRESH, pageErrors });
    await admin.page.goto(AUTH);
    await enterToken(admin.page, ADMIN);
    await live(admin.page);
    await controlReads(admin.page, 'Webhooks: all delivered');
    log('an admin sees it');
  } finally {
    await context.close();
  }
  assert.deepEqual(pageErrors, [], 'no script errors in the page');
  console.log(JSON.stringify({ done: true }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
