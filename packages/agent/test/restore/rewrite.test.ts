/**
 * Restores that change a file's bytes (RestorePlacement.rewrite): applied only for roles the profile declares, into a
 * new file beside the extracted one, never into the bundle's own extracted bytes; unchanged bytes leave the placement
 * as it was.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LIMITS } from '@blue-agent/contract/bundle/limits.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { RestorePlacement, RestorePlan } from '../../src/harnesses/types.js';
import { applyRewrites } from '../../src/restore/rewrite.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

const DECLARED: Interval = {
  profile: 'demo-v1_0_0',
  introduced: '1.0.0',
  verified_before: '1.1.0',
  lifecycle: 'supported',
  operations: ['session_capture', 'session_resume', 'restore_rewrite'],
  session: {
    root: 'projects',
    roles: [
      { role: 'primary_transcript', min: 1, max: 1, restore_rewrite: "the first record's cwd" },
      { role: 'session_companion', min: 0, max: 8 },
    ],
  },
};

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-rewrite-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function planWith(
  role: RestorePlacement['role'],
  content: string,
  apply: (b: Buffer) => Buffer,
): Promise<{ plan: RestorePlan; from: string }> {
  const from = path.join(dir, '0000-transcript.jsonl');
  await writeFile(from, content);
  const placement: RestorePlacement = {
    from,
    to: path.join(dir, 'target', 'x.jsonl'),
    rel: 'k/x.jsonl',
    role,
    size: content.length,
    sha256: sha(content),
    rewrite: { what: 'cwd to /dest', apply },
  };
  return {
    plan: {
      harness: 'claude',
      sessionId: 'x',
      home: dir,
      root: path.join(dir, 'target'),
      placements: [placement],
      merges: [],
      resumeArgv: [],
    },
    from,
  };
}

async function failure(fn: () => Promise<unknown>): Promise<BlueError> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(BlueError);
    return error as BlueError;
  }
  throw new Error('expected a BlueError');
}

describe('applyRewrites', () => {
  it(
    'writes the rewritten bytes beside the extracted file (0600) and points the placement at them, keeping the ' +
      'bundle digest',
    async () => {
      const captured = '{"cwd":"/src"}\n{"n":1}\n';
      const { plan, from } = await planWith('primary_transcript', captured, (b) =>
        Buffer.from(b.toString().replace('/src', '/dest')),
      );
      await applyRewrites(plan, DECLARED);
      const p = plan.placements[0]!;
      const written = '{"cwd":"/dest"}\n{"n":1}\n';
      expect(p.from).not.toBe(from);
      expect(path.dirname(p.from)).toBe(dir);
      expect(await readFile(p.from, 'utf8')).toBe(written);
      expect((await stat(p.from)).mode & 0o777).toBe(0o600);
      expect(p).toMatchObject({
        size: written.length,
        sha256: sha(written),
        rewritten: { captured_sha256: sha(captured), what: 'cwd to /dest' },
      });
      expect(p.rewrite).toBeUndefined();
      // The extracted bundle file is untouched.
      expect(await readFile(from, 'utf8')).toBe(captured);
    },
  );

  it('leaves a placement whose bytes need no change as it was', async () => {
    const { plan, from } = await planWith('primary_transcript', '{"cwd":"/dest"}\n', (b) => Buffer.from(b));
    await applyRewrites(plan, DECLARED);
    expect(plan.placements[0]).toMatchObject({ from, sha256: sha('{"cwd":"/dest"}\n') });
    expect(plan.placements[0]!.rewritten).toBeUndefined();
    expect(plan.placements[0]!.rewrite).toBeUndefined();
  });

  it('refuses a rewrite of a role the profile does not declare, and one without the operation', async () => {
    const { plan } = await planWith('session_companion', 'a', () => Buffer.from('b'));
    const error = await failure(() => applyRewrites(plan, DECLARED));
    expect(error.code).toBe('PROFILE_INVALID');
    expect(error.message).toContain('session_companion');
    expect(error.hint).toContain('restore_rewrite');

    const again = await planWith('primary_transcript', 'a', () => Buffer.from('b'));
    const withoutOperation = { ...DECLARED, operations: ['session_capture', 'session_resume'] } as Interval;
    expect((await failure(() => applyRewrites(again.plan, withoutOperation))).code).toBe('PROFILE_INVALID');
  });

  it("passes on the harness's refusal, and refuses bytes past one bundle file", async () => {
    const refused = await planWith('primary_transcript', 'a', () => {
      throw new BlueError('RESTORE_UNSAFE', 'the first record has no cwd');
    });
    expect((await failure(() => applyRewrites(refused.plan, DECLARED))).message).toBe('the first record has no cwd');

    const huge = await planWith('primary_transcript', 'a', () => Buffer.alloc(LIMITS.fileBytes + 1));
    const error = await failure(() => applyRewrites(huge.plan, DECLARED));
    expect(error.code).toBe('RESTORE_UNSAFE');
    expect(error.message).toContain('larger than one bundle file');
  });
});
