// What every browser script here shares: its configuration from the environment, the
// agent's side over plain HTTP, and the waits on what the page shows.

import assert from 'node:assert/strict';

/** How long any wait on the page or the server may take before the script fails. */
export const WAIT = 10_000;

/** The environment variable `name`, which the Rust side must have set. */
export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
}

/** A log function whose lines (on stderr, which the Rust side shows) start with `[tag]`. */
export const logger =
  (tag) =>
  (...parts) =>
    console.error(`[${tag}]`, ...parts);

/**
 * POSTs `body` as JSON to `base` + `path` (with `token` as a bearer token, if any), as
 * another process would; asserts a 200 and answers the parsed JSON.
 */
export async function post(base, path, body, { token } = {}) {
  const response = await fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(token ? { Authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await response.text();
  assert.equal(response.status, 200, text);
  return JSON.parse(text);
}

/** A yes/no question, as the agents of these scripts ask. */
export const yesNo = (text, header) => ({
  question: text,
  header,
  options: [
    { label: 'Yes', description: 'go ahead' },
    { label: 'No', description: 'not now' },
  ],
});

/** The card of request `id` on `page`. */
export const card = (page, id) => page.locator(`article.card[data-id="${id}"]`);

/** Waits until `scope` shows `text` in an element `selector` selects. */
export const reads = (scope, selector, text) => scope.locator(selector, { hasText: text }).waitFor({ timeout: WAIT });

/** Waits until the page's event stream is connected. */
export const live = (page) => page.locator('#connection[data-state="live"]').waitFor({ timeout: WAIT });

/** Makes the tab hidden or visible, as the page's test hook (`window.askbusTest`) sees it. */
export const setHidden = (page, hidden) =>
  page.evaluate((hidden) => {
    window.askbusTest.hidden = hidden;
    document.dispatchEvent(new Event('visibilitychange'));
  }, hidden);
