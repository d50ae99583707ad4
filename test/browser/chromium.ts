// Real Chromium for the browser tests: Debian's package (infra/chromium.sh installs it), driven by
// playwright-core, which never downloads a browser of its own.
import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

/** Whether the browser tier can run here; under CI=true a missing browser fails instead of skipping. */
export const chromiumPresent = existsSync(CHROMIUM_PATH);

export async function launchChromium(): Promise<Browser> {
  if (!chromiumPresent) throw new Error(`the browser tests need ${CHROMIUM_PATH}: run bash infra/chromium.sh`);
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}
