/**
 * Bundles of the recorded session fixtures (fixtures/sessions/), written with the real bundle writer. Placeholders
 * are replaced with fixed values, so the bundles — and what is exported from them — are the same on every run.
 */
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeBundle, type BundleResult } from '../../src/bundle/index.js';
import type { SessionFile } from '../../src/harnesses/types.js';
import { loadProfiles, type ProfileSet } from '../../src/profiles/index.js';
import type { HarnessName } from '../../src/schema/index.js';
import { fixtureDir, readRecorded, substitute } from './recorded-sessions.js';
import { repoRoot } from './context.js';

export const HARNESS_LIST: HarnessName[] = ['claude', 'codex', 'kimi', 'opencode'];

export const GOLDEN = path.join(repoRoot, 'test', 'sessions', 'golden');

/** The recording's temporary root, as if the session had run for a user `dev`. */
export const ROOT = '/home/dev';
export const CWD = `${ROOT}/work/proj`;
export const PROJECT = CWD.replace(/[^A-Za-z0-9]/g, '-');
const VARS: Record<string, string> = {
  ROOT,
  ROOT_REL: ROOT.slice(1),
  PROJECT,
  WORKDIR_MD5: createHash('md5').update(CWD).digest('hex'),
  CLAUDE_TMP: '/tmp/claude-1000',
  OS_RELEASE: '6.8.0',
};
export const CAPTURED_AT = Date.UTC(2026, 10, 30, 16, 40, 0);

export const PROFILE: Record<HarnessName, string> = {
  claude: 'claude-v2_0_12',
  codex: 'codex-v0_145_0',
  kimi: 'kimi-v1_28_0',
  opencode: 'opencode-v1_2_0',
};

let profiles: Promise<ProfileSet> | undefined;
export function shippedProfiles(): Promise<ProfileSet> {
  profiles ??= loadProfiles(path.join(repoRoot, 'profiles'));
  return profiles;
}

async function filesBelow(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const rel = prefix === '' ? entry.name : `${prefix}/${entry.name}`;
    if (entry.isDirectory()) out.push(...(await filesBelow(path.join(dir, entry.name), rel)));
    else out.push(rel);
  }
  return out.sort();
}

async function content(file: string): Promise<Uint8Array> {
  return new TextEncoder().encode(substitute(await readFile(file, 'utf8'), VARS));
}

function entry(rel: string): string {
  return rel.replace(/\//g, '-');
}

/** The files a capture of the harness's recorded fixture holds, with their roles and native paths. */
export async function fixtureFiles(harness: HarnessName): Promise<{ sessionId: string; files: SessionFile[] }> {
  const dir = await fixtureDir(harness);
  const recorded = await readRecorded(dir);
  const id = recorded.session_id;
  const files: SessionFile[] = [];
  if (harness === 'claude') {
    const projects = path.join(dir, 'projects', '{{PROJECT}}');
    files.push({ role: 'primary_transcript', name: 'transcript.jsonl', nativePath: `${PROJECT}/${id}.jsonl`, content: await content(path.join(projects, `${id}.jsonl`)) });
    for (const rel of await filesBelow(path.join(projects, id))) {
      files.push({ role: 'session_companion', name: entry(rel), nativePath: `${PROJECT}/${id}/${rel}`, content: await content(path.join(projects, id, rel)) });
    }
  } else if (harness === 'codex') {
    const rel = String(recorded.rollout);
    files.push({ role: 'rollout', name: 'rollout.jsonl', nativePath: rel, content: await content(path.join(dir, 'sessions', rel)) });
  } else if (harness === 'kimi') {
    const sessionDir = path.join(dir, 'share', 'sessions', '{{WORKDIR_MD5}}', id);
    const sessionRel = `sessions/${VARS.WORKDIR_MD5}/${id}`;
    files.push({ role: 'agent_wire_history', name: 'wire.jsonl', nativePath: `${sessionRel}/wire.jsonl`, content: await content(path.join(sessionDir, 'wire.jsonl')) });
    files.push({ role: 'kimi_state', name: 'state.json', nativePath: `${sessionRel}/state.json`, content: await content(path.join(sessionDir, 'state.json')) });
    for (const rel of await filesBelow(sessionDir)) {
      if (rel === 'wire.jsonl' || rel === 'state.json' || rel.startsWith('tasks/')) continue;
      files.push({ role: 'session_state', name: entry(rel), nativePath: `${sessionRel}/${rel}`, content: await content(path.join(sessionDir, rel)) });
    }
  } else {
    files.push({ role: 'portable_export', name: 'export.json', content: await content(path.join(dir, 'export.json')) });
  }
  return { sessionId: id, files };
}

/** Writes the bundle of a harness's recorded fixture to `out`. */
export async function fixtureBundle(harness: HarnessName, out: string, extra: { title?: string; summary?: string; files?: SessionFile[] } = {}): Promise<BundleResult> {
  const { sessionId, files } = await fixtureFiles(harness);
  return writeBundle(
    {
      harness,
      profile: PROFILE[harness],
      sessionId,
      capturedAtUnixMs: CAPTURED_AT,
      cwd: CWD,
      repository: { root: CWD, remote: 'https://example.com/dev/proj.git' },
      ...(extra.title === undefined ? {} : { title: extra.title }),
      ...(extra.summary === undefined ? {} : { summary: extra.summary }),
      files: extra.files ?? files,
    },
    out,
    { profiles: await shippedProfiles() },
  );
}
