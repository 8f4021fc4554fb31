/**
 * The manifest cross-checks of a bundle (checkScan, parseManifest), applied to an archive's scan result directly:
 * each rule, its message and its edge.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { LIMITS, type Limits } from '../../src/bundle/limits.js';
import { BUNDLE_HINT, type ScanResult } from '../../src/bundle/scan.js';
import { checkScan, parseManifest, readManifest, verifyBundle } from '../../src/bundle/verify.js';
import { BlueError } from '../../src/errors.js';
import type { ProfileSet } from '../../src/profiles/index.js';
import { rejected, thrown } from '../../../../test/support/errors.js';
import { codexParts, gzip, sha, shippedProfiles, tarOf } from '../../../../test/support/handmade-bundles.js';

let profiles: ProfileSet;
beforeAll(async () => {
  profiles = await shippedProfiles();
});

const FILE = '/tmp/x.bundle';

interface Entry {
  role: string;
  path: string;
  native_path?: string;
  data: string;
}

/** A manifest of `entries` and the scan of an archive holding exactly those files. */
function scanOf(
  harness: string,
  profile: string,
  entries: Entry[],
  edit: (m: Record<string, unknown>) => void = () => undefined,
): ScanResult {
  const manifest: Record<string, unknown> = {
    schema_version: 1,
    artifact_format: 'blue-session-bundle-v1',
    harness,
    compatibility_profile: profile,
    native_session_id: 'c0ffee',
    captured_at_unix_ms: 1700000000000,
    files: entries.map((e) => ({
      role: e.role,
      path: e.path,
      ...(e.native_path === undefined ? {} : { native_path: e.native_path }),
      size: Buffer.byteLength(e.data),
      sha256: sha(e.data),
    })),
  };
  edit(manifest);
  const files = new Map(
    entries.map((e) => [e.path, { name: e.path, size: Buffer.byteLength(e.data), sha256: sha(e.data) }]),
  );
  return { size: 1000, sha256: 'ab'.repeat(32), files, manifest: Buffer.from(JSON.stringify(manifest)) };
}

const transcript: Entry = {
  role: 'primary_transcript',
  path: 'files/0000-c0ffee.jsonl',
  native_path: '-home-dev-app/c0ffee.jsonl',
  data: '{"a":1}\n',
};
const companion = (index: number, native: string, data = `{"c":${index}}\n`): Entry => ({
  role: 'session_companion',
  path: `files/${String(index).padStart(4, '0')}-agent-${index}.jsonl`,
  native_path: native,
  data,
});
const claude = (entries: Entry[], edit?: (m: Record<string, unknown>) => void) =>
  scanOf('claude', 'claude-v2_0_12', entries, edit);
const check =
  (scan: ScanResult, limits: Limits = LIMITS) =>
  () =>
    checkScan(scan, FILE, profiles, limits);

describe('checkScan', () => {
  it('accepts a Claude session with its companions and returns its manifest', () => {
    const scan = claude([
      transcript,
      companion(1, '-home-dev-app/c0ffee/subagents/agent-1.jsonl'),
      companion(2, '-home-dev-app/c0ffee/subagents/agent-2.jsonl'),
    ]);
    const manifest = checkScan(scan, FILE, profiles, LIMITS);
    expect(manifest.files.map((f) => f.native_path)).toEqual([
      '-home-dev-app/c0ffee.jsonl',
      '-home-dev-app/c0ffee/subagents/agent-1.jsonl',
      '-home-dev-app/c0ffee/subagents/agent-2.jsonl',
    ]);
  });

  it('refuses two Claude companions at the same native_path', () => {
    const same = '-home-dev-app/c0ffee/subagents/agent-1.jsonl';
    const error = thrown(check(claude([transcript, companion(1, same), companion(2, same, 'other\n')])));
    expect(error.message).toBe(
      `${FILE}: manifest.json: files[2] (files/0002-agent-2.jsonl): native_path ${same} is listed twice`,
    );
    expect(error.file).toBe(FILE);
  });

  it('refuses a companion listed where another file of the bundle is, as if that file were a folder', () => {
    const file = '-home-dev-app/c0ffee/subagents';
    for (const entries of [
      [transcript, companion(1, file), companion(2, `${file}/agent-2.jsonl`)],
      [transcript, companion(1, `${file}/agent-2.jsonl`), companion(2, file)],
      [transcript, companion(1, file), companion(2, `${file}/deeper/agent-2.jsonl`)],
    ]) {
      const error = thrown(check(claude(entries)));
      expect(error.message).toMatch(
        new RegExp(
          String.raw`: manifest\.json: files\[2\] \(files\/0002-agent-2\.jsonl\): native_path .* is both a ` +
            'file and the folder of another file of the bundle$',
        ),
      );
    }
  });

  it('counts the listed sizes against the content cap, a total right at the cap included', () => {
    const scan = claude([transcript, companion(1, '-home-dev-app/c0ffee/subagents/agent-1.jsonl', 'x'.repeat(100))]);
    const total = Buffer.byteLength(transcript.data) + 100;
    expect(checkScan(scan, FILE, profiles, { ...LIMITS, contentBytes: total }).files).toHaveLength(2);
    const error = thrown(check(scan, { ...LIMITS, contentBytes: total - 1 }));
    expect(error.message).toBe(
      `${FILE}: manifest.json lists files adding up to ${total} bytes, over the ${total - 1} B cap`,
    );
  });

  it('prefixes a profile problem with manifest.json exactly once', () => {
    const unknown = thrown(check(claude([transcript], (m) => (m.compatibility_profile = 'claude-v9'))));
    expect(unknown.message).toBe(
      `${FILE}: manifest.json: compatibility profile "claude-v9" is unknown to this blue-agent`,
    );
    const role = thrown(check(claude([{ ...transcript, role: 'rollout' }])));
    expect(role.message).toBe(
      `${FILE}: manifest.json: files[0] (files/0000-c0ffee.jsonl): role rollout is not one of profile ` +
        `claude-v2_0_12's roles (primary_transcript, session_companion)`,
    );
  });

  it('refuses a scan without a manifest', () => {
    const scan = { ...claude([transcript]), manifest: undefined };
    expect(thrown(check(scan)).message).toBe(`${FILE}: has no manifest.json`);
  });
});

describe('parseManifest', () => {
  it('reports a schema violation as BUNDLE_INVALID with the field, the bundle file and the bundle hint', () => {
    const error = thrown(() => parseManifest(Buffer.from(JSON.stringify({ schema_version: 1 })), FILE));
    expect(error.code).toBe('BUNDLE_INVALID');
    expect(error.file).toBe(FILE);
    expect(error.path).toBe('/');
    expect(error.hint).toBe(BUNDLE_HINT);
    const scan = claude([transcript], (m) => ((m.files as Record<string, unknown>[])[0]!.size = -1));
    const field = thrown(() => parseManifest(scan.manifest!, FILE));
    expect([field.code, field.path, field.hint]).toEqual(['BUNDLE_INVALID', '/files/0/size', BUNDLE_HINT]);
    expect(field.message).toMatch(/^\/tmp\/x\.bundle: manifest\.json: invalid /);
  });

  it('refuses bytes that are not UTF-8 or not JSON', () => {
    expect(thrown(() => parseManifest(Buffer.from([0x7b, 0xff, 0x7d]), FILE)).message).toBe(
      `${FILE}: has a manifest.json that is not valid UTF-8`,
    );
    expect(thrown(() => parseManifest(Buffer.from('{'), FILE)).message).toMatch(
      /^\/tmp\/x\.bundle: has a manifest\.json that is not valid JSON: /,
    );
  });
});

describe('readManifest', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-read-manifest-'));
    return () => rm(dir, { recursive: true, force: true });
  });
  const save = async (name: string, bytes: Buffer) => {
    const file = path.join(dir, name);
    await writeFile(file, bytes);
    return file;
  };

  it('shows what a bundle claims to hold without reading past its manifest', async () => {
    const { content, manifest } = codexParts();
    // An entry after manifest.json makes the bundle invalid, but the manifest itself is readable.
    const bytes = gzip(
      tarOf([
        { name: 'files/0000-rollout.jsonl', data: content },
        { name: 'manifest.json', data: JSON.stringify(manifest) },
        { name: 'files/0001-late', data: 'x' },
      ]),
    );
    const file = await save('late.bundle', bytes);
    expect((await readManifest(file)).native_session_id).toBe('sess-1');
    await expect(verifyBundle(file, { profiles })).rejects.toThrow(BlueError);
    // Damage after the manifest: the compressed stream goes on past its end.
    const trailing = await save('trailing.bundle', Buffer.concat([bytes, Buffer.from('garbage')]));
    expect((await readManifest(trailing)).native_session_id).toBe('sess-1');
    expect((await rejected(verifyBundle(trailing, { profiles }))).message).toMatch(
      /after the end of the compressed stream/,
    );
  });

  it('refuses a bundle without a manifest', async () => {
    const file = await save(
      'none.bundle',
      gzip(tarOf([{ name: 'files/0000-rollout.jsonl', data: codexParts().content }])),
    );
    const error = await rejected(readManifest(file));
    expect(error.message).toBe(`${file}: has no manifest.json`);
  });
});
