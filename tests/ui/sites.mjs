// Pages of other sites against a real askbus on loopback, in Debian's chromium.
//
// Run by crates/askbus/tests/browser_sites.rs, which starts the `askbus` binary with a
// pending question and approval in session `demo`, then checks after this script that
// nothing was answered, approved or cancelled. Chromium maps the names `attacker.example`
// and `rebind.example` to 127.0.0.1 (--host-resolver-rules), as a DNS-rebinding attacker's
// resolver would.
//
//   - rebinding: a page whose document came from the attacker, at http://rebind.example:PORT
//     (PORT is askbus's), whose name now points at 127.0.0.1: its same-origin fetches reach
//     askbus naming Host `rebind.example:PORT`, and must all be refused with 421;
//   - cross-site: a page of http://attacker.example:OTHER sends what a browser delivers
//     to any site without asking (a bodyless no-cors POST, a text/plain one, a form POST,
//     an EventSource, a fetch): none may change anything, or read;
//   - own page: the web UI's origin, http://127.0.0.1:PORT, still lists the pending
//     requests and answers the question (same-origin);
//   - payloads: with the CSP bypassed (so escaping alone must hold), the web UI shows the
//     pending requests and the timeline of session ASKBUS_PAYLOAD_SESSION, whose every
//     field the agent filled with markup: all of it shows as text, and nothing runs.
//
// stdout carries one JSON object per line with a `stage`; the last is {"stage": "done"}.
// Environment: ASKBUS_URL (http://127.0.0.1:PORT), ASKBUS_QUESTION, ASKBUS_APPROVAL (ids),
// ASKBUS_PAYLOAD_SESSION, ASKBUS_PAYLOAD (the markup it holds), ASKBUS_UI_CHROMIUM.

import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { launch } from './chromium.mjs';
import { env } from './support.mjs';

const ASKBUS = new URL(env('ASKBUS_URL'));
const QUESTION = env('ASKBUS_QUESTION');
const APPROVAL = env('ASKBUS_APPROVAL');
const PAYLOAD_SESSION = env('ASKBUS_PAYLOAD_SESSION');
const PAYLOAD = env('ASKBUS_PAYLOAD');
const stage = (name, data = {}) => console.log(JSON.stringify({ stage: name, ...data }));

// The attacker's own server: a page that fires every request a browser sends anywhere.
const ATTACK_PAGE = `<!doctype html><title>attacker</title>
<form id="form" method="post" target="sink" action="${ASKBUS.origin}/session/demo/cancel">
  <input name="confirm" value="yes">
</form>
<iframe name="sink"></iframe>
<script>
  window.attack = async (askbus, approval) => {
    const sent = [];
    const attempt = async (name, run) => {
      try { sent.push([name, await run()]); } catch (error) { sent.push([name, 'error: ' + error.message]); }
    };
    await attempt('bodyless no-cors cancel', async () =>
      (await fetch(askbus + '/session/demo/cancel', { method: 'POST', mode: 'no-cors' })).type);
    await attempt('text/plain approve', async () =>
      (await fetch(askbus + '/approval/' + approval + '/reply', {
        method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ decisions: [{ type: 'approve' }] }),
      })).type);
    await attempt('read the list', async () => (await fetch(askbus + '/question')).status);
    await attempt('event stream', () => new Promise((resolve) => {
      const events = new EventSource(askbus + '/event');
      events.onopen = () => { events.close(); resolve('open'); };
      events.onerror = () => { events.close(); resolve('refused'); };
    }));
    await attempt('form post', () => new Promise((resolve) => {
      document.querySelector('iframe').addEventListener('load', () => resolve('submitted'), { once: true });
      document.getElementById('form').submit();
    }));
    return sent;
  };
</script>`;

async function main() {
  const attacker = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(ATTACK_PAGE);
  });
  await new Promise((resolve) => attacker.listen(0, '127.0.0.1', resolve));
  const attackerOrigin = `http://attacker.example:${attacker.address().port}`;
  const rebindOrigin = `http://rebind.example:${ASKBUS.port}`;

  const context = await launch({
    args: [
      '--host-resolver-rules=MAP attacker.example 127.0.0.1, MAP rebind.example 127.0.0.1',
      // Chromium's own Local Network Access checks stop a public page's requests to
      // loopback before they leave; other browsers have no such checks, so they are off
      // here, to test askbus's own defence.
      '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights,PrivateNetworkAccessRespectPreflightResults',
    ],
  });
  context.setDefaultTimeout(10_000);
  try {
    // DNS rebinding: the document came from the attacker (served here by routing it), then
    // the name pointed at 127.0.0.1, where askbus listens.
    const rebound = await context.newPage();
    await rebound.route(`${rebindOrigin}/attacker.html`, (route) =>
      route.fulfill({ status: 200, contentType: 'text/html', body: '<!doctype html><title>rebound</title>' }));
    await rebound.goto(`${rebindOrigin}/attacker.html`);
    const rebinding = await rebound.evaluate(async ({ question, approval }) => {
      const json = { 'content-type': 'application/json' };
      const tries = [
        ['GET', '/question', undefined],
        ['GET', '/', undefined],
        ['POST', `/approval/${approval}/reply`, JSON.stringify({ decisions: [{ type: 'approve' }] })],
        ['POST', `/question/${question}/reply`, JSON.stringify({ answers: [['eu']] })],
        ['POST', '/session/demo/cancel', undefined],
      ];
      const seen = [];
      for (const [method, path, body] of tries) {
        const response = await fetch(path, { method, headers: body ? json : {}, body });
        const text = await response.text();
        let code = null;
        try { code = JSON.parse(text).code; } catch { /* not JSON */ }
        seen.push({ method, path, status: response.status, code });
      }
      return seen;
    }, { question: QUESTION, approval: APPROVAL });
    for (const attempt of rebinding) {
      assert.equal(attempt.status, 421, JSON.stringify(attempt));
      assert.equal(attempt.code, 'misdirected_request', JSON.stringify(attempt));
    }
    stage('rebinding', { refused: rebinding.length });

    // A page of another site, sending what browsers send anywhere without a preflight.
    const page = await context.newPage();
    await page.goto(`${attackerOrigin}/`);
    const sent = await page.evaluate(({ askbus, approval }) => window.attack(askbus, approval), {
      askbus: ASKBUS.origin,
      approval: APPROVAL,
    });
    const outcome = Object.fromEntries(sent);
    assert.equal(outcome['event stream'], 'refused', JSON.stringify(outcome));
    assert.ok(String(outcome['read the list']).startsWith('error'), JSON.stringify(outcome));
    stage('cross_site', { sent: outcome });

    // The server's own page still works: it lists the pending requests and may answer.
    const own = await context.newPage();
    await own.goto(`${ASKBUS.origin}/`);
    const listed = await own.evaluate(async () => (await (await fetch('/question')).json()).map((request) => request.id));
    assert.ok(listed.includes(QUESTION), JSON.stringify(listed));
    const answered = await own.evaluate(async (id) => (await fetch(`/question/${id}/reply`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ answers: [['eu']] }),
    })).status, QUESTION);
    assert.equal(answered, 200);
    stage('own_page', { listed, answered });
  } finally {
    await context.close();
    attacker.close();
  }

  // Markup in every field, with the CSP out of the way: escaping alone must hold.
  const bypassing = await launch({ bypassCSP: true });
  bypassing.setDefaultTimeout(10_000);
  try {
    const page = await bypassing.newPage();
    const dialogs = [];
    page.on('dialog', (dialog) => { dialogs.push(dialog.message()); dialog.dismiss(); });
    await page.goto(`${ASKBUS.origin}/?session=${encodeURIComponent(PAYLOAD_SESSION)}`);
    // The timeline's last step, and the approval card, are on screen.
    await page.getByText('payload-end', { exact: false }).first().waitFor();
    await page.waitForTimeout(500);
    const seen = await page.evaluate(() => ({
      pwned: window.__pwned ?? null,
      injected: document.querySelectorAll('[data-pwn], svg[onload], img[onerror]').length,
      text: document.body.innerText,
    }));
    assert.equal(seen.pwned, null, 'a payload ran');
    assert.equal(seen.injected, 0, 'a payload became markup');
    assert.deepEqual(dialogs, [], 'a payload opened a dialog');
    const shown = seen.text.split(PAYLOAD).length - 1;
    assert.ok(shown >= 5, `the payload shows as text (${shown} times)`);
    stage('payloads', { shown });
  } finally {
    await bypassing.close();
  }
  stage('done');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
