/** Runs the demo's steps in order on two demo machines and one local Control API, then cleans up. */
import { chmod, mkdir, mkdtemp, realpath, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { resolvePaths, type Context } from '../context.js';
import { demoHarness } from '../harnesses/index.js';
import { launchLine } from '../resume/flow.js';
import { demoLayout, machineEnv, standInScript, type MachineLayout } from './layout.js';
import { installRecordedSession, readRecordedAsset } from './session.js';
import {
  STEPS,
  DemoStepError,
  type DemoOptions,
  type DemoReport,
  ACTION_WORDS,
  StepRunner,
  cause,
  causeOf,
  throwIfAborted,
  listenCause,
} from './steps.js';
import {
  type Machine,
  childRunner,
  managedHook,
  captureCode,
  readCaptureLog,
  waitForExit,
  stopWorker,
  sameBytes,
  arrayLength,
  oneLine,
  short,
} from './child.js';

export const DEMO_USER = 'demo@example.invalid';

/** Runs the demo; always cleans up. Throws a DemoStepError (with `report` attached) when a step fails. */
export async function runDemo(ctx: Context, options: DemoOptions): Promise<DemoReport> {
  const asset = await readRecordedAsset(ctx.paths.demoDir);
  const harness = demoHarness();
  const { displayName: name, demo } = harness;
  const root = await realpath(await mkdtemp(path.join(tmpdir(), 'blue-agent-demo-')));
  const layout = demoLayout(root);
  const machine = (m: MachineLayout): Machine => {
    const env = machineEnv(layout, m, ctx.self.node);
    return { layout: m, env, paths: resolvePaths(env, ctx.platform) };
  };
  const a = machine(layout.a);
  const b = machine(layout.b);
  const report: DemoReport = {
    ok: false,
    root,
    kept: options.keep,
    control_url: null,
    recorded: {
      harness: asset.harness,
      version: asset.version,
      session_id: asset.sessionId,
      prompt: asset.prompt,
      stand_in: path.join(layout.bin, demo.binary),
    },
    steps: [],
    session: null,
  };
  const cleanups: (() => Promise<unknown>)[] = [];
  const run = new StepRunner(report, options);
  try {
    for (const dir of [layout.bin, layout.tmp, a.layout.home, a.layout.workDir, b.layout.home, b.layout.workDir])
      await mkdir(dir, { recursive: true, mode: 0o700 });
    options.onStart?.({ root, asset });
    const child = childRunner(ctx);

    // 1. The reference Control API, with one user and a policy that captures.
    const api = await run.step('control-api', async () => {
      const { createControlServer } = await import('@blue-agent/control-api/server.js');
      const { createLocalBlobStore } = await import('@blue-agent/control-api/blobs/local.js');
      const { loadProfiles } = await import('@blue-agent/contract/profiles/index.js');
      const { harnessMetadataDocument, knownProfiles } = await import('@blue-agent/control-api/harness-metadata.js');
      const { openStore } = await import('@blue-agent/control-api/store/index.js');
      const profiles = await loadProfiles(resolvePaths({}, ctx.platform).profilesDir);
      const server = createControlServer({
        store: await openStore({ dataDir: layout.controlData }),
        harnessMetadata: harnessMetadataDocument(profiles),
        profiles: knownProfiles(profiles),
        blobs: (publicUrl) => createLocalBlobStore({ dir: path.join(layout.controlData, 'blobs'), publicUrl }),
      });
      cleanups.push(() => server.close());
      let url: string;
      try {
        ({ url } = await server.listen('127.0.0.1', options.port ?? 0));
      } catch (error) {
        throw listenCause(error, options.port ?? 0);
      }
      const { token, user } = await server.store.addUser(DEMO_USER, false, Date.now(), {
        tokenLabel: 'token made by blue-agent demo',
      });
      const policy = await server.store.publishPolicy(
        {
          contract_version: 1,
          ttl_seconds: 3600,
          required: false,
          allowed_harnesses: [harness.name],
          session_upload: { presign_url: `${url}/session-uploads/presign` },
        },
        Date.now(),
      );
      report.control_url = url;
      return {
        value: { url, token },
        summary:
          `the reference Control API listens on ${url} (data ${short(root, layout.controlData)}); user ` +
          `${DEMO_USER}, policy revision ${policy.revision} with session_upload`,
        details: {
          url,
          data_dir: layout.controlData,
          user: DEMO_USER,
          user_id: user.id,
          policy_revision: policy.revision,
        },
      };
    });

    // 2. Both machines log in: the URL in the agent config, the token (from stdin) in the token file.
    await run.step('login', async (signal) => {
      const done: Record<string, unknown> = {};
      for (const [name, m] of [
        ['a', a],
        ['b', b],
      ] as const) {
        const out = await child.cli(m, ['login', '--control-url', api.url, '--token-stdin', '--json'], {
          input: `${api.token}\n`,
          signal,
          timeoutMs: 15_000,
        });
        done[name] = { config_file: out.config_file, token_file: out.token_file, verified: out.verified };
      }
      const first = done.a as { config_file: string; token_file: string };
      return {
        value: undefined,
        summary:
          `\`blue-agent login --control-url ${api.url} --token-stdin\` in HOME A and HOME B: control_url in ` +
          `${short(root, first.config_file)}, the token in ${short(root, first.token_file)} (0600)`,
        details: done,
      };
    });

    // 3. A harness that reconcile and resume can find: the stand-in.
    await run.step('harness', async () => {
      const file = path.join(layout.bin, demo.binary);
      await writeFile(file, standInScript(demo.binary, `${asset.version} (${name})`), { mode: 0o755, flag: 'wx' });
      await chmod(file, 0o755);
      return {
        value: undefined,
        summary:
          `a stand-in \`${demo.binary}\` at ${short(root, file)} answers --version with ${asset.version} (` +
          `${name}), the version the session was recorded with; it runs nothing else`,
        details: { path: file, version: asset.version, stand_in: true },
      };
    });

    // 4. Reconcile on machine A: the managed SessionEnd hook goes into the harness's hook file.
    const settingsFile = await run.step('reconcile', async (signal) => {
      const out = await child.cli(a, ['reconcile', '--json', '--harness', harness.name], {
        signal,
        timeoutMs: 25_000,
        allowFailure: true,
      });
      const entry = (
        out.harnesses as
          | {
              harness: string;
              state: string;
              reason: string;
              profile: string | null;
              version: string | null;
              files: { path: string; action: string; error?: string }[];
            }[]
          | undefined
      )?.find((h) => h.harness === harness.name);
      if (entry === undefined) throw cause('INTERNAL', `reconcile reported no ${name}`);
      if (entry.state !== 'active')
        throw cause(
          'NOT_ACTIVE',
          `${name} is ${entry.state}: ${entry.reason}`,
          'The demo policy and the stand-in should make it active; run with --keep and look at HOME A.',
        );
      const file = entry.files.find((f) => path.basename(f.path) === demo.hookFile);
      if (file === undefined || file.error !== undefined || out.ok !== true)
        throw cause(
          'INTERNAL',
          `reconcile did not write ${demo.hookFile}: ${file?.error ?? 'no such file in its report'}`,
        );
      return {
        value: file.path,
        summary:
          `\`blue-agent reconcile --harness ${harness.name}\` in HOME A: ${name} ${entry.version} is active ` +
          `(profile ${entry.profile}); ${ACTION_WORDS[file.action] ?? file.action} ${short(root, file.path)} with ` +
          `the managed SessionEnd hook`,
        details: {
          state: entry.state,
          profile: entry.profile,
          version: entry.version,
          settings_file: file.path,
          action: file.action,
          policy_revision: (out.policy as { revision?: unknown } | undefined)?.revision,
        },
      };
    });

    // 5. The recorded session, where the harness would have left it on machine A.
    const session = await run.step('session', async () => {
      const installed = await installRecordedSession(asset, a.layout, a.layout.workDir);
      return {
        value: installed,
        summary:
          `the recorded session ${installed.sessionId} (${name} ${asset.version}, recorded offline) laid ` +
          `out in HOME A: ${installed.files} files, ${installed.bytes} bytes under ` +
          `${short(root, installed.projectDir)}`,
        details: {
          session_id: installed.sessionId,
          transcript: installed.transcriptPath,
          cwd: installed.cwd,
          files: installed.files,
          bytes: installed.bytes,
          recorded: true,
        },
      };
    });

    // 6. The session ends: the hook command reconcile wrote runs, as the harness runs it.
    const captured = await run.step('capture', async (signal) => {
      const hook = await managedHook(settingsFile, harness.demo);
      const payload = {
        session_id: session.sessionId,
        transcript_path: session.transcriptPath,
        cwd: session.cwd,
        hook_event_name: 'SessionEnd',
        reason: 'other',
      };
      const started = performance.now();
      const result = await ctx.run('/bin/sh', ['-c', hook.command], {
        env: a.env,
        cwd: session.cwd,
        input: `${JSON.stringify(payload)}\n`,
        timeoutMs: Math.min(hook.timeoutSeconds * 1000, 15_000),
        signal,
      });
      const ms = Math.round(performance.now() - started);
      throwIfAborted(signal);
      if (result.timedOut) throw cause('TIMEOUT', `the hook did not exit within its ${hook.timeoutSeconds} s timeout`);
      if (result.exitCode !== 0)
        throw cause(
          captureCode(result.stderr),
          `the hook exited ${result.exitCode ?? 'abnormally'}: ${oneLine(result.stderr) || 'no output'}`,
        );
      // The sh hook hands the payload over and returns; the drain it started admits it into the spool moments later.
      const admittedBy = Date.now() + 30_000;
      let spooled: Awaited<ReturnType<typeof readCaptureLog>>[number] | undefined;
      for (;;) {
        spooled = (await readCaptureLog(a.paths.captureLogFile))
          .filter((e) => e.event === 'spooled' && e.session_id === session.sessionId)
          .at(-1);
        if (spooled !== undefined || Date.now() > admittedBy) break;
        throwIfAborted(signal);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      if (spooled === undefined)
        throw cause(
          'INTERNAL',
          `the hook exited 0 but ${path.basename(a.paths.captureLogFile)} has no spooled entry for the session ` +
            `within 30 s`,
        );
      const workerPid = typeof spooled.worker_pid === 'number' ? spooled.worker_pid : undefined;
      if (workerPid !== undefined) cleanups.push(() => stopWorker(workerPid));
      return {
        value: { workerPid, record: spooled.record },
        summary:
          `ran the hook command from ${short(root, settingsFile)} with \`sh -c\`, the SessionEnd payload on ` +
          `stdin: handed over in ${ms} ms; the detached worker ${workerPid ?? '(none)'} spooled record ` +
          `${String(spooled.record)}`,
        notes: [`hook: ${short(root, hook.command)}`],
        details: {
          settings_file: settingsFile,
          command: hook.command,
          payload,
          hook_ms: ms,
          record: spooled.record,
          worker_pid: workerPid ?? null,
          spool: a.paths.spoolDir,
        },
      };
    });

    // 7. Build and upload: the capture's worker does it; `drain` then takes whatever is left.
    const uploaded = await run.step('drain', async (signal) => {
      if (captured.workerPid !== undefined) await waitForExit(captured.workerPid, 60_000, signal);
      const out = await child.cli(a, ['drain', '--json'], { signal, timeoutMs: 60_000, allowFailure: true });
      const byDrain = (out.uploaded as { session_id: string; upload_id: string; size: number }[] | undefined)?.find(
        (u) => u.session_id === session.sessionId,
      );
      const byWorker = (await readCaptureLog(a.paths.captureLogFile))
        .filter((e) => e.event === 'uploaded' && e.session_id === session.sessionId)
        .at(-1);
      const uploadId = byDrain?.upload_id ?? (typeof byWorker?.upload_id === 'string' ? byWorker.upload_id : undefined);
      if (uploadId === undefined) {
        const failed =
          (out.failed as { code: string; reason: string }[] | undefined)?.[0] ??
          (out.retried as { code: string; reason: string }[] | undefined)?.[0];
        const notes = Array.isArray(out.notes) ? (out.notes as string[]).join('; ') : '';
        throw cause(
          failed?.code ?? 'UPLOAD_FAILED',
          `the session was not uploaded: ${failed?.reason ?? (notes || 'the drain left it waiting')}`,
          "Run with --keep, then `blue-agent spool list` with HOME A's environment.",
        );
      }
      const size = byDrain?.size ?? (typeof byWorker?.size === 'number' ? byWorker.size : undefined);
      const who =
        byDrain !== undefined
          ? '`blue-agent drain` built and uploaded it'
          : `the capture's worker built and uploaded it; \`blue-agent drain\` found nothing left (` +
            `${String(out.built ? (out.built as unknown[]).length : 0)} built, ` +
            `${String(out.uploaded ? (out.uploaded as unknown[]).length : 0)} uploaded)`;
      return {
        value: uploadId,
        summary:
          `${who}: upload ${uploadId}${size === undefined ? '' : `, ${size} bytes`}, presigned, PUT and ` +
          `completed through ${api.url}`,
        details: {
          upload_id: uploadId,
          uploaded_by: byDrain !== undefined ? 'drain' : 'worker',
          bundle_size: size ?? null,
          drain: {
            ok: out.ok,
            built: arrayLength(out.built),
            uploaded: arrayLength(out.uploaded),
            left: out.left,
            left_ready: out.left_ready,
          },
        },
      };
    });

    // 8. The Control API lists it.
    const listed = await run.step('list', async (signal) => {
      const out = await child.cli(a, ['sessions', 'list', '--json'], { signal, timeoutMs: 20_000 });
      const row = (
        out.sessions as
          | {
              id: string;
              artifact_id?: string;
              title: string | null;
              harness: string;
              status: string;
              updated_at: string;
            }[]
          | undefined
      )?.find((s) => s.artifact_id === uploaded);
      if (row === undefined) throw cause('SESSION_NOT_FOUND', `\`sessions list\` does not list upload ${uploaded}`);
      return {
        value: row.id,
        summary:
          `\`blue-agent sessions list\` in HOME A: "${oneLine(row.title ?? '').slice(0, 60)}" ${row.harness} ` +
          `${row.status}, updated ${row.updated_at}, id ${row.id}`,
        details: {
          id: row.id,
          upload_id: uploaded,
          title: row.title,
          harness: row.harness,
          status: row.status,
          updated_at: row.updated_at,
          listed: arrayLength(out.sessions),
        },
      };
    });

    // 9. Machine B restores it for another directory and prints the native resume command.
    await run.step('restore', async (signal) => {
      const dest = b.layout.workDir;
      const out = await child.cli(b, ['resume', listed, '--dest', dest, '--yes', '--no-launch', '--json'], {
        signal,
        timeoutMs: 50_000,
        cwd: dest,
      });
      const restored = (out.restored as string[] | undefined) ?? [];
      const command = (out.command as string[] | undefined) ?? [];
      const line = launchLine(String(out.destination ?? dest), command);
      const transcript = restored.find((f) => path.basename(f) === `${session.sessionId}.jsonl`);
      const identical = transcript !== undefined && (await sameBytes(transcript, session.transcriptPath));
      report.session = {
        id: listed,
        session_id: String(out.session_id),
        home_a: a.layout.home,
        home_b: b.layout.home,
        destination: String(out.destination ?? dest),
        restored,
        command,
        command_line: line,
      };
      return {
        value: undefined,
        summary:
          `\`blue-agent resume ${listed.slice(0, 8)} --dest ${short(root, dest)} --yes --no-launch\` in ` +
          `HOME B: restored ${restored.length} file${restored.length === 1 ? '' : 's'}` +
          (transcript === undefined ? '' : ` (transcript ${identical ? 'byte-identical to' : 'differs from'} A's)`) +
          ' ' +
          `under ${short(root, path.join(b.layout.home, demo.sessionsHome))}`,
        notes: [
          `native resume command: ${short(root, line)}`,
          `(to run it: --keep the demo, put the real ${name} on PATH and set HOME=${short(root, b.layout.home)}; ` +
            `the stand-in cannot resume)`,
        ],
        details: {
          destination: out.destination,
          restored,
          merged: out.merged,
          command,
          command_line: line,
          transcript_identical: identical,
        },
      };
    });
    report.ok = true;
    return report;
  } catch (error) {
    const failure =
      error instanceof DemoStepError
        ? error
        : new DemoStepError(
            { n: report.steps.length + 1, id: STEPS[report.steps.length] ?? 'restore' },
            causeOf(error, options.signal),
          );
    report.error = failure.toJSON();
    throw Object.assign(failure, { report });
  } finally {
    while (cleanups.length > 0) await cleanups.pop()!().catch(() => undefined);
    if (!options.keep)
      await rm(root, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 }).catch(() => undefined);
  }
}
