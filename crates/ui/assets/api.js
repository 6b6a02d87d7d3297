// The JSON API client: bearer token, error shapes, and the server's clock.
//
// Every call sends `Authorization: Bearer <token>` when the human entered a token; the
// token lives in sessionStorage (this tab only, gone when it closes). An answer link's calls
// (`linkCall`) send none: the link is their authority. A 401 brings up the token prompt
// (`onUnauthorized`), except for a `quiet` read the page can do without. Failures are thrown as
// `ApiError` (the server answered with an error; `status`, `code`, `message` from its JSON
// body) or `NetworkError` (no answer at all), so views can say which happened.

const TOKEN_KEY = 'askbus.token';

/** The server answered with an error status. */
export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

/**
 * Whether `error` is the server saying it could not record a change (`503
 * store_unavailable`): after an answer, decision or decline, nothing was decided by it.
 * Whether the request ended with it all the same (unrecorded, so nobody may act on it) or
 * is pending still, a read of the request says (`outcomeNotRecorded`).
 */
export const notRecorded = (error) => error instanceof ApiError && error.status === 503 && error.code === 'store_unavailable';

/** Whether `error` is a read of a request whose outcome the store refused (`503 outcome_not_recorded`). */
export const outcomeNotRecorded = (error) =>
  error instanceof ApiError && error.status === 503 && error.code === 'outcome_not_recorded';

/** The server could not be reached (connection refused or dropped, offline). */
export class NetworkError extends Error {
  constructor(cause) {
    super('the server could not be reached');
    this.name = 'NetworkError';
    this.cause = cause;
  }
}

/** Called with the error whenever the server answers 401 (unless the call is `quiet`); set
 * by the app. */
let unauthorizedHandler = () => {};

/** Difference between the server's clock and ours, in ms, when it is large enough to matter. */
let clockOffset = 0;

export function onUnauthorized(handler) {
  unauthorizedHandler = handler;
}

export function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

export function setToken(value) {
  try {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage disabled: the token then lasts as long as nothing; the prompt comes back.
  }
}

/** Headers that authenticate a request, if a token is set. */
export function authHeaders() {
  const value = token();
  return value ? { Authorization: `Bearer ${value}` } : {};
}

/** The current time on the server's clock (ms since the epoch). */
export function serverNow() {
  return Date.now() + clockOffset;
}

/** Learns the server's clock from a response's `Date` header (second precision). */
export function noteServerDate(response) {
  const date = Date.parse(response.headers.get('Date') || '');
  if (Number.isNaN(date)) return;
  const offset = date - Date.now();
  // The header has one-second resolution: smaller differences are noise.
  clockOffset = Math.abs(offset) > 2000 ? offset : 0;
}

/**
 * Calls the API: `method` on `path` with an optional JSON `body`; resolves to the parsed
 * JSON answer. Throws `ApiError` or `NetworkError`.
 */
export async function call(method, path, body) {
  return (await exchange(method, path, body)).json;
}

/**
 * One page of a paged list (`GET /question?limit=…`): `{items, next}`, `next` being the
 * next page's cursor (the server's `x-next-cursor`), or `null` on the last page. `quiet`:
 * a 401 is thrown like any other error without bringing up the token prompt (for what the
 * page can do without, such as an admin's view a reviewer may not have).
 */
export async function getPage(path, { quiet = false } = {}) {
  const { json, headers } = await exchange('GET', path, undefined, { quiet });
  return { items: Array.isArray(json) ? json : [], next: headers.get('x-next-cursor') };
}

/**
 * `call` for the routes of an answer link (`/answer/{token}…`), without the tab's token: the
 * link acts as the identity it was minted for, and a token this tab holds from the main
 * page must not make the answer someone else's.
 */
export async function linkCall(method, path, body) {
  return (await exchange(method, path, body, { authenticated: false })).json;
}

/**
 * How request `current` ended, as a card's `resolve(outcome)` shows it, from the JSON of
 * `GET /question/{id}` (camelCase) or `GET /approval/{id}` (snake_case).
 */
export function outcomeOf(current) {
  return {
    status: current?.status ?? 'gone',
    answers: current?.answers,
    reason: current?.reason,
    decisions: current?.decisions,
    votes: current?.votes,
    answeredBy: current?.answeredBy ?? current?.answered_by,
    granted: current?.granted,
    autoApprovedBy: current?.auto_approved_by,
  };
}

/**
 * `call`, resolving to the parsed answer and the response's headers. `authenticated`: send
 * the tab's token; `quiet`: do not report a 401 to `onUnauthorized`'s handler.
 */
async function exchange(method, path, body, { authenticated = true, quiet = false } = {}) {
  const headers = { Accept: 'application/json', ...(authenticated ? authHeaders() : {}) };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
    });
  } catch (error) {
    throw new NetworkError(error);
  }
  noteServerDate(response);
  let text;
  try {
    text = await response.text();
  } catch (error) {
    throw new NetworkError(error);
  }
  let json;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!response.ok) {
    const error = new ApiError(
      response.status,
      json?.code ?? 'error',
      json?.message ?? (text || response.statusText),
      json,
    );
    if (response.status === 401 && !quiet) unauthorizedHandler(error);
    throw error;
  }
  return { json, headers: response.headers };
}

export const get = (path) => call('GET', path);
export const post = (path, body) => call('POST', path, body);
