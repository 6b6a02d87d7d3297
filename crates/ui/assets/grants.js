// A session's standing grants on screen: what stands approved without asking, and "Revoke".
//
// A grant is made by answering an approval "Always allow in this session" (`approval.js`):
// from then on the session's calls of that tool with exactly those arguments, asked by the
// same asker, are approved at once. So the human must see exactly what stands approved:
// each grant shows its tool, every call it covers with its arguments in full (pretty JSON,
// hidden characters marked), whose calls they are, who granted it and when. "Revoke"
// (`DELETE /session/{id}/grant/{grantID}`) ends one, and the result is said on screen.
//
// Showing a session loads `GET /session/{id}/grant`; from then on `approval.granted` and
// `approval.grant_revoked` of the page's event stream (`app.js` passes them on) add and
// remove grants, so another client's grant or revoke shows without a reload. Events that
// arrive while the list loads are applied on top of it (by grant id, so none counts twice);
// a stream that could not resume (events may be lost) loads the list again (`reload`).

import * as api from './api.js';
import { byLine, h, nameFor, oneLine, prettyJson, setText } from './dom.js';
import { t } from './i18n.js';

export class SessionGrants {
  /**
   * `ui`: the section's elements: `section`, `list` (the grants), `empty` (says there are
   * none), `status` (what a revoke did, polite), `error` (what failed).
   */
  constructor(ui, { say }) {
    this.ui = ui;
    this.say = say;
    this.session = '';
    /** Grant id -> `{grant, element}`, oldest first (the server's order, then arrival). */
    this.grants = new Map();
    /** Events that came while the list loads (`null` when none loads), applied after it. */
    this.held = null;
    /** Bumped by each load and each session shown, so a late answer is dropped. */
    this.generation = 0;
  }

  /** Shows `session`'s grants ('' for none). */
  show(session) {
    this.session = session;
    this.ui.section.hidden = !session;
    this.reload();
  }

  /** Loads the grants of the session shown again (the event stream may have missed some). */
  async reload() {
    this.generation += 1;
    const generation = this.generation;
    this.grants.clear();
    this.ui.list.replaceChildren();
    this.showError('');
    setText(this.ui.status, '');
    if (!this.session) return;
    this.held = [];
    let listed;
    try {
      listed = (await api.getPage(`/session/${encodeURIComponent(this.session)}/grant`, { quiet: true })).items;
    } catch (error) {
      if (generation !== this.generation) return;
      this.held = null;
      this.showError(loadFailure(error));
      this.render();
      return;
    }
    if (generation !== this.generation) return;
    const held = this.held;
    this.held = null;
    for (const grant of listed) this.add(grant);
    for (const [kind, grant] of held) this.apply(kind, grant);
    this.render();
  }

  /** `approval.granted` of the event stream: a grant was made. */
  granted(grant) {
    this.apply('granted', grant);
    this.render();
  }

  /** `approval.grant_revoked` of the event stream: a grant was revoked, here or elsewhere. */
  revoked(grant) {
    this.apply('revoked', grant);
    this.render();
  }

  apply(kind, grant) {
    if (!this.session || grant?.session_id !== this.session) return;
    if (this.held) {
      this.held.push([kind, grant]);
      return;
    }
    if (kind === 'granted') this.add(grant);
    else this.remove(grant.id);
  }

  add(grant) {
    if (!grant?.id || this.grants.has(grant.id)) return;
    const element = this.view(grant);
    this.grants.set(grant.id, { grant, element });
    this.ui.list.append(element);
  }

  remove(id) {
    this.grants.get(id)?.element.remove();
    this.grants.delete(id);
  }

  render() {
    this.ui.empty.hidden = this.grants.size > 0 || this.held !== null || !this.ui.error.hidden;
  }

  showError(message) {
    setText(this.ui.error, message);
    this.ui.error.hidden = !message;
  }

  /** One grant: its tool, the calls it covers in full, whose, who granted it, "Revoke". */
  view(grant) {
    const calls = (grant.args ?? []).map((args) => h('pre', { class: 'json', tabindex: 0 }, prettyJson(args)));
    const revoke = h(
      'button',
      { type: 'button', class: 'secondary small', 'aria-label': nameFor(t('Revoke'), t('grant of {tool}', { tool: grant.tool })) },
      t('Revoke'),
    );
    const granted = byLine('granted', grant.granted_by, 'by granted-by', t);
    const asked = byLine('asked', grant.asked_by, 'by asked-by', t);
    const element = h(
      'li',
      { class: 'grant', dataset: { id: grant.id } },
      h('div', { class: 'grant-head' }, h('h4', { class: 'action-name' }, oneLine(grant.tool)), revoke),
      h(
        'p',
        { class: 'grant-meta' },
        granted,
        typeof grant.created_at === 'number' ? ` · ${t.time(grant.created_at)}` : null,
        asked ? ' · ' : null,
        asked,
      ),
      h(
        'p',
        { class: 'args-label' },
        calls.length === 1 ? t('Approved without asking: this call, exactly') : t('Approved without asking: these calls, exactly'),
      ),
      calls,
    );
    revoke.addEventListener('click', () => this.revoke(grant, revoke));
    return element;
  }

  /** Revokes `grant` (`DELETE`), and says how it went. */
  async revoke(grant, button) {
    const session = this.session;
    button.disabled = true;
    this.showError('');
    try {
      await api.call('DELETE', `/session/${encodeURIComponent(session)}/grant/${encodeURIComponent(grant.id)}`);
      this.done(session, grant, t('Revoked: later calls of {tool} are asked again.', { tool: grant.tool }));
    } catch (error) {
      if (error instanceof api.ApiError && error.status === 404) {
        this.done(session, grant, t('This grant was revoked already.'));
        return;
      }
      button.disabled = false;
      if (session === this.session) this.showError(revokeFailure(error));
    }
  }

  /** `grant` of `session` is no more: off the list, and `message` said. */
  done(session, grant, message) {
    if (session !== this.session) return;
    this.remove(grant.id);
    setText(this.ui.status, message);
    this.say(message);
    this.render();
  }
}

/** Why the grants could not be listed, as a sentence. */
function loadFailure(error) {
  if (error instanceof api.NetworkError) return t('Could not reach the server to load the standing grants.');
  if (error instanceof api.ApiError && error.status === 401) return t('This server needs an access token.');
  return t('Could not load the standing grants: {message}', { message: error.message });
}

/** Why a revoke failed, as a sentence: the grant still stands. */
function revokeFailure(error) {
  if (error instanceof api.NetworkError) {
    return t('Could not reach the server, so the grant still stands. Check the connection and try again.');
  }
  return t('The server did not revoke the grant: {message}', { message: error.message });
}
