/**
 * `blue-agent bundle create`: builds a bundle from a session on this machine, the way a capture would, without going
 * through the spool. For debugging captures and for looking at what would be uploaded.
 */
import path from 'node:path';
import { assembleBundle, captureInterval } from '../drain/assemble.js';
import { parsePayload, PayloadRefused } from '../capture/payload.js';
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { BlueError, fromSystemError, isSystemError, type SystemError } from '@blue-agent/contract/errors.js';
import { HARNESSES } from '../harnesses/names.js';
import { detectVersion, findExecutable, VersionCache } from '../profiles/detect.js';
import { loadProfiles, requireProfiles, selectInterval, type ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { DocumentCache } from '@blue-agent/contract/schema/document-cache.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';

export interface BundleCreateOptions {
  harness: string;
  session: string;
  out: string;
  profile?: string;
  cwd?: string;
  transcript?: string;
  json?: boolean;
}

export async function bundleCreateCommand(ctx: Context, opts: BundleCreateOptions): Promise<number> {
  if (!(HARNESSES as readonly string[]).includes(opts.harness)) {
    throw new BlueError('USAGE', `unknown harness "${opts.harness}"`, { hint: `Use one of: ${HARNESSES.join(', ')}.` });
  }
  const harness = opts.harness as HarnessName;
  // The same rules as a hook payload: a session id and absolute paths.
  let payload;
  try {
    payload = parsePayload(
      JSON.stringify({
        session_id: opts.session,
        ...(opts.cwd === undefined ? {} : { cwd: path.resolve(ctx.cwd, opts.cwd) }),
        ...(opts.transcript === undefined ? {} : { transcript_path: path.resolve(ctx.cwd, opts.transcript) }),
      }),
    );
  } catch (error) {
    if (error instanceof PayloadRefused)
      throw new BlueError('USAGE', error.message.replace(/^session_id/, '--session'), {
        hint: 'Run `blue-agent bundle create --help`.',
      });
    throw error;
  }
  const documents = await DocumentCache.open(ctx.paths.documentCacheFile, true);
  const profiles = await loadProfiles(ctx.paths.profilesDir, documents);
  await documents.save().catch(() => undefined);
  const profile = opts.profile ?? (await installedProfile(ctx, profiles, harness));
  const { interval } = captureInterval(profiles, harness, profile);
  const out = path.resolve(ctx.cwd, opts.out);
  const result = await assembleBundle(
    ctx,
    { harness, interval, payload, capturedAtUnixMs: ctx.clock.now() },
    out,
    profiles,
  ).catch((error: unknown) => {
    throw isSystemError(error) && aboutOutput(error, out)
      ? fromSystemError(error, { action: 'write the bundle to', file: out })
      : error;
  });
  if (opts.json === true) {
    ctx.stdout.write(
      `${JSON.stringify(
        { ok: true, file: out, size: result.size, sha256: result.sha256, manifest: result.manifest },
        null,
        2,
      )}\n`,
    );
  } else {
    const m = result.manifest;
    ctx.stdout.write(
      [
        `wrote ${out}`,
        `  ${m.harness} session ${m.native_session_id} (${m.compatibility_profile}), ${m.files.length} file` +
          `${m.files.length === 1 ? '' : 's'}`,
        ...(m.title === undefined ? [] : [`  title: ${m.title}`]),
        `  ${result.size} bytes, sha256 ${result.sha256}`,
        '',
      ].join('\n'),
    );
  }
  return 0;
}

/** The profile of the installed harness version, found the way reconcile finds it. */
async function installedProfile(ctx: Context, profiles: ProfileSet, harness: HarnessName): Promise<string> {
  const loaded = requireProfiles(profiles, harness);
  const { config } = await loadAgentConfig(ctx);
  const binary = config.harnesses?.[harness]?.binary ?? (await findExecutable(loaded.doc.binary, ctx.env.PATH));
  if (binary === undefined) {
    throw new BlueError(
      'USAGE',
      `${loaded.doc.display_name} (\`${loaded.doc.binary}\`) was not found on PATH, so its profile is unknown`,
      {
        hint: 'Name the profile with --profile (see `blue-agent profiles list`).',
      },
    );
  }
  const cache = await VersionCache.open(ctx);
  const found = await detectVersion(ctx, loaded, binary, cache);
  await cache.save().catch(() => undefined);
  const choice = selectInterval(loaded.doc, found.version);
  if (choice === undefined) {
    throw new BlueError(
      'PROFILE_UNKNOWN',
      `${loaded.doc.display_name} ${found.version} is outside every compatibility profile`,
      {
        hint: 'Name the profile with --profile (see `blue-agent profiles list`).',
      },
    );
  }
  return choice.interval.profile;
}

/** Writes through a handle name no path, but the bundle (and its temporary beside it) is all this command writes. */
const HANDLE_WRITES = new Set(['write', 'writev', 'fsync', 'fdatasync', 'ftruncate', 'close']);

/** Whether a failed call was on `out`: the file itself, its folder, the temporary written beside it, or a write. */
function aboutOutput(error: SystemError, out: string): boolean {
  if (error.path === undefined && error.dest === undefined)
    return error.syscall !== undefined && HANDLE_WRITES.has(error.syscall);
  const name = path.basename(out);
  return [error.path, error.dest].some(
    (p) =>
      p !== undefined &&
      (p === out ||
        p === path.dirname(out) ||
        (path.dirname(p) === path.dirname(out) && path.basename(p).startsWith(`.${name}.`))),
  );
}
