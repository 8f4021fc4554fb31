/**
 * Admitting what the sh hook (`bin/blue-agent-hook`) handed over. The hook only bounds the payload and puts it, with
 * the names it was given, into the spool's inbox; here each inbox file is checked as `capture` checks a capture (the
 * harness, the profile, every payload field) and becomes an intake record, or is refused with a line in capture.log.
 * Every drain admits first, so a hand-over is never lost to a drain that did not start: the next one admits it.
 *
 * An inbox file's record id is derived from the file (its name, inode and time), so an admission cut short after the
 * record was written is recognised by the next drain and not spooled twice.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Context } from '../context.js';
import { BlueError, toBlueError } from '@blue-agent/contract/errors.js';
import { HARNESSES } from '../harnesses/names.js';
import type { HookPayload } from '../harnesses/types.js';
import type { InboxClaim, Spool, WaitForExit } from '../spool/index.js';
import { harnessProcess } from './harness-process.js';
import { appendCaptureLog, safeName } from './log.js';
import { MAX_PAYLOAD_BYTES, PayloadRefused, payloadFromBytes } from './payload.js';
import { checkProfile, refused } from './profiles.js';

/** The first line of every inbox file; a file without it is not the hook's. */
export const HOOK_FORMAT = 'blue-agent-hook-v1';
/** Inbox files one drain admits at most (the rest wait for the next drain). */
export const MAX_ADMITTED = 1000;
const MAX_HEADER_BYTES = 4096;

export interface Admitted {
  /** Records spooled into intake. */
  admitted: string[];
  refused: number;
}

export async function admitHookCaptures(ctx: Context, spool: Spool): Promise<Admitted> {
  const result: Admitted = { admitted: [], refused: 0 };
  const claims = await spool.claimInbox(MAX_ADMITTED);
  let known: Set<string> | undefined;
  for (const [index, claim] of claims.entries()) {
    let header: HookHeader | undefined;
    const hookPid = Number(claim.name.slice(0, claim.name.indexOf('-')));
    try {
      const bytes = await readInboxFile(claim.file);
      header = parseHeader(bytes);
      const id = recordId(claim);
      // A dead drain may have written the record before it could remove the file (listed once per batch).
      if (claim.takenOver && (known ??= await spool.recordIds()).has(id)) {
        await spool.finishInbox(claim);
        continue;
      }
      if (!(HARNESSES as readonly string[]).includes(header.harness)) {
        throw refused(`unknown harness "${safeName(header.harness)}"; expected one of ${HARNESSES.join(', ')}`);
      }
      const interval = await checkProfile(ctx, header.harness, header.profile);
      const payload: HookPayload = payloadFromBytes(bytes.subarray(header.end));
      const waitForExit = interval.capture?.wait_for_exit === true ? harnessOf(header) : undefined;
      const record = await spool.enqueueIntake({
        id,
        harness: header.harness,
        profile: header.profile,
        payload,
        createdAtUnixMs: Math.round(claim.mtimeMs),
        ...(waitForExit === undefined ? {} : { waitForExit }),
      });
      await appendCaptureLog(ctx.paths.captureLogFile, {
        event: 'spooled',
        harness: header.harness,
        profile: header.profile,
        session_id: payload.session_id,
        record: record.id,
        ...(waitForExit === undefined ? {} : { waits_for_pid: waitForExit.pid }),
        worker_pid: process.pid,
        hook_pid: hookPid,
      });
      result.admitted.push(record.id);
      await spool.finishInbox(claim);
    } catch (error) {
      const refusal =
        error instanceof PayloadRefused || (error instanceof BlueError && error.code === 'CAPTURE_REFUSED');
      if (!refusal) {
        // A full disk, profiles that cannot be read: this file and the rest wait for the next drain, and this drain
        // goes on to build and upload what the spool holds (an upload frees the disk).
        const blue = toBlueError(error);
        await appendCaptureLog(ctx.paths.captureLogFile, {
          event: 'failed',
          harness: safeName(header?.harness),
          profile: safeName(header?.profile),
          code: blue.code,
          reason: `the capture was not admitted yet: ${blue.message}`,
          hook_pid: hookPid,
        });
        for (const rest of claims.slice(index)) await spool.releaseInbox(rest);
        break;
      }
      const blue =
        error instanceof PayloadRefused ? new BlueError('CAPTURE_REFUSED', error.message) : toBlueError(error);
      await appendCaptureLog(ctx.paths.captureLogFile, {
        event: 'refused',
        harness: safeName(header?.harness),
        profile: safeName(header?.profile),
        code: blue.code,
        reason: blue.hint === undefined ? blue.message : `${blue.message}. ${blue.hint}`,
        hook_pid: hookPid,
      });
      result.refused++;
      await spool.finishInbox(claim);
    }
  }
  return result;
}

interface HookHeader {
  harness: string;
  profile: string;
  /** The hook's parent process, and (Linux) the harness above it with its start ticks. */
  parent?: number;
  wait?: { pid: number; procStart: string };
  /** Where the payload starts. */
  end: number;
}

/** What cannot be the hook's file under its name: refused and removed, never a reason to stop admitting. */
const NOT_A_FILE = new Set(['ELOOP', 'EISDIR', 'ENOTDIR', 'EACCES', 'EPERM', 'ENXIO', 'ENODEV', 'EOPNOTSUPP']);

async function readInboxFile(file: string): Promise<Buffer> {
  let handle;
  try {
    handle = await open(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? '';
    if (NOT_A_FILE.has(code))
      throw refused(`the inbox holds something that is not the hook's file under its name (${code})`);
    throw error;
  }
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw refused('the hook left something that is not a file in the inbox');
    const limit = MAX_HEADER_BYTES + MAX_PAYLOAD_BYTES + 1;
    if (info.size > limit) throw new PayloadRefused(`the payload on stdin is larger than ${MAX_PAYLOAD_BYTES} bytes`);
    const buffer = Buffer.alloc(info.size);
    const { bytesRead } = await handle.read(buffer, 0, info.size, 0);
    return buffer.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

/** The hook's lines before the blank line: `blue-agent-hook-v1`, then `key=value`. */
function parseHeader(bytes: Buffer): HookHeader {
  const end = bytes.subarray(0, MAX_HEADER_BYTES).indexOf('\n\n');
  const lines = end < 0 ? [] : bytes.subarray(0, end).toString('utf8').split('\n');
  if (lines[0] !== HOOK_FORMAT)
    throw refused(`the hook's file does not start with ${HOOK_FORMAT} (written by another blue-agent, or cut short)`);
  const fields = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const at = line.indexOf('=');
    if (at > 0) fields.set(line.slice(0, at), line.slice(at + 1));
  }
  const harness = fields.get('harness') ?? '';
  const profile = fields.get('profile') ?? '';
  if (harness === '' || profile === '') throw refused('the hook was not given --harness and --profile');
  const header: HookHeader = { harness, profile, end: end + 2 };
  const parent = Number(fields.get('parent'));
  if (Number.isSafeInteger(parent) && parent > 1) header.parent = parent;
  const wait = /^(\d{1,10}) (\d{1,20})$/.exec(fields.get('wait') ?? '');
  if (wait !== null && Number(wait[1]) > 1) header.wait = { pid: Number(wait[1]), procStart: wait[2]! };
  return header;
}

/** The harness a capture waits for: found by the hook where /proc shows it, else asked of `ps` now. */
function harnessOf(header: HookHeader): WaitForExit | undefined {
  if (header.wait !== undefined) return { pid: header.wait.pid, proc_start: header.wait.procStart };
  if (process.platform === 'linux' || header.parent === undefined) return undefined;
  return harnessProcess(header.parent);
}

/** A record id (as the spool's: base-36 time, 40 bits) that the same inbox file always gets. */
function recordId(claim: InboxClaim): string {
  const time = Math.max(0, Math.trunc(claim.mtimeMs)).toString(36).padStart(9, '0').slice(-9);
  const digest = createHash('sha256')
    .update(`${claim.name}\0${claim.ino}\0${Math.trunc(claim.mtimeMs)}`)
    .digest('hex');
  return `${time}-${digest.slice(0, 10)}`;
}
