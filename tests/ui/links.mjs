// Single-use answer links, in Debian's chromium: a reviewer answers without a token.
//
// Run by tests/ui.rs (`answer_links_answer_without_a_token`), which serves askbus with an
// agent, a reviewer (alice) and an admin token, asks a question and an approval as the
// agent, mints an answer link for each with alice's token, and passes their paths here.
// The browser holds no token at all; as a human would:
//   - opens the question link: the page says it answers as alice (reviewer) and until
//     when; answers "Yes": "Thank you", the card resolved and "answered by alice";
//   - opens the same link again: the question was already answered, by alice;
//   - opens the approval link and approves: "Thank you", "decided by alice";
//   - opens the link to an approval two reviewers must agree on and approves: the vote is
//     recorded, the card waits for 1 more reviewer; opened again, it still waits, its
//     buttons disabled (the test's bob then decides it over HTTP);
//   - opens the link to an approval that names bob alone and approves: the server refuses
//     (403), and the card says so in the server's words;
//   - opens the question link with one character of its signature changed: the page says
//     the link is not valid, and shows no card.
// No request of the page carries an Authorization header.
// stdout: one line, {"done": true}; the test checks the outcomes on the server.
// Environment: ASKBUS_UI_LINKS_URL, ASKBUS_UI_QUESTION_LINK, ASKBUS_UI_APPROVAL_LINK,
// ASKBUS_UI_QUORUM_LINK, ASKBUS_UI_NAMED_LINK (paths `/answer/<token>`), ASKBUS_UI_CHROMIUM.

import assert from 'node:assert/strict';
import { launch } from './chromium.mjs';
import { env, logger, reads } from './support.mjs';

const BASE = env('ASKBUS_UI_LINKS_URL');
const QUESTION_LINK = env('ASKBUS_UI_QUESTION_LINK');
const APPROVAL_LINK = env('ASKBUS_UI_APPROVAL_LINK');
const QUORUM_LINK = env('ASKBUS_UI_QUORUM_LINK');
const NAMED_LINK = env('ASKBUS_UI_NAMED_LINK');
const log = logger('ui links');

/**
 * `path` with one character of its signature changed: the character four from the end (a
 * signature's last character may carry only padding bits, which a lenient decoder ignores).
 */
function forged(path) {
  const at = path.length - 4;
  const changed = path[at] === 'A' ? 'B' : 'A';
  return `${path.slice(0, at)}${changed}${path.slice(at + 1)}`;
}


async function main() {
  const pageErrors = [];
  const withToken = [];
  const context = await launch();
  try {
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.stack || error}`));
    page.on('request', (request) => {
      if (request.headers().authorization !== undefined) withToken.push(request.url());
    });

    // The question link: who the page answers as, until when; the answer goes through.
    await page.goto(`${BASE}${QUESTION_LINK}`);
    await reads(page, '#acts-as', 'You are answering as alice (reviewer)');
    await reads(page, '#link-expiry', /^This link expires in \d+:\d\d/);
    const question = page.locator('article.card.question');
    await reads(question, '.asked-by', 'asked by agent-1 (agent)');
    await question.getByRole('radio', { name: /Yes/ }).check();
    await question.getByRole('button', { name: 'Submit answer' }).click();
    await reads(page, '#notice[data-state="sent"]', 'Thank you: your answer was sent.');
    await reads(question, '.status-line', 'You answered');
    await reads(question, '.answered-by', 'answered by alice (reviewer)');
    log('the question link answers as alice');

    // The same link again: answered already, by alice; nothing to send.
    await page.reload();
    await reads(page, '#notice[data-state="resolved"]', 'This question was already answered');
    await reads(question, '.answered-by', 'answered by alice (reviewer)');
    assert.equal(await question.locator('form').isHidden(), true, 'an answered question has no form');
    log('the used link shows who answered');

    // The approval link.
    await page.goto(`${BASE}${APPROVAL_LINK}`);
    await reads(page, '#acts-as', 'You are answering as alice (reviewer)');
    const approval = page.locator('article.card.approval');
    await approval.getByRole('button', { name: 'Approve: deploy' }).click();
    await reads(page, '#notice[data-state="sent"]', 'Thank you: your decision was sent.');
    await reads(approval, '.answered-by', 'decided by alice (reviewer)');
    log('the approval link approves as alice');

    // Two reviewers must agree: alice's vote through her link leaves the request waiting.
    await page.goto(`${BASE}${QUORUM_LINK}`);
    const quorum = page.locator('article.card.approval');
    await reads(quorum, '.quorum-line', 'Needs 2 reviewers to agree · none so far');
    const approve = quorum.getByRole('button', { name: 'Approve: deploy' });
    await approve.click();
    await reads(page, '#notice[data-state="sent"]', 'Thank you: your decision was sent.');
    await reads(quorum, '.quorum-wait', 'Your decision is recorded; waiting for 1 more reviewer.');
    await reads(quorum, '.quorum-line', '1 so far: alice approved');
    assert.equal(await quorum.locator('.resolution').isHidden(), true, 'one vote does not end it');
    await page.reload();
    await reads(page, '#notice[data-state="sent"]', 'Your decision is recorded: this request waits for more reviewers.');
    await reads(quorum, '.quorum-wait', 'waiting for 1 more reviewer');
    assert.equal(await approve.isDisabled(), true, 'a link that voted votes no more');
    log('a vote through a link waits for the quorum');

    // A request that names another reviewer: the server's refusal, in its words.
    await page.goto(`${BASE}${NAMED_LINK}`);
    const named = page.locator('article.card.approval');
    await named.getByRole('button', { name: 'Approve: deploy' }).click();
    await reads(
      named,
      '.card-error',
      'This link may not do that: alice (reviewer) is not one of the reviewers this request names',
    );
    log('a refusal shows the server’s message');

    // A forged link: not valid, and nothing of any request shown.
    await page.goto(`${BASE}${forged(QUESTION_LINK)}`);
    await reads(page, '#notice[data-state="invalid"]', 'This link is not valid');
    assert.equal(await page.locator('article.card').count(), 0, 'a forged link shows no card');
    assert.equal(await page.locator('#link-info').isHidden(), true, 'a forged link acts as nobody');
    log('a forged link is not valid');
  } finally {
    await context.close();
  }
  assert.deepEqual(pageErrors, [], 'no script errors in the page');
  assert.deepEqual(withToken, [], 'no request of the page carries a token');
  console.log(JSON.stringify({ done: true }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
