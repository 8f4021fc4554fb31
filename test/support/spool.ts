/**
 * Spool records made for the spool's tests: enqueued, built to ready with a bundle-like file, or left behind by a
 * worker killed mid-build (a real process's pid that has exited).
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Spool, SpoolRecord } from '../../packages/agent/src/spool/index.js';
import { readJson } from './cli-process.js';

const PAYLOAD = {
  session_id: 'sess-1',
  cwd: '/work/project',
  transcript_path: '/home/me/.claude/projects/-work-project/sess-1.jsonl',
};

/** A new intake record of session `sessionId`, created at `createdAt`. */
export async function enqueueRecord(spool: Spool, createdAt: number, sessionId = 'sess-1'): Promise<SpoolRecord> {
  return spool.enqueueIntake({
    harness: 'claude',
    profile: 'claude-v2_0_12',
    payload: { ...PAYLOAD, session_id: sessionId },
    createdAtUnixMs: createdAt,
  });
}

/** Writes a bundle-like temp file for a claim, the way the worker's bundle writer would. */
export async function fakeBundle(spool: Spool, id: string, bytes = 'bundle bytes'): Promise<string> {
  const file = spool.tempFile(id, 'bundle');
  await writeFile(file, bytes, { mode: 0o600 });
  return file;
}

/** A record built and committed to ready/ with its bundle (12 bytes). */
export async function readyRecord(spool: Spool, createdAt: number, sessionId: string): Promise<SpoolRecord> {
  const record = await enqueueRecord(spool, createdAt, sessionId);
  const claim = (await spool.claim('intake', record.id))!;
  await spool.commitReady(claim, await fakeBundle(spool, record.id), { size: 12, sha256: 'a'.repeat(64) });
  return record;
}

/** The pid of a process that has exited: what a killed worker leaves in its claim and temp file names. */
export async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

/**
 * What a worker killed at some point of a build leaves in the spool of `stateDir`: its claim (named with its now dead
 * pid), and optionally a partial bundle temp file, a bundle already renamed into place, or a claim that already names
 * that bundle (built at `builtAt`). Returns the dead pid.
 */
export async function killedWorker(
  stateDir: string,
  builtAt: number,
  id: string,
  leave: { temp?: boolean; bundle?: string; named?: boolean } = {},
): Promise<number> {
  const pid = await deadPid();
  const spool = path.join(stateDir, 'spool');
  const claim = path.join(spool, 'building', `${id}.${pid}.json`);
  await rename(path.join(spool, 'intake', `${id}.json`), claim);
  if (leave.temp === true) {
    await writeFile(path.join(spool, 'tmp', `${id}.${pid}.bundle.0badc0de.tmp`), 'partial');
    await writeFile(path.join(spool, 'tmp', `.${id}.${pid}.bundle.0badc0de.tmp.1f2e3d.partial`), 'partial');
  }
  if (leave.bundle !== undefined) await writeFile(path.join(spool, 'bundles', `${id}.bundle`), leave.bundle);
  if (leave.named === true) {
    const record = readJson<SpoolRecord>(claim);
    await writeFile(
      claim,
      JSON.stringify({
        ...record,
        bundle: { size: leave.bundle?.length ?? 0, sha256: 'b'.repeat(64), built_at_unix_ms: builtAt },
      }),
    );
  }
  return pid;
}

/** The upload claims in the spool of `stateDir`, by file name. */
export function uploadClaims(stateDir: string): string[] {
  return readdirSync(path.join(stateDir, 'spool', 'uploading')).sort();
}
