// Who asked and who answered, in Debian's chromium, on a server with roles.
//
// Run by tests/ui.rs (`the_web_ui_names_who_asked_and_who_answered`), which serves askbus
// with an agent token (agent-1), a second agent's (named with a right-to-left override), a
// reviewer's (alice) and an admin's, never the asker deciding. The agents ask over HTTP with
// their tokens, as agents in other processes do; then, as a human would:
//   - a tab given the reviewer token (the watcher) shows each card "asked by" its agent,
//     the hidden character of the second agent's name marked;
//   - a tab given agent-1's token tries to answer: the server refuses (403), and the page
//     asks for a reviewer token, saying why; given the reviewer's, the same answer goes
//     through, and the card reads "answered by alice (reviewer)";
//   - the watcher's card reads "Answered elsewhere" and "answered by alice (reviewer)", and
//     its session timeline "answered by alice" (live from the stream, then from the
//     history after a reload); the watcher declines the second question: "declined by".
//   - approvals that need two reviewers to agree (`quorum: 2`), alice on the page and bob
//     over HTTP: alice's approval leaves the card pending, "1 so far: alice approved",
//     "waiting for 1 more reviewer", its buttons disabled; bob's ends it, the card listing
//     both votes and "decided by bob". Alice's reject vetoes another at once. On a third,
//     alice's vote over HTTP shows on the page (live, then from the server after a reload),
//     and her second vote from the page is refused (403) with the server's words.
//   - alice answers a shell call `always` over HTTP (OpenCode's `permission.reply`): the
//     card reads what is now always allowed; the same call again is approved by the grant,
//     its card reading "Approved by a standing grant" and "granted by alice (reviewer)".
// stdout: one line, {"done": {"answered": id, "declined": id, "quorum": id, "vetoed": id,
// "twice": id, "always": id, "granted": id}}; the test checks the server.
// Environment: ASKBUS_UI_ROLES_URL, ASKBUS_UI_AGENT_TOKEN, ASKBUS_UI_AGENT2_TOKEN,
// ASKBUS_UI_REVIEWER_TOKEN, ASKBUS_UI_REVIEWER2_TOKEN, ASKBUS_UI_CHROMIUM.

import assert from 'node:assert/strict';
import { launch } from './chromium.mjs';
import { WAIT, card, env, live, logger, post as postTo, reads, yesNo } from './support.mjs';

const BASE = env('ASKBUS_UI_ROLES_URL');
const AGENT = env('ASKBUS_UI_AGENT_TOKEN');
const AGENT2 = env('ASKBUS_UI_AGENT2_TOKEN');
const REVIEWER = env('ASKBUS_UI_REVIEWER_TOKEN');
const REVIEWER2 = env('ASKBUS_UI_REVIEWER2_TOKEN');
const SESSION = 'ui-roles';
const AGENT_PROMPT = 'This token belongs to an agent; agents cannot answer. Enter a reviewer token.';
const log = logger('ui roles');

/** POSTs `body` to `path` over HTTP with `token`, as another process would; the answer. */
const post = (token, path, body) => postTo(BASE, path, body, { token });

/** An agent asks one yes/no question over HTTP with its `token`; the created request. */
const ask = (token, text, header) => post(token, '/question', { sessionID: SESSION, questions: [yesNo(text, header)] });

/** agent-1 asks to run `delete_rows` once two reviewers agree (of `reviewers`, if named). */
function askQuorum(table, reviewers) {
  return post(AGENT, '/approval', {
    session_id: SESSION,
    action_requests: [{ name: 'delete_rows', args: { table }, description: `Delete every row of ${table}` }],
    review_configs: [{ action_name: 'delete_rows', quorum: 2, ...(reviewers ? { reviewers } : {}) }],
  });
}

/** A reviewer (`token`) approves approval `id` over HTTP. */
const approveOverHttp = (token, id) =>
  post(token, `/approval/${encodeURIComponent(id)}/reply`, { decisions: [{ type: 'approve' }] });

/** A tab on the session, given `token` through the token dialog, as a human gives it. */
async function openWith(context, token, pageErrors) {
  const page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.stack || error}`));
  await page.goto(`${BASE}/?session=${SESSION}`);
  const dialog = page.getByRole('dialog', { name: 'Access token needed' });
  await dialog.waitFor({ timeout: WAIT });
  await dialog.getByLabel('Access token').fill(token);
  await dialog.getByRole('button', { name: 'Use token' }).click();
  await live(page);
  return page;
}

async function main() {
  const first = await ask(AGENT, 'Deploy the release now?', 'Deploy');
  assert.deepEqual(first.askedBy, { name: 'agent-1', role: 'agent' });
  const second = await ask(AGENT2, 'Rotate the keys?', 'Keys');

  const pageErrors = [];
  /** The approvals asked below, for the test to check on the server. */
  const approvals = {};
  const context = await launch();
  try {
    // The reviewer's tab: who asked each card, the hidden character marked.
    const watcher = await openWith(context, REVIEWER, pageErrors);
    await reads(card(watcher, first.id), '.asked-by', 'asked by agent-1 (agent)');
    await reads(card(watcher, second.id), '.asked-by', 'asked by agent-2⟨U+202E⟩gpj.exe (agent)');
    log('cards name who asked');

    // The agent's token answers: refused, and the page asks for a reviewer's.
    const answerer = await openWith(context, AGENT, pageErrors);
    const form = card(answerer, first.id);
    await reads(form, '.asked-by', 'asked by agent-1 (agent)');
    await form.getByRole('radio', { name: /Yes/ }).check();
    await form.getByRole('button', { name: 'Submit answer' }).click();
    const dialog = answerer.getByRole('dialog', { name: 'Access token needed' });
    await dialog.waitFor({ timeout: WAIT });
    assert.equal(await dialog.locator('#token-error').innerText(), AGENT_PROMPT);
    await reads(form, '.card-error', AGENT_PROMPT);
    log('an agent token that answers is asked for a reviewer token');
    await dialog.getByLabel('Access token').fill(REVIEWER);
    await dialog.getByRole('button', { name: 'Use token' }).click();
    await form.getByRole('button', { name: 'Submit answer' }).click();
    await reads(form, '.status-line', 'You answered');
    await reads(form, '.answered-by', 'answered by alice (reviewer)');
    log('the answering tab names who answered');

    // The watcher: the card and the session timeline (live) name who answered.
    const watched = card(watcher, first.id);
    await reads(watched, '.status-line', 'Answered elsewhere');
    await reads(watched, '.answered-by', 'answered by alice (reviewer)');
    const timelineQuestion = (page, header) => page.locator('#timeline .tl-question', { hasText: header });
    await reads(timelineQuestion(watcher, 'Deploy'), '.answered-by', 'answered by alice');

    // The watcher declines the second question.
    const other = card(watcher, second.id);
    await other.getByRole('button', { name: /^Decline/ }).click();
    await other.getByRole('button', { name: 'Decline question' }).click();
    await reads(other, '.status-line', 'You declined this question');
    await reads(other, '.answered-by', 'declined by alice (reviewer)');
    await reads(timelineQuestion(watcher, 'Keys'), '.answered-by', 'declined by alice');

    // After a reload, the timeline comes from the history, and still names them.
    await watcher.reload();
    await watcher.locator('#timeline-status[data-state="live"]').waitFor({ timeout: WAIT });
    await reads(timelineQuestion(watcher, 'Deploy'), '.answered-by', 'answered by alice');
    await reads(timelineQuestion(watcher, 'Keys'), '.answered-by', 'declined by alice');
    log('the timeline names who answered, live and from the history');

    // Two reviewers must agree: alice (the page) approves first, bob (over HTTP) second.
    const quorum = await askQuorum('users', ['alice', 'bob']);
    approvals.quorum = quorum.id;
    const pending = card(watcher, quorum.id);
    await reads(pending, '.quorum-line', 'Needs 2 reviewers to agree · none so far');
    await reads(pending, '.reviewers', 'Reviewers: alice, bob');
    const approve = pending.getByRole('button', { name: 'Approve: delete_rows' });
    await approve.click();
    await reads(pending, '.quorum-wait', 'Your decision is recorded; waiting for 1 more reviewer.');
    await reads(pending, '.quorum-line', 'Needs 2 reviewers to agree · 1 so far: alice approved');
    assert.equal(await approve.isDisabled(), true, 'a recorded vote disables the buttons');
    assert.equal(await pending.locator('.resolution').isHidden(), true, 'one vote does not end it');
    log('one vote of two: the card waits for another reviewer');
    await approveOverHttp(REVIEWER2, quorum.id);
    await reads(pending, '.status-line', 'You sent your decision');
    await reads(pending, '.answered-by', 'decided by bob (reviewer)');
    await reads(pending, '.votes-line', 'Votes: alice approved; bob approved');
    assert.equal(await pending.locator('.quorum').isHidden(), true, 'a resolved card no longer waits');
    log('the second vote ends it, and the card lists both');

    // One reviewer's reject is a veto: it ends the request at once.
    const vetoed = await askQuorum('orders');
    approvals.vetoed = vetoed.id;
    const veto = card(watcher, vetoed.id);
    await reads(veto, '.quorum-line', 'none so far');
    assert.equal(await veto.locator('.reviewers').count(), 0, 'no reviewers named');
    await veto.getByRole('radio', { name: 'Reject' }).check();
    await veto.getByRole('button', { name: /^Send decision/ }).click();
    await reads(veto, '.status-line', 'You sent your decision');
    await reads(veto, '.answered-by', 'decided by alice (reviewer)');
    await reads(veto, '.votes-line', 'Votes: alice rejected');
    log('a reject vetoes at once');

    // Alice votes over HTTP: the page shows it live, and from the server after a reload;
    // her second vote from the page is refused with the server's words.
    const twice = await askQuorum('invoices');
    approvals.twice = twice.id;
    // A locator: it finds the card again after the reload.
    const repeat = card(watcher, twice.id);
    await reads(repeat, '.quorum-line', 'none so far');
    await approveOverHttp(REVIEWER, twice.id);
    await reads(repeat, '.quorum-line', '1 so far: alice approved');
    await watcher.reload();
    await reads(repeat, '.quorum-line', '1 so far: alice approved');
    await repeat.getByRole('button', { name: 'Approve: delete_rows' }).click();
    await reads(
      repeat,
      '.card-error',
      'Your access token does not allow this: alice (reviewer) has decided this request already: ' +
        'it needs the decisions of other reviewers',
    );
    log('a second vote of the same reviewer is refused with the server’s message');
    await approveOverHttp(REVIEWER2, twice.id);
    await reads(repeat, '.status-line', 'Decided elsewhere');
    await reads(repeat, '.votes-line', 'Votes: alice approved; bob approved');

    // Alice answers a call `always` (OpenCode's permission reply): the card says what is
    // granted; the same call again is approved by the grant, and its card says so and who
    // granted, never that a human decided it.
    const shell = () =>
      post(AGENT, '/approval', {
        session_id: SESSION,
        action_requests: [{ name: 'run_shell', args: { command: 'git status' } }],
      });
    const always = await shell();
    approvals.always = always.id;
    await card(watcher, always.id).waitFor({ timeout: WAIT });
    await post(REVIEWER, `/permission/${encodeURIComponent(always.id)}/reply`, { reply: 'always' });
    await reads(card(watcher, always.id), '.status-line', 'Decided elsewhere');
    await reads(card(watcher, always.id), '.grant-line', 'Always allowed from now on in this session: run_shell git status');
    const granted = await shell();
    approvals.granted = granted.id;
    const auto = card(watcher, granted.id);
    await reads(auto, '.status-line', 'Approved by a standing grant: nobody was asked');
    await reads(auto, '.granted-by', 'granted by alice (reviewer)');
    assert.equal(await auto.locator('.answered-by').count(), 0, 'no human decided it');
    log('an `always` grant, and a call it approved, each read as what they are');
  } finally {
    await context.close();
  }
  assert.deepEqual(pageErrors, [], 'no script errors in the page');
  console.log(JSON.stringify({ done: { answered: first.id, declined: second.id, ...approvals } }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
