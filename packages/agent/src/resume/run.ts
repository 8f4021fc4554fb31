/**
 * `blue-agent resume`: pick (or name) a session, choose where it goes, download it through a fresh short-lived URL,
 * verify it, check that this machine can resume it, restore it only on an explicit yes, then hand the terminal to the
 * harness's native resume. Until the restore itself, nothing is written: a cancel or a failure removes the download
 * and the staging and leaves the machine as it was.
 */
import { mkdtemp, realpath, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { formatBytes, readManifest, verifyBundle } from '@blue-agent/contract/bundle/index.js';
import { readRepository } from '../drain/repository.js';
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { resolvePolicy } from '../policy/index.js';
import { detectVersion, findExecutable, VersionCache } from '../profiles/detect.js';
import { findInterval, loadProfiles, requireProfiles } from '@blue-agent/contract/profiles/index.js';
import { applyRestore, prepareRestore, recoverRestores } from '../restore/index.js';
import { printable, SessionsApi, type CapturedSession } from '../control-api/sessions.js';
import {
  compareRepository,
  decideDestination,
  decideMode,
  destinationNeeded,
  eligibility,
  launchLine,
  mismatchQuestion,
  repositoryRefused,
  type RepositoryCheck,
  type ResumeOptions,
} from './flow.js';
import { launch } from './launch.js';
import { pickSession } from './picker.js';
import { progressBar } from './progress.js';
import { askDestination, checkDirectory, confirm } from './prompts.js';
import { colours, isInteractive } from './terminal.js';

/** How many of a search's best matches the picker shows beside its own list. */
const PICKER_SEARCH_LIMIT = 50;

/** Thrown when the person says no or cancels: reported as one calm line, exit 1. */
export class Cancelled extends Error {
  constructor(readonly why: string) {
    super(why);
  }
}

export interface ResumeReport {
  ok: true;
  /** True when nothing was written (--json without --yes). */
  dry_run: boolean;
  /** The captured session's id on the Control API. */
  id: string;
  /** The harness's own id of the restored session. */
  session_id: string;
  harness: string;
  profile: string;
  destination: string;
  /** Native files written (or, for a plan, that would be written). */
  restored: string[];
  /** Native indexes the session was entered in (or would be). */
  merged: string[];
  /** Files whose bytes the restore changes for this destination (the profile's restore_rewrite), and what changes. */
  rewritten: { file: string; what: string }[];
  /** `identical`: the session is already here with the same content. */
  collision: 'none' | 'identical' | 'different';
  repository: RepositoryCheck['kind'];
  command: string[];
}

export async function resume(ctx: Context, id: string | undefined, options: ResumeOptions): Promise<number> {
  const mode = decideMode(id, options, isInteractive(ctx));
  const current = await realpath(ctx.cwd).catch(() => path.resolve(ctx.cwd));
  let given: string | undefined;
  if (options.dest !== undefined) {
    const checked = await checkDirectory(options.dest, current, ctx.paths.home);
    if ('problem' in checked)
      throw new BlueError('DESTINATION_INVALID', `--dest ${printable(options.dest)}: ${checked.problem}`, {
        hint: 'Give an existing directory.',
        exitCode: 2,
      });
    given = await realpath(checked.dir);
  }
  const c = colours(ctx);
  const say = (line: string) => void (mode.json ? undefined : ctx.stderr.write(`${line}\n`));

  // A restore cut short by a crash is finished or undone before anything else.
  const recovered = await recoverRestores(ctx);
  if (recovered.rolledBack.length > 0)
    say(
      `Rolled back ${recovered.rolledBack.length} interrupted restore${recovered.rolledBack.length === 1 ? '' : 's'}.`,
    );
  if (recovered.completed.length > 0)
    say(`Completed ${recovered.completed.length} interrupted restore${recovered.completed.length === 1 ? '' : 's'}.`);
  for (const warning of recovered.warnings ?? []) say(c.red(`Kept: ${printable(warning)}`));

  const { config } = await loadAgentConfig(ctx);
  const api = await SessionsApi.fromContext(ctx);
  const cleanups: (() => Promise<unknown>)[] = [];
  const interrupts = new Interrupts(cleanups);
  interrupts.install();
  try {
    // 1. Which session.
    let upload: CapturedSession | undefined;
    if (id !== undefined) {
      upload = await api.resolveForResume(id);
    } else {
      // The picker's listing: what the caller owns or was shared with them, resumable; each item says `shared`.
      const listed = await api.list({ resumable: true });
      const usable = (u: CapturedSession) => !api.expired(u) && (u.status === null || u.status === 'complete');
      const sessions = listed.items.filter(usable);
      if (sessions.length === 0) {
        ctx.stderr.write('There is no session you own or that was shared with you that can be resumed.\n');
        return 1;
      }
      // Typing searches what sessions say as well (the server's index), each match with its snippet.
      const search = async (q: string) =>
        (await api.search({ resumable: true, q }, PICKER_SEARCH_LIMIT)).filter(usable);
      upload = await pickSession(ctx, sessions, listed.truncated, search);
      if (upload === undefined) throw new Cancelled('no session chosen');
    }
    say(`${c.bold('Session')}  ${describe(upload)}`);

    // 2. Where it goes.
    const recorded = upload.cwd;
    const recordedReal = recorded === null ? null : await realpath(recorded).catch(() => recorded);
    const recordedExists = recordedReal !== null && (await isDirectory(recordedReal));
    const decision = decideDestination(given, current, recordedReal);
    let destination: string;
    if (decision.kind === 'ask') {
      if (!mode.interactive) throw destinationNeeded(current, decision.recorded, recordedExists);
      const chosen = await askDestination(ctx, current, decision.recorded, recordedExists);
      if (chosen === undefined) throw new Cancelled('no destination chosen');
      destination = await realpath(chosen).catch(() => chosen);
    } else {
      destination = decision.dir;
    }
    say(
      `${c.bold('Destination')}  ${printable(destination)}` +
        `${recorded !== null && destination !== recordedReal ? c.dim(` (recorded in ${printable(recorded)})`) : ''}`,
    );

    // 3. Download (a fresh signed URL; size and SHA-256 checked when the Control API states them), then verify the
    //    bundle itself by the profile the manifest names: every file against the manifest's size and digest.
    const tmpRoot = ctx.env.TMPDIR !== undefined && path.isAbsolute(ctx.env.TMPDIR) ? ctx.env.TMPDIR : tmpdir();
    const work = await mkdtemp(path.join(tmpRoot, 'blue-agent-resume-'));
    cleanups.push(() => rm(work, { recursive: true, force: true }));
    const bundleFile = path.join(work, 'bundle.tar.gz');
    const bar = progressBar(ctx, 'Downloading');
    try {
      await api.download(upload, bundleFile, (p) => bar.update(p.received, p.total));
    } finally {
      bar.done();
    }
    const profiles = await loadProfiles(ctx.paths.profilesDir);
    const manifest = await readManifest(bundleFile);
    const found = findInterval(profiles, manifest.compatibility_profile);
    if (found === undefined || !found.interval.operations.includes('session_resume')) {
      throw new BlueError(
        'SESSION_NOT_RESUMABLE',
        `session ${upload.id} was captured under profile ${printable(manifest.compatibility_profile)}, which ` +
          `${found === undefined ? 'this blue-agent does not know' : 'does not support session_resume'}`,
        {
          hint:
            'The bundle can still be downloaded or exported (`blue-agent sessions export`), but not resumed ' +
            'here. Nothing was changed.',
        },
      );
    }
    if (manifest.harness !== upload.harness || manifest.native_session_id !== upload.native_session_id) {
      throw new BlueError(
        'BUNDLE_INVALID',
        `the bundle of ${upload.id} holds ${printable(manifest.harness)} session ` +
          `${printable(manifest.native_session_id)}, but the Control API lists ${upload.harness} session ` +
          `${upload.native_session_id}`,
        {
          hint: 'Do not restore it; tell the Control API administrator. Nothing was changed.',
        },
      );
    }
    const verified = await verifyBundle(bundleFile, { profiles });
    say(
      `${c.bold('Bundle')}  verified: ${verified.manifest.files.length} file` +
        `${verified.manifest.files.length === 1 ? '' : 's'}, ${formatBytes(verified.size)}, profile ` +
        `${manifest.compatibility_profile}`,
    );

    // 4. Preflight: the harness, its version under the policy, the repository. Nothing written yet.
    const harness = found.harness;
    const loaded = requireProfiles(profiles, harness);
    const binary = config.harnesses?.[harness]?.binary ?? (await findExecutable(loaded.doc.binary, ctx.env.PATH));
    if (binary === undefined) {
      throw new BlueError(
        'HARNESS_NOT_INSTALLED',
        `${loaded.doc.display_name} (\`${loaded.doc.binary}\`) is not installed here: it was not found on PATH`,
        {
          hint:
            `Install ${loaded.doc.display_name} ${found.interval.introduced} or newer, then run resume again. ` +
            `Nothing was changed.`,
        },
      );
    }
    const cache = await VersionCache.open(ctx);
    const detected = await detectVersion(ctx, loaded, binary, cache);
    const resolved = await resolvePolicy(ctx, { dryRun: true, config });
    const eligible = eligibility(harness, loaded.doc, found.interval, detected.version, resolved.policy);
    if (!eligible.ok) throw eligible.error;
    say(
      `${c.bold('Harness')}  ${loaded.doc.display_name} ${detected.version} at ${printable(detected.path)}` +
        `${eligible.note}`,
    );

    const repository = compareRepository(manifest.repository, await readRepository(ctx, destination));
    if (repository.kind === 'mismatch') {
      if (!mode.interactive) throw repositoryRefused(repository, 'no-terminal');
      say(
        c.red(
          `The session was recorded in a clone of ${printable(repository.recorded)}, but ${printable(repository.why)}.`,
        ),
      );
      if (!(await confirm(ctx, mismatchQuestion(repository)))) throw repositoryRefused(repository, 'declined');
    } else if (repository.kind === 'same') {
      say(`${c.bold('Repository')}  ${printable(repository.remote)}`);
    }

    // 5. The restore plan (staged, nothing placed yet).
    const prepared = await prepareRestore(ctx, {
      bundleFile,
      destination,
      profiles,
      installedVersion: detected.version,
    });
    cleanups.push(() => prepared.dispose());
    if (prepared.collision === 'different') {
      const first = prepared.summary.conflicts[0];
      throw new BlueError(
        'RESTORE_CONFLICT',
        `${loaded.doc.display_name} already has a session ${prepared.sessionId} on this machine` +
          `${first === undefined ? ' with different content' : `: ${printable(first.path)}: ${printable(first.why)}`}`,
        {
          ...(first !== undefined && path.isAbsolute(first.path) ? { file: first.path } : {}),
          hint:
            `${first?.hint ?? 'It is never overwritten. Resume the local session as it is, or move it away first.'} ` +
            `Nothing was changed.`,
        },
      );
    }
    const line = launchLine(destination, prepared.resumeArgv);
    const planned = describePlan(prepared);
    const nothingToWrite = 'already on this machine with the same content: nothing to write';
    say(`${c.bold('Restore')}  ${prepared.collision === 'identical' ? nothingToWrite : planned}`);
    say(`${c.bold('Command')}  ${printable(line)}`);

    const report = (restored: string[], merged: string[], dryRun: boolean): ResumeReport => ({
      ok: true,
      dry_run: dryRun,
      id: upload.id,
      session_id: prepared.sessionId,
      harness,
      profile: manifest.compatibility_profile,
      destination,
      restored,
      merged,
      rewritten: prepared.summary.rewritten,
      collision: prepared.collision,
      repository: repository.kind,
      command: prepared.resumeArgv,
    });

    if (mode.planOnly) {
      const plan = planFiles(prepared);
      ctx.stdout.write(`${JSON.stringify(report(plan.restored, plan.merged, true), null, 2)}\n`);
      return 0;
    }

    // 6. The explicit choice. Default: keep things as they are.
    if (!mode.yes) {
      if (!mode.interactive) {
        throw new BlueError(
          'RESUME_CANCELLED',
          'nothing was restored: there is no terminal to confirm on and --yes was not given',
          {
            hint: 'Pass --yes to restore without a question, or --json for the plan alone.',
          },
        );
      }
      const question = mode.launch ? `Restore and launch ${loaded.doc.display_name}?` : 'Restore the session?';
      if (!(await confirm(ctx, question))) throw new Cancelled('not restored');
    }
    if (!(await isDirectory(destination))) {
      throw new BlueError('DESTINATION_INVALID', `the destination ${printable(destination)} no longer exists`, {
        hint: 'Nothing was changed. Choose an existing directory and run resume again.',
      });
    }

    // 7. Restore (atomic, rolled back by the engine on failure), then launch or print.
    const result = await interrupts.during(applyRestore(ctx, prepared));
    await cache.save().catch(() => undefined);
    await runCleanups(cleanups);
    const argv = result.resumeArgv.length > 0 ? result.resumeArgv : prepared.resumeArgv;
    const finalLine = launchLine(destination, argv);
    if (mode.json) {
      const restored = { ...report(result.placed, result.merged, false), session_id: result.sessionId, command: argv };
      ctx.stdout.write(`${JSON.stringify(restored, null, 2)}\n`);
      return 0;
    }
    const merged = result.merged.length;
    say(
      `Restored ${result.placed.length} file${result.placed.length === 1 ? '' : 's'}` +
        `${merged > 0 ? ` and ${merged} index entr${merged === 1 ? 'y' : 'ies'}` : ''}.`,
    );
    if (!mode.launch) {
      if (options.launch !== false) say('Not a terminal: run this to resume the session.');
      ctx.stdout.write(`${finalLine}\n`);
      return 0;
    }
    say(c.dim(`Launching: ${printable(finalLine)}`));
    // From here the terminal's signals are the harness's (launch waits for it).
    interrupts.dispose();
    return await launch(ctx, argv[0] === loaded.doc.binary ? binary : argv[0]!, argv, destination);
  } finally {
    interrupts.dispose();
    await runCleanups(cleanups);
    await api.close().catch(() => undefined);
  }
}

/**
 * Ctrl-C or SIGTERM while the flow runs (download, verify, preflight, apply): the cleanups still run (the download
 * folder, the staging), then the process exits 130 or 143. During apply the engine is let finish first — it either
 * commits or rolls back what it placed itself, and its journal covers a crash meanwhile — so the staging it links
 * from is never removed under it; only then do the cleanups run. A second signal while waiting exits at once and
 * leaves the rest to the journal (the next `resume` recovers it).
 */
class Interrupts {
  private applying: Promise<unknown> | undefined;
  private received: NodeJS.Signals | undefined;
  private readonly handler = (signal: NodeJS.Signals) => this.onSignal(signal);

  constructor(private readonly cleanups: (() => Promise<unknown>)[]) {}

  install(): void {
    process.on('SIGINT', this.handler);
    process.on('SIGTERM', this.handler);
  }

  dispose(): void {
    process.off('SIGINT', this.handler);
    process.off('SIGTERM', this.handler);
  }

  /** Runs the apply step; when a signal came meanwhile, never returns (the handler exits once cleanups are done). */
  async during<T>(step: Promise<T>): Promise<T> {
    this.applying = step;
    try {
      return await step;
    } finally {
      this.applying = undefined;
      if (this.received !== undefined) await new Promise<never>(() => undefined);
    }
  }

  private onSignal(signal: NodeJS.Signals): void {
    const code = signal === 'SIGINT' ? 130 : 143;
    if (this.received !== undefined) {
      if (this.applying !== undefined) process.exit(code);
      return;
    }
    this.received = signal;
    const settled =
      this.applying === undefined
        ? Promise.resolve()
        : this.applying.then(
            () => undefined,
            () => undefined,
          );
    void settled.then(() => runCleanups(this.cleanups)).finally(() => process.exit(code));
  }
}

async function runCleanups(cleanups: (() => Promise<unknown>)[]): Promise<void> {
  while (cleanups.length > 0) await cleanups.pop()!().catch(() => undefined);
}

async function isDirectory(dir: string): Promise<boolean> {
  return (await stat(dir).catch(() => undefined))?.isDirectory() === true;
}

function describe(upload: CapturedSession): string {
  // The picker's listing says `shared` (the caller is not the owner); resume takes nothing else.
  const owner = upload.shared === true ? `shared by ${upload.user_email}` : 'yours';
  return (
    `${printable(upload.title ?? upload.native_session_id)} — ${upload.harness}, ${owner}, updated ` +
    `${upload.updated_at} (${upload.id})`
  );
}

type Prepared = Awaited<ReturnType<typeof prepareRestore>>;

/** What the engine would write: files placed and indexes merged, as paths. */
function planFiles(prepared: Prepared): { restored: string[]; merged: string[] } {
  return { restored: [...prepared.summary.create], merged: [...prepared.summary.indexes] };
}

function describePlan(prepared: Prepared): string {
  const { restored, merged } = planFiles(prepared);
  const parts = [
    `${restored.length} file${restored.length === 1 ? '' : 's'} to write under ${printable(prepared.plan.root)}`,
  ];
  if (merged.length > 0) parts.push(`${merged.length} index${merged.length === 1 ? '' : 'es'} to update`);
  if (prepared.summary.identical.length > 0) parts.push(`${prepared.summary.identical.length} already here`);
  if (prepared.summary.rewritten.length > 0)
    parts.push(
      `${prepared.summary.rewritten.length} rewritten for this folder (` +
        `${[...new Set(prepared.summary.rewritten.map((r) => printable(r.what)))].join('; ')})`,
    );
  if (prepared.summary.import !== undefined)
    parts.push(`imported with \`${prepared.summary.import.map(printable).join(' ')}\``);
  return parts.join(', ');
}
