/**
 * The dashboard in a real browser (Debian's Chromium, headless), against the real Control API and a real OpenID
 * provider on loopback, on both databases: sign in through the provider; approve the code `blue-agent login` prints
 * (the real CLI, which then holds refreshable credentials); find an uploaded session by a word of its third turn and
 * read its transcript; share it with a member, who then sees it in their list, and take it back; a member cannot
 * reach someone else's session by URL; delete it. Pages are checked for labels and for a phone's width, and the main
 * ones are photographed into a temporary folder (BLUE_SCREENSHOTS to keep them). A title with control and
 * bidirectional characters is read as the browser shows it: escaped, never reordered.
 */
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, screenshotDir } from '../../../../test/support/browser.js';
import { runCli } from '../../../../test/support/cli-process.js';
import { BACKENDS, freePort, startTestServer, type TestServer } from '../../../../test/support/control-server.js';
import { conversationBundle } from '../../../../test/support/conversation-bundle.js';
import { startOidcProvider, type TestOidcProvider } from '../../../../test/support/oidc-provider.js';

let chromium: Browser;
let shots: string;
let work: string;
beforeAll(async () => {
  chromium = await launchChromium();
  shots = await screenshotDir();
  work = await mkdtemp(path.join(tmpdir(), 'blue-e2e-dashboard-'));
}, 60_000);
afterAll(async () => {
  await chromium?.close();
  await rm(work, { recursive: true, force: true });
});

/** WCAG's contrast ratio of two `rgb(…)` colours. */
function contrast(a: string, b: string): number {
  const luminance = (rgb: string) => {
    const [r, g, bl] = (rgb.match(/\d+(\.\d+)?/g) ?? ['0', '0', '0']).slice(0, 3).map((v) => {
      const c = Number(v) / 255;
      return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * bl!;
  };
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi! + 0.05) / (lo! + 0.05);
}

/** The colours of text on the page against the page's background: WCAG AA (4.5:1) for every kind of text there is. */
async function checkContrast(page: Page, name: string): Promise<void> {
  const pairs = await page.evaluate(() => {
    const background = getComputedStyle(document.body).backgroundColor;
    return ['body', 'a', '.muted', 'button.primary', 'button', '.badge', 'th', '.snippet']
      .map((selector) => document.querySelector(selector))
      .filter((el): el is Element => el !== null)
      .map((el) => {
        const style = getComputedStyle(el);
        const own = style.backgroundColor;
        return { what: el.outerHTML.slice(0, 60), fg: style.color, bg: own === 'rgba(0, 0, 0, 0)' ? background : own };
      });
  });
  for (const { what, fg, bg } of pairs)
    expect(contrast(fg, bg), `${name}: ${what} (${fg} on ${bg})`).toBeGreaterThanOrEqual(4.5);
}

/** Every visible form field has a label (or an aria-label), and nothing is wider than the window. */
async function checkPage(page: Page, name: string): Promise<void> {
  const unlabelled = await page.evaluate(() =>
    [...document.querySelectorAll('input:not([type=hidden]), select, textarea')]
      .filter((el) => !(el as HTMLElement).closest('form[hidden]'))
      .filter(
        (el) =>
          el.getAttribute('aria-label') === null &&
          (el.id === '' || document.querySelector(`label[for="${el.id}"]`) === null) &&
          el.closest('label') === null,
      )
      .map((el) => el.outerHTML.slice(0, 120)),
  );
  expect(unlabelled, name).toEqual([]);
  const overflow = await page.evaluate(
    () => document.documentElement.scrollWidth - document.documentElement.clientWidth,
  );
  expect(overflow, `${name} is wider than the window`).toBeLessThanOrEqual(0);
}

describe.each(BACKENDS)('the dashboard in Chromium (%s)', (backend) => {
  let t: TestServer | undefined;
  let idp: TestOidcProvider | undefined;
  afterEach(async () => {
    await t?.close();
    await idp?.close();
  });

  it('signs in, approves a device sign-in, finds a session by its third turn, shares and takes it back, and ' +
    'deletes it', async () => {
    const port = await freePort();
    idp = await startOidcProvider(`http://127.0.0.1:${port}/auth/oidc/callback`, [
      { email: 'dana@example.com' },
      { email: 'erin@example.com' },
      { email: 'root@example.com', groups: ['blue-admins'] },
    ]);
    t = await startTestServer({
      backend,
      port,
      liveClock: true,
      identity: { deviceIntervalMs: 1_000 },
      oidc: {
        issuer: idp.issuer,
        clientId: idp.clientId,
        clientSecret: idp.clientSecret,
        adminGroup: 'blue-admins',
        name: 'Example SSO',
      },
    });
    const url = t.url;
    const dana = await chromium.newContext({ viewport: { width: 1280, height: 900 } });
    const erin = await chromium.newContext({ viewport: { width: 390, height: 844 } });
    try {
      const signIn = async (page: Page, email: string) => {
        await page.goto(`${url}/sessions`);
        await page.getByRole('link', { name: 'Sign in with Example SSO' }).click();
        await page.getByLabel('E-mail').fill(email);
        await page.getByRole('button', { name: 'Sign in' }).click();
        await page.waitForURL(`${url}/sessions`);
      };
      const page = await dana.newPage();
      await signIn(page, 'dana@example.com');
      expect(await page.textContent('h1')).toBe('Your sessions and those shared with you');

      // `blue-agent login` in a terminal; its code approved here.
      const home = path.join(work, `home-${backend}`);
      await mkdir(home, { recursive: true });
      const env = {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        BLUE_AGENT_HOME: path.join(home, 'state'),
        BLUE_AGENT_CONFIG: path.join(home, 'config.yaml'),
      };
      const login = runCli(['login', '--control-url', url, '--no-browser', '--json'], { env, timeoutMs: 60_000 });
      let printed = '';
      login.child.stderr!.on('data', (chunk: Buffer) => (printed += chunk.toString()));
      for (let i = 0; i < 300 && !/\(or open (\S+)\)/.test(printed); i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
      const verification = /\(or open (\S+)\)/.exec(printed)![1]!;
      await page.goto(verification);
      expect(await page.textContent('h1')).toBe('Sign in a device?');
      await checkPage(page, 'approval');
      await page.screenshot({ path: path.join(shots, `device-approval-${backend}.png`), fullPage: true });
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByRole('heading', { name: 'Device signed in' }).waitFor();
      const loggedIn = await login;
      expect(loggedIn.code, loggedIn.stderr).toBe(0);
      expect(JSON.parse(loggedIn.stdout)).toMatchObject({ ok: true, method: 'device', email: 'dana@example.com' });
      const credentials = JSON.parse(await readFile(path.join(home, 'state', 'token'), 'utf8')) as {
        access_token: string;
      };

      // A session uploaded with the new sign-in's token; found by a word only its third turn says.
      const daniel = {
        id: (await t.server.store.userByEmail('dana@example.com'))!.id,
        email: 'dana@example.com',
        token: credentials.access_token,
      };
      const bytes = await conversationBundle(work, {
        sessionId: 'dana-parser',
        title: 'Rewrite the config parser',
        cwd: '/home/dana/parser',
        turns: [
          'Rewrite the parser.',
          'Which parts?',
          'Start with the quasar tokenizer and its error messages.',
          `Done. ${'The tokenizer now reports line and column. '.repeat(60)}`,
        ],
      });
      const uploaded = await t.upload(daniel, bytes, {
        session_id: 'dana-parser',
        title: 'Rewrite the config parser',
        cwd: '/home/dana/parser',
        artifact_format: 'blue-session-bundle-v1',
        compatibility_profile: 'claude-v2_0_12',
        resumable: true,
      });
      expect(uploaded.status).toBe(200);
      await page.goto(`${url}/sessions`);
      await page.getByLabel('Search', { exact: true }).fill('quasar');
      await page.getByRole('button', { name: 'Search' }).click();
      // The match is highlighted, as markup the server made, not as brackets in the text.
      await page.locator('.snippet mark', { hasText: 'quasar' }).waitFor();
      expect(await page.locator('.snippet').first().textContent()).not.toContain('[quasar]');
      await checkPage(page, 'sessions');
      await checkContrast(page, 'sessions');
      // By keyboard: the first Tab reaches the skip link, and it leads to the content.
      await page.keyboard.press('Tab');
      expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
      await page.keyboard.press('Enter');
      // The address changes after the key's default action, which Chromium reports asynchronously.
      await page.waitForURL(/#main$/);
      await page.screenshot({ path: path.join(shots, `sessions-${backend}.png`), fullPage: true });
      await page.getByRole('link', { name: 'Rewrite the config parser' }).click();
      await page.getByRole('heading', { name: /^Transcript/ }).waitFor();
      expect(await page.getByLabel('Assistant turn').count()).toBe(2);
      await page.getByText(/^Show more/).click();
      await page.getByText('The tokenizer now reports line and column.').first().waitFor();
      expect(await page.inputValue('#resume-command')).toBe(`blue-agent resume ${uploaded.sessionId}`);
      // The transcript leads: its top is the page's first content below the title; what is said of the session is
      // beside it on a wide screen.
      const top = async (selector: string) => (await page.locator(selector).boundingBox())!.y;
      expect(await top('#transcript')).toBeLessThanOrEqual(await top('#about'));
      expect(await top('#transcript')).toBeLessThan(await top('#sharing'));
      expect(await top('#transcript')).toBeLessThan(await top('#delete'));
      await checkPage(page, 'session');
      await checkContrast(page, 'session');
      await page.screenshot({ path: path.join(shots, `session-${backend}.png`), fullPage: true });

      // The id's start, as the CLI takes it, leads to the session; an address that is no page is a page saying so.
      await page.goto(`${url}/sessions/${uploaded.sessionId.slice(0, 8)}`);
      expect(page.url()).toBe(`${url}/sessions/${uploaded.sessionId}`);
      const nowhere = await page.goto(`${url}/sessions/${uploaded.sessionId}/nowhere`);
      expect([nowhere!.status(), nowhere!.headers()['content-type']]).toEqual([404, 'text/html; charset=utf-8']);
      expect(await page.textContent('h1')).toBe('Not found');
      await page.goto(`${url}/sessions/${uploaded.sessionId}`);

      // Shared with Erin through the member picker: she sees it; taken back: she no longer does, not even by URL.
      const erinPage = await erin.newPage();
      await signIn(erinPage, 'erin@example.com');
      const sessionUrl = `${url}/sessions/${uploaded.sessionId}`;
      expect((await erinPage.goto(sessionUrl))!.status()).toBe(404);
      await page.getByLabel('Add people').fill('erin');
      await page.getByRole('button', { name: 'Find' }).click();
      await page.getByRole('button', { name: 'Share with erin@example.com' }).click();
      await page.getByText('Sharing saved.').waitFor();
      await erinPage.goto(`${url}/sessions`);
      await erinPage.getByText('shared by dana@example.com').waitFor();
      await checkPage(erinPage, 'sessions on a phone');
      await erinPage.getByRole('link', { name: 'Rewrite the config parser' }).click();
      expect(await erinPage.getByText('Shared with you by dana@example.com').count()).toBe(1);
      expect(await erinPage.getByRole('button', { name: 'Delete session' }).count()).toBe(0);
      await checkPage(erinPage, 'a shared session on a phone');
      await page.getByRole('button', { name: 'Stop sharing with erin@example.com' }).click();
      await page.getByText('Sharing saved.').waitFor();
      expect((await erinPage.goto(sessionUrl))!.status()).toBe(404);
      await erinPage.goto(`${url}/sessions`);
      expect(await erinPage.getByText('Rewrite the config parser').count()).toBe(0);

      // Administration, for an administrator by group.
      const root = await chromium.newContext({ viewport: { width: 1280, height: 900 } });
      try {
        const admin = await root.newPage();
        await signIn(admin, 'root@example.com');
        await admin.getByRole('link', { name: 'Administration' }).click();
        await admin.getByRole('link', { name: 'Users and tokens' }).click();
        await admin.getByRole('heading', { name: /dana@example\.com/ }).waitFor();
        await checkPage(admin, 'users');
        await admin.screenshot({ path: path.join(shots, `admin-users-${backend}.png`), fullPage: true });
        await admin.getByRole('link', { name: 'Audit log' }).click();
        await admin.getByRole('cell', { name: 'session.share', exact: true }).first().waitFor();
      } finally {
        await root.close();
      }

      // Deleted by its owner: gone from the list.
      await page.getByLabel('I want to delete this session').check();
      await page.getByRole('button', { name: 'Delete session' }).click();
      await page.waitForURL(`${url}/sessions?deleted=1`);
      expect(await page.getByText('Rewrite the config parser').count()).toBe(0);
    } finally {
      await dana.close();
      await erin.close();
    }
  }, 120_000);

  it('shows a title holding control and bidirectional characters escaped, never reordered, where shown', async () => {
    t = await startTestServer({ backend });
    const hostile = 'Quarterly report\u202Efdp.exe\u2066\u200f\u001b[31m\u0085';
    const bytes = await conversationBundle(work, {
      sessionId: 'evil-title',
      title: hostile,
      cwd: '/home/dana/evil',
      turns: ['Hi.', 'Hello.'],
    });
    const uploaded = await t.upload(t.alice, bytes, {
      session_id: 'evil-title',
      title: hostile,
      cwd: '/home/dana/evil\u202e',
      tags: ['tag\u202eevil'],
    });
    const secret = await t.server.store.identity.createSignInLink(t.alice.id, t.clock.now(), 60_000);
    const signed = await fetch(`${t.url}/auth/link`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: t.url, 'content-type': 'application/x-www-form-urlencoded' },
      body: `token=${secret}`,
    });
    const [name, value] = signed.headers.get('set-cookie')!.split(';')[0]!.split('=') as [string, string];
    const context = await chromium.newContext();
    try {
      await context.addCookies([{ name, value, url: t.url }]);
      const page = await context.newPage();
      const raw = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
      const shown = 'Quarterly report\\u202efdp.exe\\u2066\\u200f\\u001b[31m\\u0085';
      for (const route of ['/sessions', `/sessions/${uploaded.sessionId}`]) {
        await page.goto(`${t.url}${route}`);
        const text = await page.evaluate(() => `${document.title}\n${document.body.innerText}`);
        expect(raw.exec(text)?.[0], route).toBeUndefined();
        expect(text, route).toContain(shown);
      }
      expect(await page.title()).toBe(`${shown} · Blue Control`);
      expect(await page.textContent('h1')).toBe(shown);
    } finally {
      await context.close();
    }
  });
});
