// The session timeline: what the agent did, in the group style of seed 004.
//
// Input is the seeds' wire, as `askbus-protocol` writes it: the flat history messages
// (`display_type` content / group_start / group_item / group_end, `group_closed`) and then
// the stream frames after the history's `last_event_id` (`content_block_start/delta/stop`,
// `group_start`, `group_end`). Both become one flat list of blocks, scanned in order into
// items: content (user messages, text, questions) on its own, steps (thinking, tool calls,
// tool approvals) inside collapsible groups.
//
// Group policy, as the seed has it: a running group is expanded, shows its last 3 items and
// a header naming the latest tool; `group_end` marks it done and collapses it 300 ms later,
// with the summary as header; clicking the header toggles it, and an expanded done group
// shows every item and "✓ Done". Tool items carry a dot: amber while running, green on
// success, red on error, and red when an approval did not let the call run (rejected,
// answered with a response instead, timed out, withdrawn), whatever result follows.
// A `tool_result` merges into its `tool_use`.
// Questions are shown outside groups, tool approvals inside them; a pending one offers a
// button that takes the human to its card, a resolved one shows its answers or decisions
// (seed 000's resolved question block).
//
// The frames that arrive together render the list once, in a task of its own, not once per
// frame, so a flooded session costs one render per burst; the control that had the
// keyboard focus (a group's header, a request's button) gets it back by its
// `data-focus-key`.

import { approvalSubject, describeDecision } from './approval.js';
import { byLine, h, nameFor, oneLine } from './dom.js';
import { t } from './i18n.js';
import { NO_PREFERENCE, questionSubject } from './question.js';

/** The tool name under which questions appear (seed 000). */
const QUESTION_TOOL = 'ask_user_question';
/** Items a running group shows. */
const MAX_RUNNING_ITEMS = 3;
/** Delay before a group that just finished collapses. */
const COLLAPSE_MS = 300;

/** `web_search` -> `Web search` (the protocol's fallback label for a tool). */
function readable(name) {
  const spaced = String(name ?? '').replace(/[_-]/g, ' ').trim();
  return spaced ? spaced[0].toUpperCase() + spaced.slice(1) : '';
}

/** Blocks of history `messages` (seed 004's converter). */
function blocksFromHistory(messages) {
  const blocks = [];
  for (const message of messages ?? []) {
    const display = message.display_type;
    if (display === 'group_start') blocks.push({ type: 'group_start', summary: message.summary });
    if (message.role === 'user') {
      blocks.push({ type: 'user', text: textOf(message.content) });
    } else if (message.role === 'assistant') {
      for (const part of message.content ?? []) {
        const block = partBlock(part);
        if (block) blocks.push(block);
      }
      for (const call of message.tool_calls ?? []) {
        blocks.push(toolUse(call.id, call.name, call.args, call.tool_content_message));
      }
    } else if (message.role === 'tool') {
      mergeResult(blocks, message.tool_call_id, message.status, message.content);
    }
    if (display === 'group_end' || (display === 'group_start' && message.group_closed)) {
      blocks.push({ type: 'group_end', summary: message.summary ?? '' });
    }
  }
  return blocks;
}

/**
 * Applies one stream frame to `blocks` (in place). `open` maps a frame `index` to the
 * block it is building. Returns whether anything visible changed.
 */
function applyFrame(blocks, open, frame) {
  switch (frame?.type) {
    case 'group_start':
      blocks.push({ type: 'group_start' });
      return true;
    case 'group_end':
      blocks.push({ type: 'group_end', summary: frame.summary ?? '' });
      return true;
    case 'content_block_start':
      return startBlock(blocks, open, frame.index, frame.content_block ?? {});
    case 'content_block_delta': {
      const target = open.get(frame.index);
      if (!target) return false;
      applyDelta(target, frame.delta ?? {});
      return true;
    }
    case 'content_block_stop':
      open.delete(frame.index);
      return false;
    default:
      return false;
  }
}

/**
 * `blocks`, with each tool call that a resolved approval did not let run marked failed
 * (seed 004: rejected or timed out is a red dot). An action names its call by
 * `tool_use_id`; without one, it is the latest call of that tool before the approval.
 */
function withRefusals(blocks) {
  const refused = new Set();
  blocks.forEach((block, position) => {
    if (block.type !== 'request' || !block.resolved || isQuestion(block)) return;
    const before = blocks.slice(0, position).reverse();
    block.actionRequests.forEach((action, index) => {
      if (!refuses(block, index)) return;
      const call = before.find(
        (candidate) =>
          candidate.type === 'tool_use' &&
          (action.tool_use_id ? candidate.id === action.tool_use_id : candidate.name === action.name),
      );
      if (call) refused.add(call);
    });
  });
  return blocks.map((block) => (refused.has(block) ? { ...block, status: 'error' } : block));
}

/** Whether resolved approval `block` kept its action `index` from running. */
function refuses(block, index) {
  if (block.timedOut || block.cancelled) return true;
  // Fewer decisions than actions: the first stands for the rest (seed behaviour).
  const decision = block.decisions?.[index] ?? block.decisions?.[0];
  return decision?.type === 'reject' || decision?.type === 'respond';
}

/** Groups blocks into items (seed 004's `buildGroups`); the last group stays open. */
function buildItems(blocks) {
  const items = [];
  let group = null;
  let ordinal = 0;
  const close = () => {
    if (group) items.push(group);
    group = null;
  };
  for (const block of blocks) {
    if (block.type === 'group_start') {
      close();
      group = { type: 'group', key: `g${ordinal++}`, blocks: [], summary: block.summary ?? '', done: false };
    } else if (block.type === 'group_end') {
      if (group) {
        group.summary = block.summary || group.summary;
        group.done = true;
        close();
      }
    } else if (block.type === 'user' || (block.type === 'text' && !block.isPart) || isQuestion(block)) {
      close();
      items.push(block);
    } else if (group) {
      group.blocks.push(block);
    } else {
      items.push(block);
    }
  }
  close();
  return items;
}

/**
 * A timeline view: `load(history)` shows a history, `apply(frame)` a stream frame after
 * it. Keeps which groups the human expanded or collapsed across updates. `review(key)` is
 * called when the human asks to answer the pending request `key` (its `approval_key`).
 */
export class Timeline {
  constructor({ review }) {
    this.review = review;
    this.blocks = [];
    this.open = new Map();
    /** Group key -> whether expanded, for groups the human (or auto-collapse) decided. */
    this.expanded = new Map();
    /** Keys of groups seen running, so their end collapses them after a moment. */
    this.running = new Set();
    /** Whether a render is queued for the frames being applied. */
    this.renderQueued = false;
    this.list = h('ol', { class: 'timeline-list' });
    this.empty = h('p', { class: 'empty' }, t('Nothing recorded for this session yet.'));
    this.element = h('div', { class: 'timeline' }, this.empty, this.list);
  }

  load(history) {
    this.blocks = blocksFromHistory(history?.messages);
    this.open = new Map();
    this.render();
  }

  apply(frame) {
    if (!applyFrame(this.blocks, this.open, frame) || this.renderQueued) return;
    // In a task of its own, after every frame the stream has already delivered: a burst of
    // frames renders once, and no task both reads a burst and renders it.
    this.renderQueued = true;
    setTimeout(() => {
      this.renderQueued = false;
      this.render();
    }, 0);
  }

  render() {
    const items = buildItems(withRefusals(this.blocks));
    const focused = this.list.contains(document.activeElement) ? document.activeElement.dataset.focusKey : undefined;
    this.list.replaceChildren(...items.map((item) => h('li', {}, this.item(item))));
    this.empty.hidden = items.length > 0;
    if (focused) this.list.querySelector(`[data-focus-key="${CSS.escape(focused)}"]`)?.focus();
  }

  item(item) {
    switch (item.type) {
      case 'group':
        return this.group(item);
      case 'user':
        return h('div', { class: 'tl-user' }, h('span', { class: 'tl-who' }, t('User')), h('p', {}, item.text));
      case 'text':
        return h('p', { class: `tl-text${item.isFinal ? ' final' : ''}` }, item.text);
      default:
        return stepView(item, this.review);
    }
  }

  group(group) {
    if (!group.done) this.running.add(group.key);
    else if (this.running.delete(group.key) && !this.expanded.has(group.key)) {
      // It just finished while shown: leave it open a moment, then fold it away.
      this.expanded.set(group.key, true);
      setTimeout(() => {
        this.expanded.set(group.key, false);
        this.render();
      }, COLLAPSE_MS);
    }
    const expanded = this.expanded.get(group.key) ?? !group.done;
    const visible = group.done ? group.blocks : group.blocks.slice(-MAX_RUNNING_ITEMS);
    const label = group.done && group.summary ? group.summary : latestLabel(group.blocks) || t('Working…');
    const bodyId = `timeline-${group.key}`;
    const header = h(
      'button',
      {
        type: 'button',
        class: 'group-header',
        dataset: { focusKey: `group ${group.key}` },
        'aria-expanded': String(expanded),
        'aria-controls': bodyId,
        onclick: () => {
          this.expanded.set(group.key, !expanded);
          this.render();
        },
      },
      h('span', { class: `group-summary${group.done ? '' : ' shimmer'}` }, label),
      h('span', { class: 'arrow', 'aria-hidden': 'true' }, expanded ? '˅' : '›'),
    );
    return h(
      'div',
      { class: 'group', dataset: { key: group.key, state: group.done ? 'done' : 'running' } },
      header,
      h(
        'div',
        { class: 'group-body', id: bodyId, hidden: !expanded },
        h('ul', { class: 'group-items' }, visible.map((block) => h('li', {}, stepView(block, this.review)))),
        group.done ? h('p', { class: 'group-done' }, `✓ ${t('Done')}`) : null,
      ),
    );
  }
}

// ---- Blocks ---------------------------------------------------------------------------------

function textOf(parts) {
  return (parts ?? [])
    .filter((part) => part.type === 'text')
    .map((part) => part.text)
    .join('\n');
}

function partBlock(part) {
  switch (part?.type) {
    case 'text':
      return { type: 'text', text: part.text ?? '', isPart: Boolean(part.is_part), isFinal: Boolean(part.is_final) };
    case 'thinking':
      return { type: 'thinking', text: part.thinking ?? '' };
    case 'approval_request':
      return {
        type: 'request',
        key: part.approval_key,
        actionRequests: part.actionRequests ?? [],
        resolved: Boolean(part.isResolved),
        answers: part.submittedAnswers,
        decisions: part.decisions,
        timedOut: Boolean(part.timedOut),
        cancelled: Boolean(part.cancelled),
        answeredBy: part.answeredBy,
      };
    default:
      return null;
  }
}

function toolUse(id, name, args, label) {
  return { type: 'tool_use', id, name, args, label: label || readable(name), status: 'pending' };
}

function mergeResult(blocks, toolUseId, status, content) {
  const use = [...blocks].reverse().find((block) => block.type === 'tool_use' && block.id === toolUseId);
  if (!use) return;
  use.status = status === 'error' ? 'error' : 'success';
  use.result = content;
}

function findRequest(blocks, key) {
  return [...blocks].reverse().find((block) => block.type === 'request' && block.key === key);
}

function startBlock(blocks, open, index, content) {
  let block;
  switch (content.type) {
    case 'user':
      block = { type: 'user', text: '' };
      break;
    case 'text':
      block = { type: 'text', text: '', isPart: Boolean(content.is_part), isFinal: Boolean(content.is_final) };
      break;
    case 'thinking':
      block = { type: 'thinking', text: '' };
      break;
    case 'tool_use':
      block = toolUse(content.id, content.name, content.input, content.tool_content_message);
      break;
    case 'tool_result':
      mergeResult(blocks, content.tool_use_id, content.status, content.content);
      return true;
    case 'approval_request':
      block = { type: 'request', key: content.approval_key, actionRequests: [], resolved: false };
      break;
    case 'approval_result': {
      const request = findRequest(blocks, content.approval_key);
      if (request) {
        if (content.answered_by) request.answeredBy = content.answered_by;
        open.set(index, request);
      }
      return false;
    }
    case 'approval_timeout': {
      const request = findRequest(blocks, content.approval_key);
      if (!request) return false;
      request.resolved = true;
      request.timedOut = true;
      return true;
    }
    default:
      return false;
  }
  blocks.push(block);
  open.set(index, block);
  return true;
}

function applyDelta(block, delta) {
  if (delta.type === 'text_delta') block.text += delta.text ?? '';
  else if (delta.type === 'thinking_delta') block.text += delta.thinking ?? '';
  else if (Array.isArray(delta.action_requests)) block.actionRequests = delta.action_requests;
  else if (delta.answers) Object.assign(block, { resolved: true, answers: delta.answers });
  else if (Array.isArray(delta.decisions)) Object.assign(block, { resolved: true, decisions: delta.decisions });
  else if (delta.cancelled) Object.assign(block, { resolved: true, cancelled: true });
}

function isQuestion(block) {
  return block.type === 'request' && block.actionRequests?.some((action) => action.name === QUESTION_TOOL);
}

/**
 * A running group's header, as the encoder will sum it up: the label of its latest tool
 * call, else the name of the first action it asks approval for.
 */
function latestLabel(blocks) {
  const tool = [...blocks].reverse().find((block) => block.type === 'tool_use');
  if (tool) return tool.label;
  const approval = blocks.find((block) => block.type === 'request' && block.actionRequests.length > 0);
  return approval ? readable(approval.actionRequests[0].name) : '';
}

// ---- Views ------------------------------------------------------------------------------------

const STATUS_TEXT = { pending: 'running', success: 'done', error: 'failed' };

function stepView(block, review) {
  switch (block.type) {
    case 'tool_use':
      return h(
        'div',
        { class: 'tl-step', dataset: { status: block.status } },
        h('span', { class: 'tl-dot', role: 'img', 'aria-label': t(STATUS_TEXT[block.status]) }),
        h('span', { class: 'tl-label' }, block.label),
      );
    case 'thinking':
      return h('div', { class: 'tl-step tl-thinking' }, h('span', { class: 'tl-label' }, t('Thinking')), h('p', {}, block.text));
    case 'text':
      return h('p', { class: 'tl-text' }, block.text);
    case 'request':
      return isQuestion(block) ? questionView(block, review) : approvalView(block, review);
    default:
      return h('span', {});
  }
}

/** Seed 000's ResolvedQuestionBlock: each question with its answer; pending, a way to it. */
function questionView(block, review) {
  const questions = block.actionRequests.find((action) => action.name === QUESTION_TOOL)?.args?.questions ?? [];
  const answers = block.answers ?? {};
  const answered = block.resolved && block.answers !== undefined;
  return h(
    'div',
    { class: 'tl-question', dataset: { resolved: String(block.resolved), key: block.key } },
    block.resolved
      ? null
      : pendingView(t('Waiting for your answer.'), t('Answer it'), questionSubject(questions, t), block.key, review),
    answered ? null : outcomeLine(block),
    answeredByLine(block),
    h(
      'dl',
      { class: 'answers' },
      questions.flatMap((question) => [
        h('dt', {}, question.header ? h('span', { class: 'chip' }, oneLine(question.header)) : null, ' ', question.question),
        answered ? h('dd', {}, answers[question.question] || NO_PREFERENCE) : null,
      ]),
    ),
  );
}

/** A tool approval inside its group: the actions, then what was decided. */
function approvalView(block, review) {
  const names = block.actionRequests.map((action) => readable(action.name)).join(', ');
  const decided = (block.decisions ?? []).map((decision) => describeDecision(decision, t)).join('; ');
  return h(
    'div',
    { class: 'tl-approval', dataset: { resolved: String(block.resolved), key: block.key } },
    h('span', { class: 'tl-label' }, t('Approval: {names}', { names })),
    block.resolved
      ? [outcomeLine(block) ?? h('p', { class: 'tl-state' }, decided), answeredByLine(block)]
      : pendingView(t('Waiting for your decision.'), t('Review it'), approvalSubject(block.actionRequests, t), block.key, review),
  );
}

/** A pending request's line, with the button that takes the human to its card. */
function pendingView(text, action, subject, key, review) {
  const button = h(
    'button',
    {
      type: 'button',
      class: 'link-button',
      'aria-label': nameFor(action, subject),
      dataset: { focusKey: `request ${key}` },
      onclick: () => review(key),
    },
    action,
  );
  return h('p', { class: 'tl-state tl-pending' }, text, ' ', button);
}

/**
 * Who resolved a request, as the history (`answeredBy`) or the stream (`answered_by`) names
 * them: `answered by alice`, or `null` when pending or nobody is named.
 */
function answeredByLine(block) {
  if (!block.resolved || block.timedOut) return null;
  let verb = 'decided';
  if (block.cancelled) verb = 'withdrawn';
  else if (isQuestion(block)) verb = block.answers !== undefined ? 'answered' : 'declined';
  const line = byLine(verb, block.answeredBy, 'by answered-by');
  return line && h('p', { class: 'tl-state' }, line);
}

/** How a request ended when it was not answered normally, or `null`. */
function outcomeLine(block) {
  if (!block.resolved) return null;
  let text = null;
  if (block.timedOut) text = t('Expired: nobody answered in time');
  else if (block.cancelled) text = t('Withdrawn by the agent');
  else if (isQuestion(block)) {
    const reason = block.decisions?.find((decision) => decision.type === 'reject')?.message;
    text = reason ? t('Declined: {reason}', { reason }) : t('Declined');
  }
  return text ? h('p', { class: 'tl-state' }, text) : null;
}
