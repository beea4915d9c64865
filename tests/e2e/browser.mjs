// Launching headless Debian Chromium through playwright-core (no downloaded browser), with the
// flags that work on these machines, in a fresh profile directory.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';

/** A fresh headless Chromium context; close it with `context.close()`. */
export async function launch() {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'bitlens-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // Extra flags for an experiment, e.g. CHROMIUM_ARGS='--js-flags=--no-liftoff'.
      ...(process.env.CHROMIUM_ARGS ?? '').split(' ').filter(Boolean),
    ],
  });
  const close = context.close.bind(context);
  context.close = async () => {
    await close();
    fs.rmSync(profile, { recursive: true, force: true });
  };
  return context;
}
