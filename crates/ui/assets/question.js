// The question card: one pending QuestionRequest as a form, then its outcome.
//
// As the seeds describe it: each question shows its header as a chip, its options with
// their descriptions, single choice (radio) or several (checkbox), a free-text "Other"
// when `custom`, and "No preference" to skip (sent as `[No preference]`). All questions of
// a request are answered together with one submit; "Decline" rejects the request with an
// optional reason. A draft survives a reload (sessionStorage, per request id).

import { byLine, countdown, dismissButton, domId, followUpNote, h, nameFor, oneLine, sessionLink, setText } from './dom.js';
import { translator } from './i18n.js';

export const NO_PREFERENCE = '[No preference]';
const OTHER = '\u0000other';
const SKIP = '\u0000skip';
const DRAFT_PREFIX = 'askbus.draft.';

/**
 * Builds the card for `request`. `actions.reply(request, answers)` and
 * `actions.reject(request, reason)` perform the calls (they throw on failure);
 * `actions.describe(error, what)` turns a failure into a sentence; `actions.dismiss(id)`
 * removes the card; `actions.changed(id)` is told when the card resolves. Returns a controller: `{element, request, kind, tick(now),
 * resolve(outcome), noteFollowUp(step, names), touched(), focus()}`.
 */
export function questionCard(request, actions) {
  const id = request.id;
  // The card speaks the reviewer's language (the browser's), else the request's `locale`.
  const t = translator(request.locale);
  const multi = request.questions.length > 1;
  const titleId = domId(id, 'title');
  const timer = countdown(request.expiresAt, t);
  const followUp = followUpNote(t);
  const errorBox = h('p', { class: 'card-error', role: 'alert', hidden: true });
  let touched = false;
  let resolved = false;
  /** Who resolved it (`{name, role}`), once an outcome said. */
  let answeredBy = null;

  const fields = request.questions.map((info, index) => questionField(request, info, index, multi, t));
  const subject = questionSubject(request.questions, t);
  const submitText = multi ? t('Submit answers') : t('Submit answer');
  const submit = h('button', { type: 'submit', class: 'primary', 'aria-label': nameFor(submitText, subject) }, submitText);
  const declineToggle = h(
    'button',
    { type: 'button', class: 'secondary', 'aria-label': nameFor(t('Decline'), subject) },
    t('Decline…'),
  );
  const reasonId = domId(id, 'reason');
  const reason = h('input', { id: reasonId, type: 'text', maxlength: 500, autocomplete: 'off' });
  const declineConfirm = h('button', { type: 'button', class: 'danger' }, t('Decline question'));
  const declineCancel = h('button', { type: 'button', class: 'secondary' }, t('Cancel'));
  const declinePanel = h(
    'div',
    { class: 'decline', hidden: true },
    h('label', { for: reasonId }, t('Reason for the agent (optional)')),
    reason,
    h('div', { class: 'actions' }, declineConfirm, declineCancel),
  );
  const form = h(
    'form',
    { class: 'card-form', novalidate: true },
    fields.map((field) => field.element),
    errorBox,
    h('div', { class: 'actions' }, submit, declineToggle),
    declinePanel,
  );
  const resolution = h('div', { class: 'resolution', hidden: true });
  const title = multi
    ? h('h2', { id: titleId, class: 'card-title' }, t('{count} questions', { count: request.questions.length }))
    : null;
  const element = h(
    'article',
    {
      class: 'card question',
      id: domId('request', id),
      'aria-labelledby': titleId,
      tabindex: -1,
      lang: t.locale,
      dataset: { id, key: request.approvalKey || id, session: request.sessionID, kind: 'question' },
    },
    h(
      'div',
      { class: 'card-meta' },
      h('span', { class: 'kind' }, t('Question')),
      sessionLink(request.sessionID, t),
      byLine('asked', request.askedBy, 'by asked-by', t),
      followUp.element,
      timer.element,
    ),
    title,
    form,
    resolution,
  );

  // Restore a draft, then keep saving it.
  const draft = loadDraft(id);
  if (draft) {
    fields.forEach((field, index) => field.restore(draft[index]));
    touched = true;
  }
  form.addEventListener('input', () => {
    touched = true;
    saveDraft(id, fields.map((field) => field.draft()));
  });
  form.addEventListener('change', () => {
    touched = true;
    saveDraft(id, fields.map((field) => field.draft()));
  });

  const setBusy = (busy) => {
    for (const control of form.querySelectorAll('button, input')) control.disabled = busy;
    form.setAttribute('aria-busy', String(busy));
  };
  const showError = (message) => {
    setText(errorBox, message);
    errorBox.hidden = !message;
  };

  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    if (resolved) return;
    showError('');
    const results = fields.map((field) => field.collect());
    const invalid = results.findIndex((result) => result.error);
    if (invalid !== -1) {
      const count = results.filter((result) => result.error).length;
      showError(
        count === 1
          ? t('Answer or skip “{question}” first.', { question: request.questions[invalid].question })
          : t('Answer or skip every question first: {count} still need an answer.', { count }),
      );
      results[invalid].fix.focus();
      return;
    }
    const answers = results.map((result) => result.answer);
    setBusy(true);
    try {
      const sent = await actions.reply(request, answers);
      controller.resolve({ status: 'replied', answers, here: true, answeredBy: sent?.answeredBy });
      element.focus();
    } catch (error) {
      setBusy(false);
      if (!resolved) showError(actions.describe(error, 'answer', t));
      actions.failed?.(request, error, controller);
    }
  });

  declineToggle.addEventListener('click', () => {
    declinePanel.hidden = false;
    reason.focus();
  });
  declineCancel.addEventListener('click', () => {
    declinePanel.hidden = true;
    declineToggle.focus();
  });
  reason.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      declineConfirm.click();
    } else if (event.key === 'Escape') {
      declineCancel.click();
    }
  });
  declineConfirm.addEventListener('click', async () => {
    if (resolved) return;
    showError('');
    const text = reason.value.trim();
    setBusy(true);
    try {
      const sent = await actions.reject(request, text || undefined);
      controller.resolve({ status: 'rejected', reason: text || undefined, here: true, answeredBy: sent?.answeredBy });
      element.focus();
    } catch (error) {
      setBusy(false);
      if (!resolved) showError(actions.describe(error, 'decline', t));
      actions.failed?.(request, error, controller);
    }
  });

  const controller = {
    element,
    request,
    kind: 'question',
    get resolved() {
      return resolved;
    },
    touched: () => touched,
    tick: (now) => {
      if (resolved) return;
      timer.tick(now);
      // Who may decide follows the clock, not the event: a card listed after the
      // escalation (the event came before this page) says so all the same.
      if (request.escalateAt && now >= request.escalateAt && request.escalateTo?.length) {
        followUp.escalated(request.escalateTo);
      }
    },
    /** A follow-up of the pending request: `reminded`, or `escalated` to `names`. */
    noteFollowUp(step, names) {
      if (resolved) return;
      if (step === 'reminded') followUp.reminded();
      else if (step === 'escalated') followUp.escalated(names);
    },
    focus: () => fields[0]?.focus(),
    /** Shows how the request ended; `outcome.here` when this tab resolved it. */
    resolve(outcome) {
      if (resolved && !outcome.override) return;
      resolved = true;
      clearDraft(id);
      form.hidden = true;
      timer.element.hidden = true;
      followUp.element.hidden = true;
      element.classList.add('resolved');
      element.dataset.status = outcome.status;
      answeredBy = outcome.answeredBy;
      resolution.replaceChildren(...resolutionView(request, outcome, subject, () => actions.dismiss(id), t));
      resolution.hidden = false;
      actions.changed?.(id);
    },
    /**
     * Names who resolved it, when the outcome's event arrives after the card resolved (this
     * tab's own answer: its call ended first).
     */
    noteAnsweredBy(identity) {
      if (!resolved || answeredBy || !identity) return;
      answeredBy = identity;
      const line = answeredByLine(element.dataset.status, identity, t);
      if (line) resolution.querySelector('.status-line')?.after(line);
    },
    /** A failure that left the request as it was (e.g. a 409 without details yet). */
    showError,
  };
  timer.tick(Date.now());
  return controller;
}

/**
 * What a question card is about, for the accessible names of its buttons: `question
 * Database`, or `questions Telemetry, Region` (headers, else the question texts).
 */
export function questionSubject(questions, t) {
  const names = questions.map((info) => info.header || info.question).join(', ');
  return questions.length > 1 ? t('questions {names}', { names }) : t('question {names}', { names });
}

/**
 * One question as a fieldset; `collect()` gives `{answer}`, or `{error, fix}` with the
 * control that needs the human.
 */
function questionField(request, info, index, multi, t) {
  const base = domId(request.id, 'q', index);
  const name = base;
  const type = info.multiple ? 'checkbox' : 'radio';
  const hintId = `${base}-hint`;
  const errorId = `${base}-error`;
  const Heading = multi ? 'h3' : 'h2';
  const inputs = [];

  const option = (value, label, description, extraClass) => {
    const inputId = `${base}-o${inputs.length}`;
    const descriptionId = description ? `${inputId}-desc` : undefined;
    const input = h('input', { type, id: inputId, name, value, 'aria-describedby': descriptionId });
    inputs.push(input);
    return h(
      'label',
      { class: `option ${extraClass || ''}`.trim(), for: inputId },
      input,
      h(
        'span',
        { class: 'option-text' },
        h('span', { class: 'option-label' }, oneLine(label)),
        description ? h('span', { class: 'option-description', id: descriptionId }, description) : null,
      ),
    );
  };

  // A free-text option of the question's own (the seeds' `"input": true`, as "Khác") is
  // the "Other" choice under its own words, not a fixed choice beside an added "Other".
  const freeText = info.options.find((choice) => choice.input);
  const options = info.options
    .filter((choice) => !choice.input)
    .map((choice) => option(choice.label, choice.label, choice.description));
  let otherInput = null;
  let otherText = null;
  if (info.custom) {
    options.push(option(OTHER, freeText?.label ?? t('Other'), freeText?.description || t('Type your own answer'), 'other'));
    otherInput = inputs[inputs.length - 1];
    otherText = h('input', {
      type: 'text',
      class: 'other-text',
      id: `${base}-other-text`,
      'aria-label': t('Your own answer to: {question}', { question: info.question }),
      placeholder: t('Type your own answer'),
      autocomplete: 'off',
      maxlength: 2000,
    });
    options.push(otherText);
  }
  options.push(option(SKIP, t('No preference'), t('Skip this question'), 'skip'));
  const skipInput = inputs[inputs.length - 1];

  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const element = h(
    'fieldset',
    { class: 'question-field', 'aria-describedby': hintId },
    h(
      'legend',
      {},
      info.header ? h('span', { class: 'chip' }, oneLine(info.header)) : null,
      h(Heading, { class: 'question-text', id: index === 0 && !multi ? domId(request.id, 'title') : undefined }, info.question),
    ),
    h('p', { class: 'hint', id: hintId }, info.multiple ? t('Choose any that apply.') : t('Choose one.')),
    h('div', { class: 'options' }, options),
    error,
  );

  // Typing your own answer selects "Other"; in a multi-select, "No preference" excludes
  // every other choice and any other choice clears it.
  otherText?.addEventListener('input', () => {
    if (otherText.value.trim() !== '' && !otherInput.checked) {
      otherInput.checked = true;
      if (info.multiple) skipInput.checked = false;
    }
  });
  if (info.multiple) {
    element.addEventListener('change', (event) => {
      if (event.target === skipInput && skipInput.checked) {
        for (const input of inputs) if (input !== skipInput) input.checked = false;
      } else if (event.target !== skipInput && event.target.checked) {
        skipInput.checked = false;
      }
    });
  }
  element.addEventListener('change', () => setError(''));

  const setError = (message) => {
    error.textContent = message;
    error.hidden = !message;
    element.toggleAttribute('aria-invalid', Boolean(message));
    if (message) element.setAttribute('aria-describedby', `${hintId} ${errorId}`);
    else element.setAttribute('aria-describedby', hintId);
  };

  return {
    element,
    focus() {
      (inputs.find((input) => input.checked) ?? inputs[0]).focus();
    },
    collect() {
      const checked = inputs.filter((input) => input.checked);
      if (checked.length === 0) {
        setError(t('Choose an answer, or “No preference” to skip.'));
        return { error: true, fix: inputs[0] };
      }
      if (skipInput.checked) {
        setError('');
        return { answer: [NO_PREFERENCE] };
      }
      const answer = checked.filter((input) => input !== otherInput).map((input) => input.value);
      if (otherInput?.checked) {
        const text = otherText.value.trim();
        if (!text) {
          setError(t('Type your own answer, or choose one of the options.'));
          return { error: true, fix: otherText };
        }
        answer.push(text);
      }
      setError('');
      return { answer };
    },
    draft() {
      return {
        checked: inputs.filter((input) => input.checked).map((input) => input.value),
        other: otherText?.value ?? '',
      };
    },
    restore(saved) {
      if (!saved) return;
      for (const input of inputs) input.checked = saved.checked?.includes(input.value) ?? false;
      if (otherText && typeof saved.other === 'string') otherText.value = saved.other;
    },
  };
}

/** The resolved block: what happened, and the questions with their answers. */
function resolutionView(request, outcome, subject, dismiss, t) {
  const status = t(
    {
      replied: outcome.here ? 'You answered' : 'Answered elsewhere',
      rejected: outcome.here ? 'You declined this question' : 'Declined elsewhere',
      timed_out: 'Expired: nobody answered in time',
      cancelled: 'Withdrawn: the agent no longer needs an answer',
      gone: 'No longer pending: it was resolved while this page was not connected',
      unrecorded: 'Not recorded: the server could not store it, and the agent was not given it',
    }[outcome.status] ?? 'Resolved',
  );
  const parts = [h('p', { class: 'status-line', dataset: { status: outcome.status } }, status)];
  const by = answeredByLine(outcome.status, outcome.answeredBy);
  if (by) parts.push(by);
  if (outcome.status === 'rejected' && outcome.reason) {
    parts.push(h('p', { class: 'reason' }, t('Reason: {reason}', { reason: outcome.reason })));
  }
  if (outcome.status === 'replied' && Array.isArray(outcome.answers)) {
    parts.push(
      h(
        'dl',
        { class: 'answers' },
        request.questions.flatMap((info, index) => [
          h('dt', {}, info.question),
          h('dd', {}, formatAnswer(outcome.answers[index])),
        ]),
      ),
    );
  }
  if (outcome.note) parts.push(h('p', { class: 'note' }, outcome.note));
  parts.push(dismissButton(subject, dismiss, t));
  return parts;
}

/** `answered by alice (reviewer)` under a resolved card's status, or `null`. */
function answeredByLine(status, identity, t) {
  // Nobody's answer stands on a request whose outcome the store refused.
  if (status === 'unrecorded') return null;
  const verb = status === 'rejected' ? 'declined' : status === 'cancelled' ? 'withdrawn' : 'answered';
  const line = byLine(verb, identity, 'by answered-by', t);
  return line && h('p', { class: 'answered-by-line' }, line);
}

/** An answer as the seeds show it: labels joined with ", "; skipped reads as such. */
export function formatAnswer(answer) {
  if (!Array.isArray(answer) || answer.length === 0) return NO_PREFERENCE;
  return answer.join(', ');
}

function loadDraft(id) {
  try {
    const text = sessionStorage.getItem(DRAFT_PREFIX + id);
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

function saveDraft(id, draft) {
  try {
    sessionStorage.setItem(DRAFT_PREFIX + id, JSON.stringify(draft));
  } catch {
    // Storage full or disabled: the draft is simply not kept.
  }
}

function clearDraft(id) {
  try {
    sessionStorage.removeItem(DRAFT_PREFIX + id);
  } catch {
    // Nothing to clear.
  }
}

/** Drops the drafts of requests a snapshot showed are no longer pending: `gone(id)`. */
export function pruneDrafts(gone) {
  try {
    for (let index = sessionStorage.length - 1; index >= 0; index -= 1) {
      const key = sessionStorage.key(index);
      if (key?.startsWith(DRAFT_PREFIX) && gone(key.slice(DRAFT_PREFIX.length))) {
        sessionStorage.removeItem(key);
      }
    }
  } catch {
    // Nothing to prune.
  }
}
