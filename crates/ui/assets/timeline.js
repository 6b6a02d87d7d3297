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
// success, red on error (or when rejected). A `tool_result` merges into its `tool_use`.

import { h } from './dom.js';
import { NO_PREFERENCE } from './question.js';

/** The tool name under which questions appear (seed 000). */
const QUESTION_TOOL = 'ask_user_question';
/** Items a running group shows. */
const MAX_RUNNING_ITEMS = 3;
/** Delay before a group that just finished collapses. */
const COLLAPSE_MS = 300;

/** `web_search` -> `Web search` (the protocol's fallback label for a tool). */
export function readable(name) {
  const spaced = String(name ?? '').replace(/[_-]/g, ' ').trim();
  return spaced ? spaced[0].toUpperCase() + spaced.slice(1) : '';
}

/** Blocks of history `messages` (seed 004's converter). */
export function blocksFromHistory(messages) {
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
export function applyFrame(blocks, open, frame) {
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

/** Groups blocks into items (seed 004's `buildGroups`); the last group stays open. */
export function buildItems(blocks) {
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
 * it. Keeps which groups the human expanded or collapsed across updates.
 */
export class Timeline {
  constructor() {
    this.blocks = [];
    this.open = new Map();
    /** Group key -> whether expanded, for groups the human (or auto-collapse) decided. */
    this.expanded = new Map();
    /** Keys of groups seen running, so their end collapses them after a moment. */
    this.running = new Set();
    this.list = h('ol', { class: 'timeline-list' });
    this.empty = h('p', { class: 'empty' }, 'Nothing recorded for this session yet.');
    this.element = h('div', { class: 'timeline' }, this.empty, this.list);
  }

  load(history) {
    this.blocks = blocksFromHistory(history?.messages);
    this.open = new Map();
    this.render();
  }

  apply(frame) {
    if (applyFrame(this.blocks, this.open, frame)) this.render();
  }

  render() {
    const items = buildItems(this.blocks);
    const focusedKey = document.activeElement?.closest?.('.group')?.dataset.key;
    this.list.replaceChildren(...items.map((item) => h('li', {}, this.item(item))));
    this.empty.hidden = items.length > 0;
    if (focusedKey) this.list.querySelector(`.group[data-key="${focusedKey}"] .group-header`)?.focus();
  }

  item(item) {
    switch (item.type) {
      case 'group':
        return this.group(item);
      case 'user':
        return h('div', { class: 'tl-user' }, h('span', { class: 'tl-who' }, 'User'), h('p', {}, item.text));
      case 'text':
        return h('p', { class: `tl-text${item.isFinal ? ' final' : ''}` }, item.text);
      default:
        return stepView(item);
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
    const label = group.done && group.summary ? group.summary : latestLabel(group.blocks) || 'Working…';
    const bodyId = `timeline-${group.key}`;
    const header = h(
      'button',
      {
        type: 'button',
        class: 'group-header',
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
        h('ul', { class: 'group-items' }, visible.map((block) => h('li', {}, stepView(block)))),
        group.done ? h('p', { class: 'group-done' }, '✓ Done') : null,
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
      if (request) open.set(index, request);
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

/** The label of the latest tool in `blocks` (a running group's header). */
function latestLabel(blocks) {
  return [...blocks].reverse().find((block) => block.type === 'tool_use')?.label ?? '';
}

// ---- Views ------------------------------------------------------------------------------------

const STATUS_TEXT = { pending: 'running', success: 'done', error: 'failed' };

function stepView(block) {
  switch (block.type) {
    case 'tool_use':
      return h(
        'div',
        { class: 'tl-step', dataset: { status: block.status } },
        h('span', { class: 'tl-dot', role: 'img', 'aria-label': STATUS_TEXT[block.status] }),
        h('span', { class: 'tl-label' }, block.label),
      );
    case 'thinking':
      return h('div', { class: 'tl-step tl-thinking' }, h('span', { class: 'tl-label' }, 'Thinking'), h('p', {}, block.text));
    case 'text':
      return h('p', { class: 'tl-text' }, block.text);
    case 'request':
      return isQuestion(block) ? questionView(block) : approvalView(block);
    default:
      return h('span', {});
  }
}

/** Seed 000's ResolvedQuestionBlock (or a pending question pointing at its card). */
function questionView(block) {
  const questions = block.actionRequests.find((action) => action.name === QUESTION_TOOL)?.args?.questions ?? [];
  const answers = block.answers ?? {};
  const state = requestState(block, 'Waiting for your answer (see the request above)');
  return h(
    'div',
    { class: 'tl-question', dataset: { resolved: String(block.resolved) } },
    state ? h('p', { class: 'tl-state' }, state) : null,
    h(
      'dl',
      { class: 'answers' },
      questions.flatMap((question) => [
        h('dt', {}, question.question),
        block.resolved && !state ? h('dd', {}, answers[question.question] || NO_PREFERENCE) : null,
      ]),
    ),
  );
}

function approvalView(block) {
  const names = block.actionRequests.map((action) => readable(action.name)).join(', ');
  const state = requestState(block, 'Waiting for your approval (see the request above)');
  const decided = (block.decisions ?? []).map((decision) => decisionText(decision)).join('; ');
  return h(
    'div',
    { class: 'tl-approval', dataset: { resolved: String(block.resolved) } },
    h('span', { class: 'tl-label' }, `Approval: ${names}`),
    h('p', { class: 'tl-state' }, state ?? decided),
  );
}

/** A request's state in words, or `null` when it was answered normally. */
function requestState(block, pending) {
  if (!block.resolved) return pending;
  if (block.timedOut) return 'Expired: nobody answered in time';
  if (block.cancelled) return 'Withdrawn by the agent';
  if (!block.answers && block.decisions?.some((decision) => decision.type === 'reject')) {
    return isQuestion(block) ? 'Declined' : null;
  }
  return null;
}

function decisionText(decision) {
  switch (decision?.type) {
    case 'approve':
      return 'Approved';
    case 'edit':
      return 'Approved with edited arguments';
    case 'reject':
      return decision.message ? `Rejected: ${decision.message}` : 'Rejected';
    case 'respond':
      return `Responded: ${decision.message}`;
    default:
      return '';
  }
}
