/**
 * Debian's Chromium, headless, driven by playwright-core (no browser download): the flags keep it off a closed
 * network and out of the machine's profile. `.ci/run` installs the `chromium` package; a machine without it fails
 * the browser tests with what to install, never skips them.
 */
import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';

export function chromiumPath(): string {
  const candidates = [process.env.BLUE_CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (p): p is string => p !== undefined && p !== '',
  );
  const found = candidates.find((p) => existsSync(p));
  if (found === undefined)
    throw new Error(
      `no Chromium at ${candidates.join(', ')}: install Debian's chromium package (apt-get install chromium), or ` +
        `set BLUE_CHROMIUM`,
    );
  return found;
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
}

/** Where the tests put their screenshots: BLUE_SCREENSHOTS, else a new temporary folder (never the repository). */
export async function screenshotDir(): Promise<string> {
  const given = process.env.BLUE_SCREENSHOTS;
  return given !== undefined && given !== '' ? given : mkdtemp(path.join(tmpdir(), 'blue-screenshots-'));
}
