/**
 * The system's headless Chromium for the inspector's browser tests (browser downloads are not
 * possible here; `apt-get install -y chromium` provides it). A test file skips with a printed
 * reason when it is missing.
 */
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM_FLAGS } from '../../scripts/chromium-flags.mjs';

export const CHROMIUM = '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);

/**
 * Headless, no sandbox (root), nothing that reaches the network. playwright gives every launch
 * a fresh temporary profile (--user-data-dir) and removes it.
 */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [...CHROMIUM_FLAGS, ...extraArgs],
  });
}
