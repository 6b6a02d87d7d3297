// The approval card: tool calls an agent wants to run, for a human to review.
//
// Each action shows its name, description and arguments (pretty JSON). Its decision is one
// of those its review config allows (approve, edit, reject, respond), nothing else: "edit"
// opens a JSON editor that validates as you type, "reject" takes an optional message,
// "respond" a required one. Decisions are sent together, one per action in order, as
// `POST /approval/{id}/reply {"decisions": [...]}`.
//
// Where the server takes OpenCode's `always` (every action calls one tool, no quorum),
// "Always allow in this session" approves it and grants the session's later identical
// calls (`POST /permission/{id}/reply {"reply": "always"}`, through `actions.always`; a
// page without it, an answer link's, offers no such button). The card says so, in words,
// before the click; the grants themselves are listed and revoked by `grants.js`.
//
// A request that needs a quorum (`review_configs[].quorum` above 1) takes one vote per
// reviewer: the card says how many must agree, who voted what so far (from
// `GET /approval/{id}`, the list carries no votes, then live from `approval.decided`), and
// which reviewers it names. This page's own vote does not end the request: the card stays,
// its controls disabled, and says how many more reviewers it waits for (another tab or
// reviewer can still vote), until `approval.replied` ends it, listing every vote.

import { byLine, countdown, dismissButton, domId, followUpNote, h, jsonText, nameFor, oneLine, prettyJson, sessionLink, setText, visibleString } from './dom.js';
import { t as pageText, translator } from './i18n.js';

/** What an action no review config names may get: every decision, as the server allows. */
const DEFAULT_ALLOWED = ['approve', 'edit', 'reject', 'respond'];

/** The decisions' labels, in English (translated where shown). */
const LABELS = {
  approve: 'Approve',
  edit: 'Edit arguments',
  reject: 'Reject',
  respond: 'Respond instead',
};

/** A timestamp of the wire (ms, or seconds, or an RFC 3339 string) as ms since the epoch. */
export function toMillis(value) {
  if (typeof value === 'number') return value < 1e12 ? value * 1000 : value;
  if (typeof value === 'string') {
    const parsed = Date.parse(value);
    return Number.isNaN(parsed) ? null : parsed;
  }
  return null;
}

/** A decision type in a vote's summary: `alice approved`. */
const VOTED = {
  approve: 'approved',
  edit: 'edited',
  reject: 'rejected',
  respond: 'responded',
};

/** The decisions `action` allows under `configs`. */
export function allowedDecisions(action, configs) {
  const config = (configs ?? []).find((entry) => entry.action_name === action.name);
  const allowed = config?.allowed_decisions ?? DEFAULT_ALLOWED;
  return Object.keys(LABELS).filter((type) => allowed.includes(type));
}

/**
 * How many reviewers must decide `request` alike, as the server counts it: the largest
 * quorum of the review configs of its actions, at least 1.
 */
function quorumOf(request) {
  return Math.max(1, ...actionConfigs(request).map((config) => config.quorum ?? 1));
}

/**
 * The reviewers who may decide `request`, or `null` when any may: the server lets a
 * reviewer decide only if every review config of its actions that names reviewers names it.
 */
function namedReviewers(request) {
  const lists = actionConfigs(request)
    .map((config) => config.reviewers)
    .filter(Array.isArray);
  if (lists.length === 0) return null;
  return lists.reduce((named, list) => named.filter((name) => list.includes(name)));
}

/** The review configs of `request` that are about one of its actions. */
function actionConfigs(request) {
  const names = new Set((request.action_requests ?? []).map((action) => action.name));
  return (request.review_configs ?? []).filter((config) => names.has(config.action_name));
}

/**
 * How many of `votes` agree with each other at most: the server ends the request when
 * this reaches its quorum. Mirrors the server's `ApprovalReply::agrees_with`: per action,
 * both approve, both edit to the same call, or both run nothing (reject or respond).
 */
function mostAgreeing(votes) {
  const groups = new Map();
  for (const vote of votes) {
    const key = JSON.stringify(
      (vote.decisions ?? []).map((decision) => {
        if (decision?.type === 'approve') return 'approve';
        if (decision?.type === 'edit') return ['edit', decision.edited_action];
        return 'none';
      }),
    );
    groups.set(key, (groups.get(key) ?? 0) + 1);
  }
  return Math.max(0, ...groups.values());
}

/**
 * `alice approved; bob edited delete_rows, rejected send_mail`: who voted what, each
 * vote's decision once when it is the same for every action, else per action.
 */
function votesText(votes, actionList, t) {
  return votes.flatMap((vote, position) => {
    const types = actionList.map(
      (_, index) => t(VOTED[(vote.decisions?.[index] ?? vote.decisions?.[0])?.type] ?? 'decided'),
    );
    const what = types.every((type) => type === types[0])
      ? [` ${types[0] ?? t('decided')}`]
      : actionList.flatMap((action, index) => [index > 0 ? ',' : '', ` ${types[index]} `, oneLine(action.name)]);
    return [
      position > 0 ? '; ' : '',
      h('span', { class: 'vote' }, h('span', { class: 'by-name' }, oneLine(vote.decided_by?.name ?? t('someone'))), what),
    ];
  });
}

/**
 * Builds the card for approval `request`; `actions` as for questions, with
 * `actions.decide(request, decisions)` and `actions.fetch(request)` (the request as it
 * stands, with its votes so far). Returns the same controller shape (`noteFollowUp` too),
 * with `noteVotes` and `noteVoted`.
 */
export function approvalCard(request, actions) {
  const id = request.id;
  // The card speaks the reviewer's language (the browser's), else the request's `locale`.
  const t = translator(request.locale);
  const titleId = domId(id, 'title');
  const timer = countdown(toMillis(request.expires_at), t);
  const followUp = followUpNote(t);
  const escalateAt = toMillis(request.escalate_at);
  const errorBox = h('p', { class: 'card-error', role: 'alert', hidden: true });
  let touched = false;
  let resolved = false;
  /** Who decided it (`{name, role}`), once an outcome said. */
  let answeredBy = null;
  const actionList = request.action_requests ?? [];
  const quorum = quorumOf(request);
  const reviewers = namedReviewers(request);
  /** The votes so far, in the order they came (quorum only). */
  let votes = [];
  /** Whether this page's vote was accepted (quorum only): it waits for the others. */
  let voted = false;
  const quorumBox = quorum > 1 ? h('div', { class: 'quorum', 'aria-live': 'polite' }) : null;

  const editors = actionList.map((action, index) =>
    actionReview(request, action, index, allowedDecisions(action, request.review_configs), t),
  );
  const everyApprovable = editors.every((editor) => editor.allowed.includes('approve'));
  const names = actionList.map((action) => action.name).join(', ');
  const subject = approvalSubject(actionList, t);
  const submitText = actionList.length > 1 ? t('Send decisions') : t('Send decision');
  const submit = h('button', { type: 'submit', class: 'primary', 'aria-label': nameFor(submitText, subject) }, submitText);
  // Named after the calls it approves: on a one-action card, the radio is "Approve".
  const approveText = actionList.length > 1 ? t('Approve all') : t('Approve');
  const approveAll = everyApprovable
    ? h('button', { type: 'button', class: 'secondary', 'aria-label': nameFor(approveText, names) }, approveText)
    : null;
  // `always` (a standing grant), where the server takes it: one tool, no quorum.
  const grantable = Boolean(actions.always) && everyApprovable && quorum === 1 && actionList.length > 0 &&
    actionList.every((action) => action.name === actionList[0].name);
  const alwaysText = t('Always allow in this session');
  const alwaysHintId = domId(id, 'always-hint');
  const alwaysAllow = grantable
    ? h('button', { type: 'button', class: 'secondary', 'aria-label': nameFor(alwaysText, names), 'aria-describedby': alwaysHintId }, alwaysText)
    : null;
  const alwaysHint = grantable
    ? h(
        'p',
        { class: 'always-hint', id: alwaysHintId },
        t('Approves this now, and until revoked every later identical call of this session: the same tool with the same arguments.'),
      )
    : null;
  const form = h(
    'form',
    { class: 'card-form', novalidate: true },
    editors.map((editor) => editor.element),
    errorBox,
    h('div', { class: 'actions' }, submit, approveAll, alwaysAllow),
    alwaysHint,
  );
  const resolution = h('div', { class: 'resolution', hidden: true });
  const title =
    actionList.length === 1
      ? t.parts('Allow {name}?', { name: oneLine(actionList[0].name) })
      : t('Allow {count} actions?', { count: actionList.length });
  const element = h(
    'article',
    {
      class: 'card approval',
      id: domId('request', id),
      'aria-labelledby': titleId,
      tabindex: -1,
      lang: t.locale,
      dataset: { id, key: request.approval_key, session: request.session_id, kind: 'approval' },
    },
    h(
      'div',
      { class: 'card-meta' },
      h('span', { class: 'kind' }, t('Approval')),
      sessionLink(request.session_id, t),
      request.approval_key ? h('span', { class: 'key', title: t('Approval key') }, oneLine(request.approval_key)) : null,
      byLine('asked', request.asked_by, 'by asked-by', t),
      followUp.element,
      timer.element,
    ),
    h('h2', { id: titleId, class: 'card-title' }, title),
    quorumBox,
    form,
    resolution,
  );
  // Any edit makes a complaint about the previous attempt stale.
  const edited = () => {
    touched = true;
    showError('');
  };
  form.addEventListener('input', edited);
  form.addEventListener('change', edited);

  /** Whether a call is in flight (`busy`), and whether the controls take input. */
  const setBusy = (busy, disabled = busy) => {
    for (const control of form.querySelectorAll('button, input, textarea')) control.disabled = disabled;
    form.setAttribute('aria-busy', String(busy));
  };
  const showError = (message) => {
    setText(errorBox, message);
    errorBox.hidden = !message;
  };

  /**
   * Sends `decisions` (by `call`, a decision unless said otherwise); `expected`: what the
   * card shows of the outcome until its event says more (the grant an `always` makes).
   */
  const send = async (decisions, call = () => actions.decide(request, decisions), expected = {}) => {
    setBusy(true);
    try {
      const sent = await call();
      if (quorum > 1 && !sent?.outcome) {
        // A vote: the request goes on until the quorum agrees; this page has had its say.
        voted = true;
        setBusy(false, true);
        showQuorum();
        refreshVotes();
      } else {
        // Under a quorum, the outcome that came meanwhile is what the votes decided.
        controller.resolve({ status: 'replied', decisions, ...expected, answeredBy: sent?.answeredBy, ...sent?.outcome, here: true });
      }
      element.focus();
    } catch (error) {
      setBusy(false);
      if (!resolved) showError(actions.describe(error, 'decision', t));
      actions.failed?.(request, error, controller);
    }
  };

  form.addEventListener('submit', (event) => {
    event.preventDefault();
    if (resolved) return;
    showError('');
    const results = editors.map((editor) => editor.collect());
    const invalid = results.findIndex((result) => result.error);
    if (invalid !== -1) {
      showError(t('Check the decision for {name}: {problem}', { name: actionList[invalid].name, problem: results[invalid].error }));
      results[invalid].fix.focus();
      return;
    }
    send(results.map((result) => result.decision));
  });
  /** The quorum's state on the card: how many must agree, the votes, who may vote. */
  const showQuorum = () => {
    if (!quorumBox) return;
    const lines = [
      h(
        'p',
        { class: 'quorum-line' },
        `${t('Needs {count} reviewers to agree', { count: quorum })} · `,
        ...(votes.length === 0
          ? [t('none so far')]
          : [`${t('{count} so far:', { count: votes.length })} `, ...votesText(votes, actionList, t)]),
      ),
    ];
    if (reviewers) lines.push(h('p', { class: 'reviewers' }, ...t.parts('Reviewers: {names}', { names: oneLine(reviewers.join(', ')) })));
    if (voted) {
      // This page's vote agrees at least with itself, whether or not its event came yet.
      const more = Math.max(1, quorum - Math.max(1, mostAgreeing(votes)));
      lines.push(
        h(
          'p',
          { class: 'quorum-wait' },
          more === 1
            ? t('Your decision is recorded; waiting for 1 more reviewer.')
            : t('Your decision is recorded; waiting for {count} more reviewers.', { count: more }),
        ),
      );
    }
    quorumBox.replaceChildren(...lines);
  };
  /** Learns the votes so far from the server (the list of requests carries none). */
  const refreshVotes = async () => {
    try {
      const current = await actions.fetch(request);
      controller.noteVotes(current?.votes ?? []);
    } catch {
      // The votes' events still come; the card shows those.
    }
  };

  approveAll?.addEventListener('click', () => {
    if (resolved) return;
    showError('');
    send(actionList.map(() => ({ type: 'approve' })));
  });
  alwaysAllow?.addEventListener('click', () => {
    if (resolved) return;
    showError('');
    const args = [];
    for (const action of actionList) {
      if (!args.some((seen) => jsonText(seen) === jsonText(action.args))) args.push(action.args);
    }
    send(actionList.map(() => ({ type: 'approve' })), () => actions.always(request), { granted: { tool: actionList[0].name, args } });
  });

  const controller = {
    element,
    request,
    kind: 'approval',
    get resolved() {
      return resolved;
    },
    touched: () => touched,
    tick: (now) => {
      if (resolved) return;
      timer.tick(now);
      // As for questions: from `escalate_at` on, `escalate_to` may decide, event or not.
      if (escalateAt && now >= escalateAt && request.escalate_to?.length) {
        followUp.escalated(request.escalate_to);
      }
    },
    /** A follow-up of the pending request: `reminded`, or `escalated` to `names`. */
    noteFollowUp(step, names) {
      if (resolved) return;
      if (step === 'reminded') followUp.reminded();
      else if (step === 'escalated') followUp.escalated(names);
    },
    focus: () => editors[0]?.focus(),
    resolve(outcome) {
      if (resolved && !outcome.override) return;
      resolved = true;
      form.hidden = true;
      if (quorumBox) quorumBox.hidden = true;
      timer.element.hidden = true;
      followUp.element.hidden = true;
      element.classList.add('resolved');
      element.dataset.status = outcome.status;
      answeredBy = outcome.answeredBy;
      // A request that ends after this page's vote ends as this page's decision did.
      const ended = { ...outcome, here: outcome.here || voted, votes: outcome.votes ?? (quorum > 1 ? votes : []) };
      resolution.replaceChildren(...resolutionView(request, ended, subject, () => actions.dismiss(id), t));
      resolution.hidden = false;
      actions.changed?.(id);
    },
    /** Names who decided it, when the outcome's event arrives after the card resolved. */
    noteAnsweredBy(identity) {
      if (!resolved || answeredBy || !identity) return;
      answeredBy = identity;
      const line = decidedByLine(element.dataset.status, identity, t);
      if (line) resolution.querySelector('.status-line')?.after(line);
    },
    /**
     * Adds the reviewers' `incoming` votes (from `approval.decided`, or all so far from the
     * server) to those shown; a vote already shown (by its `id`) is skipped. Vote ids
     * ascend in the order votes were cast.
     */
    noteVotes(incoming) {
      if (!quorumBox || resolved) return;
      const known = new Set(votes.map((vote) => vote.id));
      const added = incoming.filter((vote) => !known.has(vote.id));
      if (added.length === 0) return;
      votes = [...votes, ...added].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      showQuorum();
    },
    /**
     * Says this page's reviewer has voted already, before the card was built (an answer
     * link opened again after its vote): the card waits for the others as after its own.
     */
    noteVoted() {
      if (!quorumBox || resolved) return;
      voted = true;
      setBusy(false, true);
      showQuorum();
    },
    /** Reads the votes so far again (a fresh snapshot: events may have been missed). */
    refreshVotes: () => (quorumBox && !resolved ? refreshVotes() : undefined),
    showError,
  };
  timer.tick(Date.now());
  if (quorumBox) {
    showQuorum();
    refreshVotes();
  }
  return controller;
}

/** One action: its arguments and the decision controls it allows. */
function actionReview(request, action, index, allowed, t) {
  const base = domId(request.id, 'a', index);
  const name = `${base}-decision`;
  const original = prettyJson(action.args ?? {});
  const radios = allowed.map((type) =>
    h('input', { type: 'radio', name, value: type, id: `${base}-${type}` }),
  );
  const choice = (type, radio) =>
    h('label', { class: `choice choice-${type}`, for: radio.id }, radio, h('span', {}, t(LABELS[type])));

  // Edit: a JSON editor that says at once whether its text is valid.
  const editorId = `${base}-args`;
  const statusId = `${base}-args-status`;
  const editor = h('textarea', {
    id: editorId,
    class: 'json-editor',
    spellcheck: 'false',
    autocomplete: 'off',
    rows: Math.min(16, original.split('\n').length + 1),
    'aria-describedby': statusId,
  });
  editor.value = original;
  const editorStatus = h('p', { class: 'json-status', id: statusId, 'aria-live': 'polite' }, t('Valid JSON'));
  const reset = h(
    'button',
    { type: 'button', class: 'secondary small', 'aria-label': nameFor(t('Reset'), t('arguments of {name}', { name: action.name })) },
    'Reset',
  );
  const editPanel = h(
    'div',
    { class: 'panel edit-panel', hidden: true },
    h('label', { for: editorId }, ...t.parts('New arguments for {name} (JSON)', { name: oneLine(action.name) })),
    editor,
    h('div', { class: 'editor-foot' }, editorStatus, reset),
  );
  const parseArgs = () => {
    try {
      const value = JSON.parse(editor.value);
      const wantsObject = action.args !== null && typeof action.args === 'object' && !Array.isArray(action.args);
      if (wantsObject && (value === null || typeof value !== 'object' || Array.isArray(value))) {
        return { error: t('the arguments must be a JSON object { … }') };
      }
      return { value };
    } catch (error) {
      return { error: t('invalid JSON: {message}', { message: error.message }) };
    }
  };
  const validate = () => {
    const parsed = parseArgs();
    editor.setAttribute('aria-invalid', String(Boolean(parsed.error)));
    editorStatus.textContent = parsed.error ? t('Not valid: {problem}', { problem: parsed.error }) : t('Valid JSON');
    editorStatus.dataset.valid = String(!parsed.error);
    if (!parsed.error) error.hidden = true;
    return parsed;
  };
  editor.addEventListener('input', validate);
  reset.addEventListener('click', () => {
    editor.value = original;
    validate();
    editor.focus();
  });

  const rejectId = `${base}-reject-message`;
  const rejectMessage = h('textarea', { id: rejectId, rows: 2, maxlength: 2000 });
  const rejectPanel = h(
    'div',
    { class: 'panel', hidden: true },
    h('label', { for: rejectId }, t('Message to the agent (optional)')),
    rejectMessage,
  );
  const respondId = `${base}-respond-message`;
  const respondMessage = h('textarea', { id: respondId, rows: 2, maxlength: 2000 });
  const respondPanel = h(
    'div',
    { class: 'panel', hidden: true },
    h('label', { for: respondId }, t('Your response (sent to the agent instead of running the tool)')),
    respondMessage,
  );
  const panels = { edit: editPanel, reject: rejectPanel, respond: respondPanel };

  const error = h('p', { class: 'field-error', hidden: true });
  const descriptionId = action.description ? `${base}-description` : undefined;
  const argsId = `${base}-json`;
  const element = h(
    'fieldset',
    { class: 'action-review', 'aria-describedby': descriptionId },
    h('legend', {}, h('h3', { class: 'action-name' }, oneLine(action.name))),
    action.description ? h('p', { class: 'action-description', id: descriptionId }, action.description) : null,
    h('p', { class: 'args-label', id: `${argsId}-label` }, t('Arguments')),
    h('pre', { class: 'json', id: argsId, tabindex: 0, 'aria-labelledby': `${argsId}-label` }, original),
    h(
      'div',
      { class: 'decisions', role: 'radiogroup', 'aria-label': t('Decision for {name}', { name: visibleString(action.name) }) },
      radios.map((radio, position) => choice(allowed[position], radio)),
    ),
    editPanel,
    rejectPanel,
    respondPanel,
    error,
  );
  element.addEventListener('change', (event) => {
    if (!radios.includes(event.target)) return;
    for (const [type, panel] of Object.entries(panels)) panel.hidden = event.target.value !== type;
    error.hidden = true;
    if (event.target.value === 'edit') validate();
  });

  return {
    element,
    allowed,
    focus() {
      (radios.find((radio) => radio.checked) ?? radios[0])?.focus();
    },
    /** `{decision}`, or `{error, fix}` with the control that needs the human. */
    collect() {
      const chosen = radios.find((radio) => radio.checked)?.value;
      const fail = (message, fix) => {
        error.textContent = message;
        error.hidden = false;
        return { error: message, fix };
      };
      if (!chosen) return fail(t('choose a decision.'), radios[0]);
      error.hidden = true;
      if (chosen === 'approve') return { decision: { type: 'approve' } };
      if (chosen === 'edit') {
        const parsed = validate();
        if (parsed.error) return fail(parsed.error, editor);
        return { decision: { type: 'edit', edited_action: { name: action.name, args: parsed.value } } };
      }
      if (chosen === 'reject') {
        const message = rejectMessage.value.trim();
        return { decision: message ? { type: 'reject', message } : { type: 'reject' } };
      }
      const message = respondMessage.value.trim();
      if (!message) return fail(t('write the response for the agent.'), respondMessage);
      return { decision: { type: 'respond', message } };
    },
  };
}

/** What an approval card is about, for the accessible names of its buttons. */
export function approvalSubject(actions, t = pageText) {
  return t('approval of {names}', { names: actions.map((action) => action.name).join(', ') });
}

function resolutionView(request, outcome, subject, dismiss, t) {
  // Approved by standing grants (`always`): nobody was asked, and the card says so.
  const granted = outcome.autoApprovedBy?.length > 0 ? outcome.autoApprovedBy : null;
  const status = t(
    {
      replied: granted
        ? 'Approved by a standing grant: nobody was asked'
        : outcome.here
          ? 'You sent your decision'
          : 'Decided elsewhere',
      timed_out: 'Expired: every action was rejected',
      cancelled: 'Withdrawn: the agent no longer needs a decision',
      gone: 'No longer pending: it was resolved while this page was not connected',
      unrecorded: 'Not recorded: the server could not store it, and the agent was not given it',
    }[outcome.status] ?? 'Resolved',
  );
  const parts = [h('p', { class: 'status-line', dataset: { status: outcome.status } }, status)];
  const by = granted ? grantedByLine(granted, t) : decidedByLine(outcome.status, outcome.answeredBy, t);
  if (by) parts.push(by);
  if (outcome.granted) {
    const { tool, args } = outcome.granted;
    parts.push(
      h(
        'p',
        { class: 'grant-line' },
        ...t.parts('Always allowed from now on in this session: {tool} {args}', {
          tool: oneLine(tool),
          args: oneLine((args ?? []).map((call) => jsonText(call)).join(', ')),
        }),
      ),
    );
  }
  if (Array.isArray(outcome.decisions)) {
    parts.push(
      h(
        'dl',
        { class: 'answers' },
        (request.action_requests ?? []).flatMap((action, index) => {
          const decision = outcome.decisions[index] ?? outcome.decisions[0];
          return [h('dt', {}, oneLine(action.name)), h('dd', {}, describeDecision(decision, t))];
        }),
      ),
    );
  }
  if (outcome.votes?.length > 0) {
    parts.push(h('p', { class: 'votes-line' }, `${t('Votes:')} `, votesText(outcome.votes, request.action_requests ?? [], t)));
  }
  if (outcome.note) parts.push(h('p', { class: 'note' }, outcome.note));
  parts.push(dismissButton(subject, dismiss, t));
  return parts;
}

/** `granted by alice (reviewer)` under a card a standing grant approved: who granted it. */
function grantedByLine(grants, t) {
  const line = byLine('granted', grants[0]?.granted_by, 'by granted-by', t);
  return line && h('p', { class: 'answered-by-line' }, line);
}

/** `decided by alice (reviewer)` under a resolved card's status, or `null`. */
function decidedByLine(status, identity, t) {
  // Nobody's decision stands on a request whose outcome the store refused.
  if (status === 'unrecorded') return null;
  const line = byLine(status === 'cancelled' ? 'withdrawn' : 'decided', identity, 'by answered-by', t);
  return line && h('p', { class: 'answered-by-line' }, line);
}

/** A decision in words, as the card and the timeline show it (in `t`'s language). */
export function describeDecision(decision, t = pageText) {
  switch (decision?.type) {
    case 'approve':
      return t('Approved');
    case 'edit':
      return t('Approved with edited arguments: {args}', { args: jsonText(decision.edited_action?.args) });
    case 'reject':
      return decision.message ? t('Rejected: {message}', { message: decision.message }) : t('Rejected');
    case 'respond':
      return t('Responded: {message}', { message: decision.message });
    default:
      return t('Unknown decision');
  }
}
