#!/usr/bin/env node
// Regenerates docs/dashboard.png, the dashboard the README shows: a Control API (`control-plane serve`, embedded
// default) in a temporary folder, the sessions of docs/dashboard-sessions.json captured into bundles (`bundle
// create`) and uploaded through the API, its administrator signed in with the sign-in link `serve` prints, and Debian's
// Chromium (headless, playwright-core) photographing a search. Run it after `npm run build`:
//   scripts/with-node24 node scripts/dashboard-screenshot.mjs [out.png]
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');
const out = path.resolve(process.argv[2] ?? path.join(root, 'docs', 'dashboard.png'));
const work = await mkdtemp(path.join(tmpdir(), 'blue-screenshot-'));
const home = path.join(work, 'home');
const env = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: home,
  XDG_DATA_HOME: path.join(home, '.local', 'share'),
  XDG_STATE_HOME: path.join(home, '.local', 'state'),
  XDG_CONFIG_HOME: path.join(home, '.config'),
  TZ: 'UTC',
};

// What is captured: native transcripts (their harness, profile, paths and lines), from a data file beside the picture.
const data = JSON.parse(await readFile(path.join(root, 'docs', 'dashboard-sessions.json'), 'utf8'));

function cli(args) {
  const r = spawnSync(process.execPath, [entry, ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`blue-agent ${args.join(' ')} exited ${r.status}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

const server = spawn(process.execPath, [entry, 'control-plane', 'serve', '--listen', '127.0.0.1:0'], {
  env,
  stdio: ['ignore', 'pipe', 'inherit'],
});
let printed = '';
server.stdout.on('data', (chunk) => (printed += chunk));
let browser;
try {
  for (let i = 0; i < 200 && !/auth\/link#/.test(printed); i++) await new Promise((resolve) => setTimeout(resolve, 50));
  const url = /listening on (http:\/\/\S+)/.exec(printed)?.[1];
  const link = /(http:\/\/\S+\/auth\/link#\S+)/.exec(printed)?.[1];
  if (url === undefined || link === undefined) throw new Error(`serve did not start:\n${printed}`);
  const token = (
    await readFile(path.join(home, '.local', 'share', 'blue-agent', 'control', 'admin-token'), 'utf8')
  ).trim();

  for (const s of data.sessions) {
    const transcript = path.join(home, s.transcript);
    await mkdir(path.dirname(transcript), { recursive: true });
    await writeFile(transcript, `${s.lines.map((line) => JSON.stringify(line)).join('\n')}\n`);
    const file = path.join(work, `${s.id}.tar.gz`);
    cli([
      'bundle',
      'create',
      '--harness',
      data.harness,
      '--session',
      s.id,
      '--profile',
      data.profile,
      '--cwd',
      s.cwd,
      '--transcript',
      transcript,
      '--out',
      file,
    ]);
    const bytes = await readFile(file);
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const presign = await fetch(`${url}/session-uploads/presign`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({
        harness: data.harness,
        session_id: s.id,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size_bytes: bytes.length,
        content_type: 'application/vnd.blue.session-bundle+tar+gzip',
        artifact_format: 'blue-session-bundle-v1',
        compatibility_profile: data.profile,
        resumable: true,
        cwd: s.cwd,
        title: s.title,
      }),
    }).then((r) => r.json());
    await fetch(presign.upload_url, { method: presign.method, headers: presign.headers, body: bytes });
    await fetch(presign.complete_url, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  }
  // The indexer reads what they say off the request path: give it a moment.
  await new Promise((resolve) => setTimeout(resolve, 1500));

  browser = await chromium.launch({
    executablePath: process.env.BLUE_CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const page = await (
    await browser.newContext({ viewport: { width: 1280, height: 720 }, colorScheme: 'light' })
  ).newPage();
  await page.goto(link);
  await page.waitForURL(`${url}/sessions`);
  await page.goto(`${url}/sessions?q=test`);
  await mkdir(path.dirname(out), { recursive: true });
  await page.screenshot({ path: out });
  console.log(`wrote ${out}`);
} finally {
  await browser?.close();
  server.kill('SIGTERM');
  await new Promise((resolve) => server.once('exit', resolve));
  await rm(work, { recursive: true, force: true });
}
