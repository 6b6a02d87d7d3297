// Debian's chromium as every browser test here launches it: headless, a fresh profile,
// and none of the background networking this machine's closed network would refuse.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

/** Where the tests expect chromium (`ASKBUS_UI_CHROMIUM` overrides it). */
export const CHROMIUM = process.env.ASKBUS_UI_CHROMIUM || '/usr/bin/chromium';

/**
 * A persistent context of chromium in a new profile directory (removed when the context
 * closes), with `args` added to the usual flags and `options` passed to playwright's
 * `launchPersistentContext`.
 */
export async function launch({ args = [], ...options } = {}) {
  const profile = await mkdtemp(join(tmpdir(), 'askbus-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      ...args,
    ],
    ...options,
  });
  // Closing the context also removes its profile, before the close resolves.
  const close = context.close.bind(context);
  context.close = async (...args) => {
    await close(...args);
    await rm(profile, { recursive: true, force: true });
  };
  return context;
}
