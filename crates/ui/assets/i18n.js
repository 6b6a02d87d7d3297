// The web UI's words in English, Vietnamese and Chinese (the seeds' languages).
//
// Every text the UI shows is written in the code in English and passed through a
// translator: `t('Submit answer')`, `t('expires in {left}', { left })`. The English text is
// the key, so the code reads as what it shows and a missing translation falls back to it.
// Which language: the browser's preferred languages (`navigator.languages`), else a
// request's own `locale` (a card for a reviewer whose browser speaks none of the UI's
// languages), else English. The reviewer's language comes first: the agent, which writes
// the request, must not choose the words of the controls a human decides with (an
// English reader shown 批准 and 在此会话中始终允许 cannot tell Approve from Always allow).

import { VI, ZH } from './texts.js';

/** The languages the UI speaks, by their primary language subtag. */
const TABLES = { en: null, vi: VI, zh: ZH };

/**
 * The first of `tags` (BCP 47, `vi-VN`, `zh-Hans-CN`, `en`) the UI speaks, as its primary
 * subtag; `en` when none is.
 */
export function pickLocale(tags) {
  for (const tag of tags) {
    if (typeof tag !== 'string') continue;
    const primary = tag.trim().toLowerCase().split(/[-_]/)[0];
    if (Object.hasOwn(TABLES, primary)) return primary;
  }
  return 'en';
}

/** The browser's preferred languages, most preferred first. */
const browserTags = () =>
  typeof navigator === 'undefined' ? [] : [...(navigator.languages ?? []), navigator.language];

/** The page's language: the browser's. */
export const pageLocale = pickLocale(browserTags());

/**
 * A translator for `locale` (a request's `locale`, or nothing for the browser's):
 * `t(english, vars)` is the text in that language with each `{name}` replaced by
 * `vars.name`; `t.parts(english, vars)` is the same as a list of strings and the nodes
 * among `vars` (for `h()` children: a name that must stay its own element); `t.locale` is
 * the language chosen, `t.time(ms)` a time written in it.
 */
export function translator(locale) {
  const chosen = pickLocale([...browserTags(), locale]);
  const table = TABLES[chosen];
  const template = (english) => table?.[english] ?? english;
  const t = (english, vars = {}) =>
    template(english).replace(/\{(\w+)\}/g, (whole, name) => (Object.hasOwn(vars, name) ? String(vars[name]) : whole));
  t.parts = (english, vars = {}) =>
    template(english)
      .split(/(\{\w+\})/)
      .filter((piece) => piece !== '')
      .map((piece) => {
        const name = /^\{(\w+)\}$/.exec(piece)?.[1];
        return name && Object.hasOwn(vars, name) ? vars[name] : piece;
      });
  t.locale = chosen;
  // A time in that language; in the browser's own, as the browser formats it (`en-GB`).
  t.time = (milliseconds) => new Date(milliseconds).toLocaleString(chosen === pageLocale ? undefined : chosen);
  return t;
}

/** The page's translator (the browser's language). */
export const t = translator(undefined);

/**
 * Translates the static markup under `root` into the page's language: the text of each
 * element marked `data-i18n`, and the attributes named in `data-i18n-attrs`
 * (`"aria-label title"`), each written in English in the HTML.
 */
export function translateMarkup(root) {
  document.documentElement.lang = t.locale;
  if (t.locale === 'en') return;
  for (const element of root.querySelectorAll('[data-i18n]')) element.textContent = t(element.textContent.trim());
  for (const element of root.querySelectorAll('[data-i18n-attrs]')) {
    for (const name of element.dataset.i18nAttrs.split(' ')) {
      const value = element.getAttribute(name);
      if (value) element.setAttribute(name, t(value));
    }
  }
}

/**
 * What the human reads, on either page, when the server could not record what they sent
 * (`api.notRecorded`): `{yours}` is `sentNouns`'.
 */
export const NOT_RECORDED_TEXT =
  'The server could not record {yours}: its store failed, so nothing was decided and the agent was given nothing. Tell whoever runs the server.';

/**
 * What a failed call was sending, as `{yours, thisOne}` (`your answer`, `this answer`) in
 * `t`'s language: `what` is `answer`, `decision`, `reject` (a rejection) or anything else
 * (a reply).
 */
export function sentNouns(what, t) {
  switch (what) {
    case 'answer':
      return { yours: t('your answer'), thisOne: t('this answer') };
    case 'decision':
      return { yours: t('your decision'), thisOne: t('this decision') };
    case 'reject':
      return { yours: t('your rejection'), thisOne: t('this rejection') };
    default:
      return { yours: t('your reply'), thisOne: t('this reply') };
  }
}
