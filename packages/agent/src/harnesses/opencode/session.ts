/**
 * OpenCode keeps sessions in its SQLite database, which is never read directly: the session is captured as the
 * output of `opencode export <id>` (JSON `{info, messages: [{info, parts}]}` on stdout, `Exporting session: <id>` on
 * stderr), run from the session's directory with the agent's environment, bounded in time and size. The bytes are
 * kept exactly as printed; they are restored through `opencode import`, so there is no native path.
 *
 * Title: `info.title`, unless it is OpenCode's placeholder (`New session - <ISO time>` / `Child session - <ISO time>`,
 * the same pattern OpenCode uses to decide a session still needs a title). Preview and fallback title: the first user
 * message's text parts that OpenCode did not add itself (`synthetic` / `ignored` parts).
 */
import type { Context } from '../../context.js';
import { isRecord } from '@blue-agent/contract/util/record.js';
import { firstUserTurn, nativeMetadataOf, titleAndSummary, type NativeMetadata } from '../../harness-kit/title.js';
import { findExecutable } from '@blue-agent/contract/util/executable.js';
import type { CollectedSession, CollectInput, SessionFile } from '../types.js';
import { artifactInvalid, assertSessionId, checkRoleCounts, MAX_FILE_BYTES } from '../../harness-kit/session-files.js';
import { opencodeTranscriptReader } from '@blue-agent/contract/harnesses/opencode/transcript.js';

export const EXPORT_TIMEOUT_MS = 60_000;
const RUN_GRACE_MS = 2_000;
const DEFAULT_TITLE = /^(New session - |Child session - )\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

export interface OpencodeCollectOptions {
  timeoutMs?: number;
}

export async function collectOpencodeSession(
  ctx: Context,
  input: CollectInput,
  options: OpencodeCollectOptions = {},
): Promise<CollectedSession> {
  const { payload, interval } = input;
  const id = payload.session_id;
  assertSessionId(id, 'opencode export');
  const bin = await findExecutable('opencode', ctx.env.PATH);
  const what = `opencode export ${id}`;
  if (bin === undefined) {
    throw artifactInvalid(
      what,
      'the opencode binary is not on PATH',
      'Install OpenCode, or run blue-agent with the PATH OpenCode runs with.',
    );
  }
  const cwd = payload.cwd ?? ctx.cwd;
  const timeoutMs = options.timeoutMs ?? EXPORT_TIMEOUT_MS;
  const run = ctx.run(bin, ['export', id], {
    timeoutMs,
    cwd,
    env: ctx.env,
    // One byte over the cap shows that the output was cut.
    maxOutputBytes: MAX_FILE_BYTES + 1,
  });
  // The runner kills the process it started at the deadline, but a helper that process left behind can keep its
  // output open; the wait ends at the deadline plus a grace period all the same.
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs + RUN_GRACE_MS);
  });
  const outcome = await Promise.race([run, deadline]).finally(() => clearTimeout(timer));
  const result = outcome === 'late' ? { exitCode: undefined, stdout: '', stderr: '', timedOut: true } : outcome;
  const stdout = result.stdout;
  const size = Buffer.byteLength(stdout, 'utf8');
  if ('spawnError' in result && result.spawnError !== undefined) {
    throw artifactInvalid(
      what,
      `could not start ${bin} in ${cwd} (${result.spawnError})`,
      'Check that the session directory still exists and that the OpenCode binary runs.',
    );
  }
  if (result.timedOut) {
    throw artifactInvalid(
      what,
      `did not finish within ${timeoutMs} ms`,
      'OpenCode may be waiting on its database; capture the session again when OpenCode is idle.',
    );
  }
  if (size > MAX_FILE_BYTES) {
    throw artifactInvalid(
      what,
      `printed more than ${MAX_FILE_BYTES} bytes (64 MiB), the limit for one file`,
      'Blue bundles hold files of at most 64 MiB; this session cannot be captured whole.',
    );
  }
  if (result.exitCode !== 0) {
    const detail = result.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 500);
    throw artifactInvalid(
      what,
      `exited with ${String(result.exitCode)}${detail === '' ? '' : `: ${detail}`}`,
      'Check that the session still exists (`opencode session list`) and that OpenCode runs.',
    );
  }
  let doc: unknown;
  try {
    doc = JSON.parse(stdout);
  } catch (error) {
    throw artifactInvalid(
      what,
      `did not print JSON (${(error as Error).message})`,
      "OpenCode's export format changed or the command failed; check `opencode export` by hand.",
    );
  }
  if (!isRecord(doc) || !isRecord(doc.info) || !Array.isArray(doc.messages)) {
    throw artifactInvalid(
      what,
      'printed JSON without {info, messages}',
      "OpenCode's export format changed; use a blue-agent version whose profile matches this OpenCode.",
    );
  }
  if (doc.info.id !== id) {
    throw artifactInvalid(
      what,
      `exported session ${String(doc.info.id)}, not ${id}`,
      'OpenCode exported another session; capture the session again.',
    );
  }

  const files: SessionFile[] = [
    { role: 'portable_export', name: 'export.json', content: new TextEncoder().encode(stdout) },
  ];
  checkRoleCounts(interval, files, what);
  const found = nativeMetadataOf(doc.info, id);
  const native: NativeMetadata = {
    ...(found?.title !== undefined && !DEFAULT_TITLE.test(found.title) ? { title: found.title } : {}),
    ...(found?.preview !== undefined ? { preview: found.preview } : {}),
  };
  const recorded = typeof doc.info.directory === 'string' && doc.info.directory !== '' ? doc.info.directory : undefined;
  const sessionCwd = payload.cwd ?? recorded;
  ctx.logger.debug('opencode session collected', { session: id, bytes: size });
  return {
    sessionId: id,
    ...(sessionCwd === undefined ? {} : { cwd: sessionCwd }),
    files,
    ...titleAndSummary({ native, firstUserTurn: firstUserTurn(doc.messages, opencodeTranscriptReader.userTurn) }),
  };
}
