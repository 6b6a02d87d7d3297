// Desktop notifications and the title's count, in Debian's chromium, for a tab that is hidden.
//
// Run by tests/ui.rs (`the_web_ui_notifies_of_requests_while_hidden`), which serves askbus
// without tokens. The requests are asked over HTTP from here, as an agent in another
// process asks them, at the moments the scenario needs them:
//   - a question pending before the page loads raises no notification, and the page asks
//     for no permission on load;
//   - "Notify me", pressed from the keyboard, asks for the permission (granted to this
//     origin beforehand) and reads "Notifications on", the choice kept in localStorage;
//   - a question arriving while the tab is shown raises none;
//   - hidden: a question (whose text has a right-to-left override, a newline and more than
//     120 characters) and an approval each raise one, tagged with their ids, the text on
//     one line, cut and marked; the title reads "(2 new) askbus"; the approval, decided
//     over HTTP, closes its notification and the title reads "(1 new) askbus";
//   - a question asked while the page is offline arrives when the stream resumes with
//     `Last-Event-ID`: the replay counts in the title but raises no notification;
//   - clicking a notification focuses the window and the card of its question;
//   - shown again: the title is the pending count, every notification closed;
//   - after a reload, notifications are still on without asking again; turned off, a
//     hidden arrival still counts in the title but raises none;
//   - shown, a question's card reads "reminded · escalated to local" after its
//     `question.reminded` and `question.escalated`, an approval's "reminded", and a
//     decided card shows no follow-up.
// Headless chromium shows no notifications, and its tab is never hidden: an init script
// (run before the page's own) wraps `window.Notification` to record what the page's real
// code constructs, counts `requestPermission()` and `window.focus()` calls, can cut the
// event stream (`dropStream`), and answers
// `document.hidden` / `visibilityState` from a flag that `setHidden` flips before
// dispatching `visibilitychange`, which is what the page listens to. (Opening another tab
// over it does not make a headless page hidden.)
// stdout: one line, {"done": true}; the test checks the decided approval on the server.
// Environment: ASKBUS_UI_NOTIFY_URL, ASKBUS_UI_CHROMIUM.

import assert from 'node:assert/strict';
import { launch } from './chromium.mjs';
import { WAIT, card, live, logger, post as postTo, setHidden, yesNo } from './support.mjs';

const BASE = process.env.ASKBUS_UI_NOTIFY_URL;
if (!BASE) throw new Error('ASKBUS_UI_NOTIFY_URL is not set');
const SESSION = 'ui-notify';
const log = logger('ui notify');

/** POSTs `body` to `path` of the server, as another process would; the answer. */
const post = (path, body) => postTo(BASE, path, body);

/** The agent asks one yes/no question; the created request. */
const ask = (text, header) => post('/question', { sessionID: SESSION, questions: [yesNo(text, header)] });

/** Installed before the page's scripts: see the head of this file. */
function instrument() {
  const test = { hidden: false, notifications: [], permissionRequests: 0, focused: 0 };
  window.askbusTest = test;
  Object.defineProperty(Document.prototype, 'hidden', { configurable: true, get: () => test.hidden });
  Object.defineProperty(Document.prototype, 'visibilityState', {
    configurable: true,
    get: () => (test.hidden ? 'hidden' : 'visible'),
  });
  const Real = window.Notification;
  window.Notification = class extends Real {
    constructor(title, options = {}) {
      super(title, options);
      this.record = { title, body: options.body, tag: options.tag, closed: false };
      test.notifications.push(this);
    }

    close() {
      this.record.closed = true;
      super.close();
    }

    static requestPermission() {
      test.permissionRequests += 1;
      return Real.requestPermission();
    }
  };
  // `dropStream()` cuts the page's event stream, as a lost network does (playwright's
  // offline mode fails new requests only, not a stream already open).
  const fetch = window.fetch.bind(window);
  const streams = [];
  test.dropStream = () => streams.forEach((stream) => stream.abort());
  window.fetch = (input, init = {}) => {
    if (input !== '/event') return fetch(input, init);
    const stream = new AbortController();
    init.signal?.addEventListener('abort', () => stream.abort());
    streams.push(stream);
    return fetch(input, { ...init, signal: stream.signal });
  };
  const focus = window.focus.bind(window);
  window.focus = () => {
    test.focused += 1;
    focus();
  };
}

/** What the page recorded: notifications (`{title, body, tag, closed}`) and calls. */
const recorded = (page) =>
  page.evaluate(() => ({
    notifications: window.askbusTest.notifications.map((notification) => notification.record),
    permissionRequests: window.askbusTest.permissionRequests,
    focused: window.askbusTest.focused,
  }));

/** Hides or shows the tab, as far as the page can tell. */

const titled = (page, title) => page.waitForFunction((title) => document.title === title, title, { timeout: WAIT });

async function main() {
  const pageErrors = [];
  const context = await launch();
  try {
    await context.grantPermissions(['notifications'], { origin: BASE });
    await context.addInitScript(instrument);
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.stack || error}`));

    // Pending on load: listed, no notification, no permission asked.
    const waiting = await ask('Deploy the release now?', 'Deploy');
    await page.goto(BASE);
    await live(page);
    await card(page, waiting.id).waitFor({ timeout: WAIT });
    assert.deepEqual(await recorded(page), { notifications: [], permissionRequests: 0, focused: 0 });

    // Opting in from the keyboard.
    await page.getByRole('button', { name: 'Notify me' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('button', { name: 'Notifications on' }).waitFor({ timeout: WAIT });
    assert.equal((await recorded(page)).permissionRequests, 1);
    assert.equal(await page.evaluate(() => localStorage.getItem('askbus.notifications')), 'on');
    log('opted in');

    // Shown: nothing to notify of (the notification would follow its card at once).
    const shown = await ask('Rotate the keys?', 'Keys');
    await card(page, shown.id).waitFor({ timeout: WAIT });
    assert.deepEqual((await recorded(page)).notifications, []);
    await titled(page, '(2) askbus');

    // Hidden: one notification per arrival, its text plain, on one line, cut and marked.
    await setHidden(page, true);
    const text = `Publish the report\u202etxt.exe\nnow? ${'x'.repeat(200)}`;
    const hidden = await ask(text, 'Report');
    const approval = await post('/approval', {
      session_id: SESSION,
      action_requests: [{ name: 'delete_rows', args: { table: 'users' } }],
    });
    await card(page, approval.id).waitFor({ timeout: WAIT });
    await titled(page, '(2 new) askbus');
    let { notifications } = await recorded(page);
    assert.equal(notifications.length, 2, JSON.stringify(notifications));
    const [question, deletion] = notifications;
    assert.deepEqual(
      { ...question, body: undefined },
      { title: 'Question from local', body: undefined, tag: hidden.id, closed: false },
    );
    assert.ok(question.body.startsWith('Report: Publish the report⟨U+202E⟩txt.exe now? xxx'), question.body);
    assert.ok(question.body.endsWith('x…'), question.body);
    // 120 characters, the marker standing for one.
    assert.equal([...question.body].length, 120 + '⟨U+202E⟩'.length - 1, question.body);
    assert.deepEqual(deletion, { title: 'Approval from local', body: 'delete_rows', tag: approval.id, closed: false });
    log('hidden arrivals notify');

    // Decided elsewhere while hidden: its notification goes, the count drops.
    await post(`/approval/${approval.id}/reply`, { decisions: [{ type: 'approve' }] });
    await titled(page, '(1 new) askbus');
    ({ notifications } = await recorded(page));
    assert.equal(notifications[1].closed, true, 'the decided approval closed its notification');
    assert.equal(notifications[0].closed, false);

    // Asked while the page is offline: replayed when the stream resumes, not notified.
    await context.setOffline(true);
    await page.evaluate(() => window.askbusTest.dropStream());
    await page.locator('#connection[data-state="offline"]').waitFor({ timeout: WAIT });
    const replayed = await ask('Asked while you were away?', 'Away');
    await context.setOffline(false);
    await live(page);
    await card(page, replayed.id).waitFor({ timeout: WAIT });
    await titled(page, '(2 new) askbus');
    assert.equal((await recorded(page)).notifications.length, 2, 'a replay raises no notification');
    log('a replay counts but does not notify');

    // Clicking a notification: the window, then the card.
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    await page.evaluate((id) => window.askbusTest.notifications.find((n) => n.record.tag === id).onclick(), hidden.id);
    assert.equal((await recorded(page)).focused, 1);
    assert.equal(await card(page, hidden.id).evaluate((element) => element.contains(document.activeElement)), true);
    const inView = await card(page, hidden.id).evaluate((element) => {
      const box = element.getBoundingClientRect();
      return box.top < window.innerHeight && box.bottom > 0;
    });
    assert.equal(inView, true, 'the card is scrolled into view');
    log('a click shows the card');

    // Shown again: the pending count, every notification closed.
    await setHidden(page, false);
    await titled(page, '(4) askbus');
    assert.ok((await recorded(page)).notifications.every((notification) => notification.closed));

    // The choice outlives the page; turned off, only the title counts.
    await page.reload();
    await live(page);
    await page.getByRole('button', { name: 'Notifications on' }).click();
    await page.getByRole('button', { name: 'Notify me' }).waitFor({ timeout: WAIT });
    assert.equal(await page.evaluate(() => localStorage.getItem('askbus.notifications')), 'off');
    await setHidden(page, true);
    const unnoticed = await ask('Anyone there?', 'Quiet');
    await card(page, unnoticed.id).waitFor({ timeout: WAIT });
    await titled(page, '(1 new) askbus');
    assert.deepEqual(await recorded(page), { notifications: [], permissionRequests: 0, focused: 0 });
    log('turned off, only the title counts');

    // Follow-ups of a pending request show on its card, and go once it is decided.
    await setHidden(page, false);
    const note = (id) => card(page, id).locator('.follow-up');
    const reads = (id, text) =>
      page.waitForFunction(
        ([id, text]) => document.querySelector(`article.card[data-id="${id}"] .follow-up`)?.textContent === text,
        [id, text],
        { timeout: WAIT },
      );
    const followed = await post('/question', {
      sessionID: SESSION,
      questions: [{ question: 'Still there?', header: 'Ping', options: [{ label: 'Yes', description: '' }] }],
      timeout: 60,
      remindAfter: 0.2,
      escalateAfter: 0.5,
      escalateTo: ['local'],
    });
    const reminded = await post('/approval', {
      session_id: SESSION,
      action_requests: [{ name: 'drop_table', args: { table: 'logs' } }],
      timeout: 60,
      remind_after: 0.2,
    });
    await reads(followed.id, 'reminded · escalated to local');
    assert.equal(await note(followed.id).getAttribute('data-step'), 'escalated');
    await reads(reminded.id, 'reminded');
    assert.equal(await note(reminded.id).isVisible(), true);
    await post(`/question/${followed.id}/reject`, {});
    await card(page, followed.id).locator('.status-line').waitFor({ timeout: WAIT });
    assert.equal(await note(followed.id).isHidden(), true, 'a decided card has no follow-up to show');
    await post(`/approval/${reminded.id}/reply`, { decisions: [{ type: 'reject' }] });
    await card(page, reminded.id).locator('.status-line').waitFor({ timeout: WAIT });
    assert.equal(await note(reminded.id).isHidden(), true);
    log('reminders and escalations show on the card');
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
