/**
 * Properties: any session round trips byte for byte; any damage to a bundle is refused as BUNDLE_INVALID (never a
 * crash, never a hang), and damage past the gzip header's free fields is always refused.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractBundle, verifyBundle, writeBundle } from '../../src/bundle/index.js';
import { BlueError } from '../../src/errors.js';
import type { ProfileSet } from '../../src/profiles/index.js';
import { claudeSession, shippedProfiles } from '../../../../test/support/handmade-bundles.js';

let dir: string;
let profiles: ProfileSet;
let valid: Buffer;
let n = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bundle-fuzz-'));
  profiles = await shippedProfiles();
  const out = path.join(dir, 'valid.bundle');
  await writeBundle(await claudeSession(dir), out);
  valid = await readFile(out);
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function outcome(bytes: Buffer): Promise<'valid' | string> {
  const file = path.join(dir, `f${n++}.bundle`);
  await writeFile(file, bytes);
  try {
    await verifyBundle(file, { profiles });
    return 'valid';
  } catch (error) {
    if (!(error instanceof BlueError)) throw error;
    return error.code;
  }
}

describe('bundles', () => {
  it('round trip any set of session files byte for byte', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(fc.stringMatching(/^[A-Za-z0-9._-]{1,120}$/), { minLength: 3, maxLength: 8 }),
        fc.array(fc.uint8Array({ maxLength: 3000 }), { minLength: 8, maxLength: 8 }),
        async (names, contents) => {
          const roles = ['agent_wire_history', 'kimi_state'] as const;
          const files = names.map((name, i) => ({
            role: roles[i] ?? ('session_state' as const),
            name,
            nativePath: `sessions/h/s/${i}-${name}`,
            content: contents[i]!,
          }));
          const out = path.join(dir, `r${n++}.bundle`);
          const written = await writeBundle(
            { harness: 'kimi', profile: 'kimi-v1_28_0', sessionId: 's', capturedAtUnixMs: 0, files },
            out,
            { profiles },
          );
          const target = path.join(dir, `x${n++}`);
          const extracted = await extractBundle(out, target, { profiles });
          expect(extracted.sha256).toBe(written.sha256);
          expect(extracted.manifest.files.map((f) => f.native_path)).toEqual(files.map((f) => f.nativePath));
          for (const [i, file] of files.entries())
            expect(await readFile(extracted.files[i]!)).toEqual(Buffer.from(file.content));
        },
      ),
      { numRuns: 40 },
    );
  });

  it('refuse any flipped byte past the gzip header fields nobody checks', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 10, max: valid.length - 1 }),
        fc.integer({ min: 1, max: 255 }),
        async (at, mask) => {
          const bytes = Buffer.from(valid);
          bytes[at]! ^= mask;
          expect(await outcome(bytes)).toBe('BUNDLE_INVALID');
        },
      ),
      { numRuns: 150 },
    );
  });

  it('refuse any truncation, insertion or overwrite without crashing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.integer({ min: 0, max: valid.length - 1 }).map((end) => valid.subarray(0, end)),
          fc
            .tuple(fc.integer({ min: 0, max: valid.length }), fc.uint8Array({ minLength: 1, maxLength: 64 }))
            .map(([at, junk]) => Buffer.concat([valid.subarray(0, at), junk, valid.subarray(at)])),
          fc
            .tuple(fc.integer({ min: 10, max: valid.length - 1 }), fc.uint8Array({ minLength: 1, maxLength: 64 }))
            .map(([at, junk]) =>
              Buffer.concat([valid.subarray(0, at), Buffer.from(junk), valid.subarray(at + junk.length)]),
            )
            .filter((b) => !b.equals(valid)),
        ),
        async (bytes) => {
          expect(await outcome(bytes)).toBe('BUNDLE_INVALID');
        },
      ),
      { numRuns: 150 },
    );
  });
});
