/**
 * The import step's protocol, with a stand-in `opencode` on PATH that records how it is called (the real CLI is
 * exercised in real-harness-restore.test.ts): a session OpenCode already holds with other messages is refused, a
 * failed or silent import is rolled back with `opencode session delete`, and the id the import reports is resumed.
 */
import { mkdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  applyRestore,
  prepareRestore,
  realRestoreIO,
  recoverRestores,
  type RestoreIO,
} from '../../src/restore/index.js';
import { errnoError } from '../../../../test/support/restore-homes.js';
import type { TestHome } from '../../../../test/support/context.js';
import { writeExecutable } from '../../../../test/support/recorded-sessions.js';
import { restoreHome, shippedProfiles } from '../../../../test/support/restore-homes.js';
import { opencodeFixtureBundle } from '../harnesses/opencode/rig.js';

let t: TestHome;
let destination: string;
let calls: string;
let bundle: string;
let sessionId: string;
let exportText: string;

beforeEach(async () => {
  t = await restoreHome();
  await mkdir(path.join(t.root, 'dest'));
  destination = await realpath(path.join(t.root, 'dest'));
  calls = path.join(t.root, 'calls.log');
  ({ bundle, sessionId } = await opencodeFixtureBundle(t.root, path.join(t.root, 'opencode.bundle')));
  exportText = '';
});

afterEach(async () => {
  await t.cleanup();
});

/** A fake opencode: logs `cwd argv`, then behaves as `mode` says. */
async function fakeOpencode(mode: {
  export: 'missing' | 'same' | 'other';
  import: 'ok' | 'fail' | 'silent' | 'other-id';
}): Promise<void> {
  const bin = path.join(t.root, 'bin', 'opencode');
  const exportFile = path.join(t.root, 'export-out.json');
  await writeFile(exportFile, exportText);
  const exportStep =
    mode.export === 'missing' ? 'echo "Error: Session not found: $2" >&2; exit 1' : `cat ${JSON.stringify(exportFile)}`;
  const importStep = {
    ok: `echo "Imported session: ${sessionId}"`,
    fail: 'echo "Error: database is locked" >&2; exit 1',
    silent: 'exit 0',
    'other-id': 'echo "Imported session: ses_renamed01"',
  }[mode.import];
  await writeExecutable(
    bin,
    `#!/bin/sh
echo "$(pwd) $*" >> ${JSON.stringify(calls)}
case "$1" in
  export)
    ${exportStep};;
  import)
    ${importStep};;
  session) exit 0;;
esac
`,
  );
  // OpenCode has a database here, so the preflight asks it.
  const data = path.join(t.home, '.local', 'share', 'opencode');
  await mkdir(data, { recursive: true });
  await writeFile(path.join(data, 'opencode.db'), '');
}

function ctx() {
  return t.context({ env: { PATH: `${path.join(t.root, 'bin')}:/usr/bin:/bin` } });
}

async function log(): Promise<string[]> {
  return (await readFile(calls, 'utf8').catch(() => '')).trim().split('\n').filter(Boolean);
}

async function prepare() {
  return prepareRestore(ctx(), { bundleFile: bundle, destination, profiles: await shippedProfiles() });
}

describe('OpenCode import step', () => {
  it('imports in the destination and resumes the id OpenCode reports', async () => {
    await fakeOpencode({ export: 'missing', import: 'other-id' });
    const prepared = await prepare();
    expect(prepared.collision).toBe('none');
    expect(prepared.summary.import?.slice(0, 2)).toEqual(['opencode', 'import']);
    const result = await applyRestore(ctx(), prepared);
    await prepared.dispose();
    expect(result.sessionId).toBe('ses_renamed01');
    expect(result.resumeArgv).toEqual(['opencode', '--session', 'ses_renamed01']);
    const lines = await log();
    expect(lines[0]).toBe(`${destination} export ${sessionId}`);
    expect(lines.at(-1)).toMatch(new RegExp(`^${destination} import .*\\.blue-agent-restore-.*export\\.json$`));
  });

  for (const failure of ['fail', 'silent'] as const) {
    it(`an import that ${failure === 'fail' ? 'fails' : 'reports no id'} is undone by session delete`, async () => {
      await fakeOpencode({ export: 'missing', import: failure });
      const prepared = await prepare();
      await expect(applyRestore(ctx(), prepared)).rejects.toMatchObject({ code: 'RESTORE_FAILED' });
      await prepared.dispose();
      // Removed with session delete, then confirmed gone with the preflight's own check.
      expect((await log()).slice(-2)).toEqual([
        `${destination} session delete ${sessionId}`,
        `${destination} export ${sessionId}`,
      ]);
      const { readdir } = await import('node:fs/promises');
      expect(
        (await readdir(path.join(t.home, '.config', 'opencode')).catch(() => [])).filter((n) =>
          n.includes('.blue-agent-restore'),
        ),
      ).toEqual([]);
      expect(await readdir(path.join(t.env.BLUE_AGENT_HOME!, 'restores'))).toEqual([]);
    });
  }

  it('a session OpenCode already holds with other messages is refused; the same messages: nothing to do', async () => {
    const original = JSON.parse(
      await readFile(path.join((await prepare()).staging, 'bundle', 'files', '0000-export.json'), 'utf8'),
    ) as { info: unknown; messages: unknown[] };
    exportText = JSON.stringify({
      ...original,
      messages: [...original.messages, { info: { role: 'user' }, parts: [] }],
    });
    await fakeOpencode({ export: 'other', import: 'ok' });
    const different = await prepare();
    expect(different.collision).toBe('different');
    await expect(applyRestore(ctx(), different)).rejects.toMatchObject({ code: 'RESTORE_CONFLICT' });
    await different.dispose();
    expect((await log()).some((l) => l.includes(' import '))).toBe(false);

    exportText = JSON.stringify(original);
    await fakeOpencode({ export: 'same', import: 'ok' });
    const same = await prepare();
    expect(same.collision).toBe('identical');
    expect((await applyRestore(ctx(), same)).placed).toEqual([]);
    await same.dispose();
    expect((await log()).some((l) => l.includes(' import '))).toBe(false);
  });

  it('a preflight that cannot tell whether the session exists refuses instead of guessing', async () => {
    exportText = 'not json';
    await fakeOpencode({ export: 'same', import: 'ok' });
    await expect(prepare()).rejects.toMatchObject({
      code: 'RESTORE_FAILED',
      message: expect.stringMatching(/cannot tell/),
    });
  });

  /**
   * A stateful fake: `import` creates the session (a marker file), `export` finds it while the marker exists,
   * `session delete` removes it or (`delete: 'fail' | 'noop'`) does not.
   */
  async function statefulOpencode(mode: {
    import: 'ok' | 'silent' | 'other-id';
    delete: 'ok' | 'fail' | 'noop';
  }): Promise<void> {
    const bin = path.join(t.root, 'bin', 'opencode');
    const marker = path.join(t.root, 'imported');
    const original = path.join(t.root, 'export-out.json');
    const importStep = {
      ok: `echo "Imported session: ${sessionId}"`,
      silent: 'exit 0',
      'other-id': 'echo "Imported session: ses_renamed01"',
    }[mode.import];
    const deleteStep = {
      ok: `rm -f ${JSON.stringify(marker)}`,
      fail: 'echo "Error: database is locked" >&2; exit 1',
      noop: 'exit 0',
    }[mode.delete];
    await writeExecutable(
      bin,
      `#!/bin/sh
echo "$(pwd) $*" >> ${JSON.stringify(calls)}
case "$1" in
  export)
    if [ -f ${JSON.stringify(marker)} ]; then cat ${JSON.stringify(original)};
    else echo "Error: Session not found: $2" >&2; exit 1; fi;;
  import)
    cp "$2" ${JSON.stringify(original)}; touch ${JSON.stringify(marker)}
    ${importStep};;
  session)
    ${deleteStep};;
esac
`,
    );
    const data = path.join(t.home, '.local', 'share', 'opencode');
    await mkdir(data, { recursive: true });
    await writeFile(path.join(data, 'opencode.db'), '');
  }

  for (const failure of ['fail', 'noop'] as const) {
    it(
      `a rollback whose session delete ${failure === 'fail' ? 'fails' : 'leaves the session'} says so and keeps ` +
        `the journal for the next recovery`,
      async () => {
        await statefulOpencode({ import: 'silent', delete: failure });
        const prepared = await prepare();
        const error = await applyRestore(ctx(), prepared).then(
          () => undefined,
          (e: unknown) => e as { code: string; message: string },
        );
        await prepared.dispose();
        expect(error?.code).toBe('RESTORE_FAILED');
        expect(error?.message).toMatch(/may remain/);
        expect(error?.message).toContain(sessionId);
        const { readdir } = await import('node:fs/promises');
        expect(await readdir(path.join(t.env.BLUE_AGENT_HOME!, 'restores'))).toHaveLength(1);

        // Once the delete works, recovery finishes the rollback and drops the journal.
        await statefulOpencode({ import: 'silent', delete: 'ok' });
        const recovered = await recoverRestores(ctx());
        expect(recovered.rolledBack).toHaveLength(1);
        expect(await readdir(path.join(t.env.BLUE_AGENT_HOME!, 'restores'))).toEqual([]);
        expect((await log()).slice(-2)).toEqual([
          `${destination} session delete ${sessionId}`,
          `${destination} export ${sessionId}`,
        ]);
      },
    );
  }

  it("a failure after the import rolls back the id the import reported, not the bundle's", async () => {
    await statefulOpencode({ import: 'other-id', delete: 'ok' });
    const prepared = await prepare();
    // The commit point (the journal saying `placed`) cannot be written.
    const io: RestoreIO = {
      ...realRestoreIO,
      write: async (handle, data) => {
        if (Buffer.from(data).toString('utf8').includes('"state": "placed"'))
          throw errnoError('EIO', 'write', 'journal');
        return realRestoreIO.write(handle, data);
      },
    };
    await expect(applyRestore(ctx(), prepared, { io })).rejects.toMatchObject({ code: 'RESTORE_FAILED' });
    await prepared.dispose();
    const lines = await log();
    expect(lines).toContain(`${destination} session delete ses_renamed01`);
    expect(lines).not.toContain(`${destination} session delete ${sessionId}`);
  });
});
