import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { opencode } from '../../../src/harnesses/opencode/index.js';
import { collectOpencodeSession } from '../../../src/harnesses/opencode/session.js';
import type { CollectedSession, HookPayload } from '../../../src/harnesses/types.js';
import type { Context } from '../../../src/context.js';
import { harnessInstall } from '../../../../../test/support/harness-bins.js';
import { startModelStub } from '../../../../../test/support/model-stub.js';
import { describeRun, harnessEnv, readJsonLines, waitFor } from '../../../../../test/support/run-harness.js';
import { runOpencode, writeOpencodeUserPlugin } from './rig.js';
import {
  expectArtifactInvalid,
  substitute,
  writeExecutable,
  useRecordedHome,
} from '../../../../../test/support/recorded-sessions.js';

const w = useRecordedHome('opencode', 'opencode-v1_2_0');
let exported: string;
let bin: string;
let ctx: Context;

beforeEach(async () => {
  exported = substitute(await readFile(path.join(w.fixture, 'export.json'), 'utf8'), {
    ROOT: w.t.root,
    ROOT_REL: w.t.root.replace(/^\/+/, ''),
  });
  bin = path.join(w.t.root, 'bin');
  ctx = w.t.context({ env: { PATH: `${bin}:${w.t.env.PATH}` } });
});

/** A stand-in `opencode` whose `export` prints `stdout` (written to a file beside it) and exits with `code`. */
async function fakeOpencode(
  stdout: string,
  options: { code?: number; stderr?: string; before?: string } = {},
): Promise<void> {
  const out = path.join(w.t.root, 'export-stdout');
  await writeExecutable(out, stdout);
  await writeExecutable(
    path.join(bin, 'opencode'),
    [
      '#!/bin/sh',
      `printf '%s\\n' "$PWD" "$XDG_DATA_HOME" "$*" > '${path.join(w.t.root, 'fake-ran')}'`,
      options.before ?? '',
      options.stderr === undefined
        ? `printf 'Exporting session: %s\\n' "$2" >&2`
        : `printf '%s\\n' '${options.stderr}' >&2`,
      `cat '${out}'`,
      `exit ${options.code ?? 0}`,
      '',
    ].join('\n'),
  );
}

function payload(extra: Partial<HookPayload> = {}): HookPayload {
  return { session_id: w.recorded.session_id, cwd: w.cwd, hook_event_name: 'session.idle', ...extra };
}

function collect(p: HookPayload = payload(), c: Context = ctx): Promise<CollectedSession> {
  return opencode.collectSession(c, { interval: w.interval, payload: p });
}

const what = () => `opencode export ${w.recorded.session_id}`;

describe('OpenCode: collectSession on a recorded export', () => {
  it('captures the exact bytes `opencode export` printed, with no native path; title from info.title', async () => {
    await fakeOpencode(exported);
    const session = await collect();
    expect(session).toEqual({
      sessionId: w.recorded.session_id,
      cwd: w.cwd,
      files: [{ role: 'portable_export', name: 'export.json', content: new TextEncoder().encode(exported) }],
      title: 'Recorded reply from the stub model.',
      // `opencode run` quotes a prompt with spaces before storing it; the preview shows what OpenCode stored.
      summary: `"${w.recorded.prompt}"`,
    });
    expect(session.root).toBeUndefined();
    // It ran `export <id>` in the session directory, with the agent's environment.
    expect((await readFile(path.join(w.t.root, 'fake-ran'), 'utf8')).split('\n')).toEqual([
      w.cwd,
      w.t.env.XDG_DATA_HOME,
      `export ${w.recorded.session_id}`,
      '',
    ]);
  });

  it("ignores OpenCode's placeholder title and uses the first user message", async () => {
    const doc = JSON.parse(exported) as { info: { title: string } };
    doc.info.title = 'New session - 2026-11-30T16:22:31.045Z';
    await fakeOpencode(JSON.stringify(doc, null, 2));
    expect(await collect()).toMatchObject({ title: `"${w.recorded.prompt}"`, summary: `"${w.recorded.prompt}"` });
  });

  it('uses the recorded directory when the payload has no cwd', async () => {
    await fakeOpencode(exported);
    const { cwd: _omit, ...rest } = payload();
    expect((await collect(rest)).cwd).toBe(w.cwd);
  });
});

describe('OpenCode: what is refused', () => {
  it('an export of another session', async () => {
    const doc = JSON.parse(exported) as { info: { id: string } };
    doc.info.id = 'ses_someoneelse000000000000';
    await fakeOpencode(JSON.stringify(doc));
    await expectArtifactInvalid(() => collect(), what(), /exported session ses_someoneelse000000000000, not /);
  });

  it('output that is not JSON, or JSON of another shape', async () => {
    await fakeOpencode('Session not found\n');
    await expectArtifactInvalid(() => collect(), what(), /did not print JSON/);
    await fakeOpencode(JSON.stringify({ info: { id: w.recorded.session_id } }));
    await expectArtifactInvalid(() => collect(), what(), /without \{info, messages\}/);
    await fakeOpencode('[]');
    await expectArtifactInvalid(() => collect(), what(), /without \{info, messages\}/);
  });

  it('a failed export', async () => {
    await fakeOpencode('', { code: 1, stderr: 'Error: Session not found: ses_x' });
    await expectArtifactInvalid(() => collect(), what(), /exited with 1: Error: Session not found/);
  });

  // The export sleeps 20 s: a collector that waited for it would outlive this test's timeout.
  it('an export that does not finish in time', { timeout: 15_000 }, async () => {
    await fakeOpencode(exported, { before: 'exec sleep 20' });
    await expectArtifactInvalid(
      () => collectOpencodeSession(ctx, { interval: w.interval, payload: payload() }, { timeoutMs: 300 }),
      what(),
      /did not finish within 300 ms/,
    );
  });

  // The helper holds the output open for 30 s: a collector that waited for it would outlive this test's timeout.
  it('an export whose helper keeps the output open after the deadline', { timeout: 15_000 }, async () => {
    const pidFile = path.join(w.t.root, 'helper.pid');
    await fakeOpencode(exported, { before: `sleep 30 & echo $! > '${pidFile}'; wait` });
    try {
      await expectArtifactInvalid(
        () => collectOpencodeSession(ctx, { interval: w.interval, payload: payload() }, { timeoutMs: 300 }),
        what(),
        /did not finish within 300 ms/,
      );
    } finally {
      const pid = Number((await readFile(pidFile, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 0) process.kill(pid, 'SIGKILL');
    }
  });

  it('an export over 64 MiB', async () => {
    await writeExecutable(path.join(bin, 'opencode'), '#!/bin/sh\nhead -c 67108865 /dev/zero | tr "\\0" "x"\n');
    await expectArtifactInvalid(() => collect(), what(), /more than 67108864 bytes/);
  }, 60_000);

  it('no opencode on PATH, or a session directory that is gone', async () => {
    await expectArtifactInvalid(
      () => collect(payload(), w.t.context({ env: { PATH: path.join(w.t.root, 'empty') } })),
      what(),
      /not on PATH/,
    );
    await fakeOpencode(exported);
    await expectArtifactInvalid(
      () => collect(payload({ cwd: path.join(w.t.root, 'gone') })),
      what(),
      /could not start/,
    );
  });
});

describe('OpenCode: a real offline session', () => {
  it('exports the session `opencode run` made, from the session.idle event', async () => {
    const install = harnessInstall('opencode');
    const reply = 'Real stub reply.';
    const stub = await startModelStub({ reply });
    try {
      const events = path.join(w.t.root, 'events.jsonl');
      const env = harnessEnv(w.t.home);
      await writeOpencodeUserPlugin(path.join(env.XDG_CONFIG_HOME!, 'opencode'), events);
      const prompt = 'List the exported symbols';
      const result = await runOpencode({
        bin: install.bin,
        home: w.t.home,
        cwd: w.cwd,
        prompt,
        stubUrl: stub.url,
        env: w.t.env,
        timeoutMs: 60_000,
      });
      expect(result.exitCode, describeRun(result)).toBe(0);
      type Event = { type: string; properties?: { sessionID?: string }; directory?: string };
      const idle = await waitFor(
        'session.idle',
        async () => ((await readJsonLines(events)) as Event[]).find((e) => e.type === 'session.idle'),
        10_000,
      );
      const hook: HookPayload = {
        session_id: idle.properties!.sessionID!,
        cwd: idle.directory!,
        hook_event_name: 'session.idle',
      };

      const real = w.t.context({
        env: {
          ...env,
          PATH: `${path.dirname(install.bin)}:${env.PATH}`,
          OPENCODE_DISABLE_AUTOUPDATE: '1',
          OPENCODE_DISABLE_MODELS_FETCH: '1',
          OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
        },
      });
      const session = await opencode.collectSession(real, { interval: w.interval, payload: hook });
      expect(session.files).toHaveLength(1);
      const [file] = session.files;
      expect(file).toMatchObject({ role: 'portable_export', name: 'export.json' });
      expect(file!.nativePath).toBeUndefined();
      const doc = JSON.parse(new TextDecoder().decode(file!.content)) as {
        info: { id: string; title: string };
        messages: unknown[];
      };
      expect(doc.info.id).toBe(hook.session_id);
      // OpenCode names sessions with its small model, here the stub: that native title wins.
      expect(session.title).toBe(doc.info.title);
      expect(session.title).toBe(reply);
      expect(session.summary).toBe(`"${prompt}"`);
      expect(session.cwd).toBe(w.cwd);
    } finally {
      await stub.close();
    }
  }, 120_000);
});
