// Server-sent event streams, read with fetch() instead of EventSource.
//
// A browser EventSource cannot send an Authorization header, so a stream is read from a
// fetch() body with the small parser below (the framing rules of the HTML standard's
// "server-sent events": fields `data`, `id`, `event`, `retry`; comments start with `:`;
// CRLF, LF or CR end a line; an empty line dispatches).
//
// Two streams use it: `/event` (askbus events, which start with `server.connected`) and a
// session's `/session/{id}/stream` (the seeds' frames, which start with whatever happens
// next, possibly nothing for a while). So a stream counts as live as soon as the server
// answers 200, not when a first frame arrives.
//
// `EventStreamClient` keeps one stream open:
// - it remembers the last `id:` it saw and reconnects with `Last-Event-ID`, so the server
//   replays exactly what was missed;
// - after a failure it waits with exponential backoff (0.5 s doubling to 15 s, with
//   jitter), reset once a connection has stayed up for a while;
// - a stream that has said nothing for longer than `silenceMs` (the server sends a
//   heartbeat every 10 s) is taken for dead and reopened;
// - a 401 stops it until `resume()` (the app asks the human for a token first);
// - a server that refuses the stream for a quota (503 `too_many_streams`, 429 `quota`)
//   is not asked again before its `Retry-After`: the error carries `busy` and its message.

/**
 * A push parser: feed it text chunks, it calls `onFrame({id, event, data})` for each
 * complete frame. `id` is the stream's last event id after the frame (it persists across
 * frames, as in EventSource), `undefined` if none was ever set.
 */
export function createParser(onFrame) {
  let buffer = '';
  let data = [];
  let event = '';
  let lastEventId;
  let sawData = false;

  const line = (text) => {
    if (text === '') {
      if (sawData) onFrame({ id: lastEventId, event: event || 'message', data: data.join('\n') });
      data = [];
      event = '';
      sawData = false;
      return;
    }
    if (text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      data.push(value);
      sawData = true;
    } else if (field === 'event') {
      event = value;
    } else if (field === 'id') {
      if (!value.includes('\0')) lastEventId = value;
    }
    // `retry` and unknown fields: ignored (reconnection timing is ours).
  };

  return (chunk) => {
    buffer += chunk;
    let start = 0;
    for (;;) {
      const cr = buffer.indexOf('\r', start);
      const lf = buffer.indexOf('\n', start);
      if (cr === -1 && lf === -1) break;
      if (cr !== -1 && (lf === -1 || cr < lf)) {
        // A CR at the very end may be the first half of CRLF: wait for the next chunk.
        if (cr === buffer.length - 1) break;
        line(buffer.slice(start, cr));
        start = buffer[cr + 1] === '\n' ? cr + 2 : cr + 1;
      } else {
        line(buffer.slice(start, lf));
        start = lf + 1;
      }
    }
    buffer = buffer.slice(start);
  };
}

const BACKOFF_MS = [500, 1000, 2000, 4000, 8000, 15000];

/**
 * The error for a stream the server refused for a quota: its message, `busy`, and how long
 * the server asked us to wait (`Retry-After`, seconds; 0 when it did not say).
 */
async function refusal(response) {
  let message = `the event stream answered ${response.status}`;
  try {
    message = (await response.json()).message || message;
  } catch {
    // Not JSON: keep the status.
  }
  const seconds = Number(response.headers.get('Retry-After'));
  const retryAfterMs = Number.isFinite(seconds) && seconds > 0 ? seconds * 1000 : 0;
  return Object.assign(new Error(message), { busy: true, retryAfterMs });
}

/** A connection that stayed up at least this long resets the backoff. */
const STABLE_MS = 5000;

export class EventStreamClient {
  /**
   * `url`: the stream's URL. `headers()`: extra request headers (auth), asked at each
   * connection. `cursor`: resume after this event id from the first connection on (a
   * history's `last_event_id`); absent: start fresh. Callbacks: `onConnected({resumed,
   * id})` for `server.connected` (only `/event` sends it); `onResync(properties)` for
   * `server.resync` (both optional); `onEvent(event)` for every other frame's parsed
   * JSON (heartbeats included); `onStatus(status, detail)` with `connecting`, `live` (the
   * server answered 200), `reconnecting` ({delayMs, retryAt, error}; `error.busy` when the
   * server refused for a quota) or `unauthorized`.
   */
  constructor({
    url,
    headers,
    cursor,
    onConnected = () => {},
    onResync = () => {},
    onEvent,
    onStatus,
    silenceMs = 25000,
  }) {
    this.url = url;
    this.headers = headers;
    this.onConnected = onConnected;
    this.onResync = onResync;
    this.onEvent = onEvent;
    this.onStatus = onStatus;
    this.silenceMs = silenceMs;
    /** The last event id seen: where a reconnection resumes. */
    this.cursor = cursor;
    this.attempt = 0;
    this.running = false;
    this.paused = false;
    this.controller = null;
    this.wake = null;
  }

  start() {
    if (this.running) return;
    this.running = true;
    this.loop();
  }

  stop() {
    this.running = false;
    this.controller?.abort();
    this.wake?.();
  }

  /**
   * Reconnect now instead of waiting out the backoff. A stream stopped by `unauthorized`
   * stays stopped: only `resume()` (a token was entered) starts it again.
   */
  retryNow() {
    if (!this.paused) this.wake?.();
  }

  /** Resume after `unauthorized` (a token was entered). */
  resume() {
    this.paused = false;
    this.wake?.();
  }

  /** Drop the connection and the cursor: the next connection starts fresh. */
  restart() {
    this.cursor = undefined;
    this.controller?.abort();
  }

  async loop() {
    while (this.running) {
      const opened = Date.now();
      let error = null;
      try {
        await this.connectOnce();
      } catch (caught) {
        error = caught;
      }
      if (!this.running) return;
      if (error?.unauthorized) {
        this.paused = true;
        this.onStatus('unauthorized', {});
        await this.sleep(Infinity);
        continue;
      }
      if (Date.now() - opened >= STABLE_MS) this.attempt = 0;
      const base = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
      this.attempt += 1;
      const delayMs = Math.max(Math.round(base * (1 + Math.random() * 0.2)), error?.retryAfterMs ?? 0);
      this.onStatus('reconnecting', { delayMs, retryAt: Date.now() + delayMs, error });
      await this.sleep(delayMs);
    }
  }

  sleep(milliseconds) {
    return new Promise((resolve) => {
      const timer = Number.isFinite(milliseconds) ? setTimeout(done, milliseconds) : null;
      const self = this;
      function done() {
        clearTimeout(timer);
        if (self.wake === done) self.wake = null;
        resolve();
      }
      this.wake = done;
    });
  }

  async connectOnce() {
    this.onStatus('connecting', {});
    const controller = new AbortController();
    this.controller = controller;
    const headers = { Accept: 'text/event-stream', ...this.headers() };
    const resuming = this.cursor !== undefined;
    if (resuming) headers['Last-Event-ID'] = this.cursor;
    let silence = null;
    const watch = () => {
      clearTimeout(silence);
      silence = setTimeout(() => controller.abort(), this.silenceMs);
    };
    try {
      watch();
      const response = await fetch(this.url(), { headers, signal: controller.signal, cache: 'no-store' });
      if (response.status === 401) throw Object.assign(new Error('unauthorized'), { unauthorized: true });
      if (response.status === 503 || response.status === 429) throw await refusal(response);
      if (!response.ok || !response.body) throw new Error(`the event stream answered ${response.status}`);
      this.onStatus('live', {});
      const parse = createParser((frame) => this.frame(frame, resuming));
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        watch();
        parse(value);
      }
      throw new Error('the server closed the event stream');
    } finally {
      clearTimeout(silence);
      controller.abort();
      if (this.controller === controller) this.controller = null;
    }
  }

  frame(frame, resuming) {
    if (frame.id !== undefined && frame.id !== '') this.cursor = frame.id;
    let event;
    try {
      event = JSON.parse(frame.data);
    } catch {
      return;
    }
    if (event?.type === 'server.connected') {
      this.onConnected({ resumed: resuming, id: frame.id });
    } else if (event?.type === 'server.resync') {
      this.onResync(event.properties ?? {});
    } else {
      this.onEvent(event);
    }
  }
}
