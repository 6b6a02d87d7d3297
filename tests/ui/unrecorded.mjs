// Answers the server's store refused to record, in Debian's chromium.
//
// Run by tests/ui.rs (`the_web_ui_says_when_the_store_refused_an_answer`), which asks a
// question, an approval and a second question in process on a hub whose store fails to
// commit every outcome (a full disk), serves it without tokens (the page) and with a
// reviewer's token (who minted an answer link to the second question):
//   - the page answers the question: the server answers 503 `store_unavailable`, and the
//     card reads "Not recorded", names nobody as having answered, and says the agent was
//     given nothing, although the stream told of the answer meanwhile;
//   - the page approves the approval: the same, for a decision;
//   - the link's page answers the second question: the notice and the card say the same,
//     never "Thank you".
//   - a second tab, which only watched, shows both cards as not recorded too once the
//     server publishes `question.not_recorded` / `approval.not_recorded`, though it saw
//     the outcomes' events first.
// stdout: one line, {"done": true}; the test checks that the agent got `NotRecorded` for
// each.
// Environment: ASKBUS_UI_UNRECORDED_URL, ASKBUS_UI_UNRECORDED_QUESTION,
// ASKBUS_UI_UNRECORDED_APPROVAL, ASKBUS_UI_UNRECORDED_LINK, ASKBUS_UI_CHROMIUM.

import assert from 'node:assert/strict';
import { launch } from './chromium.mjs';
import { card, env, live, logger, reads } from './support.mjs';

const BASE = env('ASKBUS_UI_UNRECORDED_URL');
const QUESTION = env('ASKBUS_UI_UNRECORDED_QUESTION');
const APPROVAL = env('ASKBUS_UI_UNRECORDED_APPROVAL');
const LINK = env('ASKBUS_UI_UNRECORDED_LINK');
const log = logger('ui unrecorded');

/** What a card whose answer the store refused must read, and must not. */
async function readsNotRecorded(scope, yours) {
  await reads(scope, '.status-line[data-status="unrecorded"]', 'Not recorded: the server could not store it, and the agent was not given it');
  await reads(scope, '.note', `The server could not record ${yours}: its store failed, so nothing was decided and the agent was given nothing.`);
  const text = await scope.innerText();
  for (const claim of ['You answered', 'You sent your decision', 'answered by', 'decided by']) {
    assert.ok(!text.includes(claim), `the card claims "${claim}": ${text}`);
  }
}

/** What a card another tab answered, and the store refused, must read, and must not. */
async function readsNotRecordedElsewhere(scope, kind) {
  await reads(scope, '.status-line[data-status="unrecorded"]', 'Not recorded: the server could not store it, and the agent was not given it');
  await reads(scope, '.note', `The outcome of ${kind} in session ui-unrecorded was not recorded: the server could not store it, and the agent was not given it.`);
  const text = await scope.innerText();
  for (const claim of ['answered by', 'decided by', 'Approved', 'You answered']) {
    assert.ok(!text.includes(claim), `the watching tab's card claims "${claim}": ${text}`);
  }
}

async function main() {
  const pageErrors = [];
  const context = await launch({ locale: 'en-US' });
  try {
    const page = await context.newPage();
    page.on('pageerror', (error) => pageErrors.push(`${page.url()}: ${error.stack || error}`));
    await page.goto(BASE);
    await live(page);
    // Another tab that only watches: it hears of the outcomes on its stream, then that the
    // store refused them.
    const watching = await context.newPage();
    watching.on('pageerror', (error) => pageErrors.push(`watching: ${error.stack || error}`));
    await watching.goto(BASE);
    await live(watching);

    const question = card(page, QUESTION);
    await question.getByRole('radio', { name: /Yes/ }).check();
    await question.getByRole('button', { name: 'Submit answer' }).click();
    await readsNotRecorded(question, 'your reply');
    log('the question card says its answer was not recorded');

    const approval = card(page, APPROVAL);
    await approval.getByRole('button', { name: 'Approve: deploy' }).click();
    await readsNotRecorded(approval, 'your decision');
    log('the approval card says its decision was not recorded');
    // By now the stream told of both outcomes: neither card took them for answers.
    await readsNotRecorded(question, 'your reply');
    await readsNotRecordedElsewhere(card(watching, QUESTION), 'a question');
    await readsNotRecordedElsewhere(card(watching, APPROVAL), 'an approval');
    log('the watching tab says neither outcome was recorded');

    await page.goto(LINK);
    await reads(page, '#acts-as', 'You are answering as alice (reviewer)');
    const linked = page.locator('article.card.question');
    await linked.getByRole('radio', { name: /Yes/ }).check();
    await linked.getByRole('button', { name: 'Submit answer' }).click();
    await reads(page, '#notice[data-state="error"]', 'The server could not record your answer');
    await readsNotRecorded(linked, 'your answer');
    assert.ok(!(await page.locator('#notice').innerText()).includes('Thank you'));
    log('the link page says its answer was not recorded');

    assert.deepEqual(pageErrors, [], 'no page errors');
  } finally {
    await context.close();
  }
  console.log(JSON.stringify({ done: true }));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
