/**
 * writeBundle on real files in temporary directories: round trips through verify and extract, byte-for-byte
 * reproducibility, the exact tar headers, and every refusal.
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { link, mkdir, mkdtemp, open, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import * as tar from 'tar';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BUNDLE_CONTENT_TYPE,
  LIMITS,
  extractBundle,
  verifyBundle,
  writeBundle,
  type BundleInput,
} from '@blue-agent/contract/bundle/index.js';
import { DEFLATE_BLOCK } from '@blue-agent/contract/bundle/deflate.js';
import type { SessionFile } from '../../src/harnesses/types.js';
import type { ProfileSet } from '@blue-agent/contract/profiles/index.js';
import { rejected } from '../../../../test/support/errors.js';
import { claudeSession, filesUnder, shippedProfiles } from '../../../../test/support/handmade-bundles.js';

let dir: string;
let profiles: ProfileSet;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bundle-write-'));
  profiles = await shippedProfiles();
});
afterEach(async () => rm(dir, { recursive: true, force: true }));

/** The blocks of an uncompressed tar: each header's fields and its data. */
function parseTar(bytes: Buffer): { header: Record<string, string | number>; data: Buffer }[] {
  const out: { header: Record<string, string | number>; data: Buffer }[] = [];
  let pos = 0;
  const text = (b: Buffer, o: number, n: number) => b.toString('latin1', o, o + n);
  while (pos < bytes.length) {
    const block = bytes.subarray(pos, pos + 512);
    if (block.every((b) => b === 0)) break;
    const size = parseInt(text(block, 124, 12), 8);
    out.push({
      header: {
        name: text(block, 0, 100).replace(/\0+$/, ''),
        mode: text(block, 100, 8),
        uid: text(block, 108, 8),
        gid: text(block, 116, 8),
        size,
        mtime: text(block, 136, 12),
        type: text(block, 156, 1),
        linkname: text(block, 157, 100).replace(/\0+$/, ''),
        magic: text(block, 257, 8),
        uname: text(block, 265, 32),
        gname: text(block, 297, 32),
        prefix: text(block, 345, 155).replace(/\0+$/, ''),
      },
      data: bytes.subarray(pos + 512, pos + 512 + size),
    });
    pos += 512 + Math.ceil(size / 512) * 512;
  }
  expect(bytes.subarray(pos)).toEqual(Buffer.alloc(1024));
  return out;
}

const codexInput = (files: SessionFile[], extra: Partial<BundleInput> = {}): BundleInput => ({
  harness: 'codex',
  profile: 'codex-v0_145_0',
  sessionId: 's-1',
  capturedAtUnixMs: 1,
  root: dir,
  files,
  ...extra,
});

async function rollout(name = 'rollout.jsonl', content = '{"a":1}\n'): Promise<SessionFile> {
  await writeFile(path.join(dir, name), content);
  return { role: 'rollout', name, nativePath: name, path: path.join(dir, name) };
}

describe('writeBundle', () => {
  it('round trips through verify and extract with the same bytes', async () => {
    const input = await claudeSession(dir);
    const out = path.join(dir, 'session.bundle');
    const written = await writeBundle(input, out, { profiles });
    const bytes = await readFile(out);
    expect(written.size).toBe(bytes.length);
    expect(written.manifest.files.map((f) => [f.role, f.path, f.native_path])).toEqual([
      ['primary_transcript', 'files/0000-c0ffee.jsonl', '-home-dev-app/c0ffee.jsonl'],
      ['session_companion', 'files/0001-agent-1.jsonl', '-home-dev-app/c0ffee/subagents/agent-1.jsonl'],
    ]);
    expect(written.manifest).toMatchObject({
      title: input.title,
      summary: input.summary,
      cwd: input.cwd,
      repository: input.repository,
    });
    expect((await stat(out)).mode & 0o777).toBe(0o600);

    const verified = await verifyBundle(out, { profiles });
    expect(verified).toEqual(written);

    const target = path.join(dir, 'restore', 'x');
    const extracted = await extractBundle(out, target, { profiles });
    expect(extracted.sha256).toBe(written.sha256);
    expect(await filesUnder(target)).toEqual(['files/0000-c0ffee.jsonl', 'files/0001-agent-1.jsonl', 'manifest.json']);
    for (const [i, file] of input.files.entries()) {
      expect(await readFile(extracted.files[i]!)).toEqual(await readFile(file.path!));
      expect((await stat(extracted.files[i]!)).mode & 0o777).toBe(0o600);
    }
    expect(JSON.parse(await readFile(path.join(target, 'manifest.json'), 'utf8'))).toEqual(written.manifest);
    expect((await stat(target)).mode & 0o777).toBe(0o700);
    expect((await stat(path.join(target, 'files'))).mode & 0o777).toBe(0o700);
  });

  it('bundles content made at capture, with no native path, for a profile without a session root', async () => {
    const content = Buffer.from(JSON.stringify({ info: { id: 'ses_1' }, messages: [] }));
    const out = path.join(dir, 'oc.bundle');
    const written = await writeBundle(
      {
        harness: 'opencode',
        profile: 'opencode-v1_2_0',
        sessionId: 'ses_1',
        capturedAtUnixMs: 5,
        files: [{ role: 'portable_export', name: 'export.json', content }],
      },
      out,
      { profiles },
    );
    expect(written.manifest.files[0]).not.toHaveProperty('native_path');
    const target = path.join(dir, 'x');
    const extracted = await extractBundle(out, target, { profiles });
    expect(await readFile(extracted.files[0]!)).toEqual(content);
  });

  it('is byte-for-byte reproducible', async () => {
    const input = await claudeSession(dir);
    const a = await writeBundle(input, path.join(dir, 'a.bundle'));
    const b = await writeBundle(input, path.join(dir, 'b.bundle'));
    expect(b.sha256).toBe(a.sha256);
    expect(await readFile(path.join(dir, 'b.bundle'))).toEqual(await readFile(path.join(dir, 'a.bundle')));
    // A changed byte in a file changes the bundle.
    await writeFile(input.files[1]!.path!, 'changed\n');
    expect((await writeBundle(input, path.join(dir, 'c.bundle'))).sha256).not.toBe(a.sha256);
  });

  it(
    'compresses in parallel blocks into one standard deflate stream that gunzip, GNU tar and verify read, ' +
      'reproducibly',
    async () => {
      // Many blocks (more than are ever in flight), text that refers back across block boundaries, and random bytes.
      const lines = Array.from(
        { length: 40_000 },
        (_, i) => `{"turn":${i},"text":"the same words again ${i % 97}"}`,
      ).join('\n');
      const random = randomBytes(DEFLATE_BLOCK * 2 + 1234);
      const input: BundleInput = {
        harness: 'opencode',
        profile: 'opencode-v1_2_0',
        sessionId: 'ses_1',
        capturedAtUnixMs: 5,
        files: [{ role: 'portable_export', name: 'export.json', content: Buffer.concat([Buffer.from(lines), random]) }],
      };
      const out = path.join(dir, 'big.bundle');
      const written = await writeBundle(input, out, { profiles });
      const bytes = await readFile(out);
      expect(bytes.length).toBeLessThan(lines.length / 4 + random.length + 4096);
      expect(parseTar(zlib.gunzipSync(bytes))[0]!.data).toEqual(input.files[0]!.content);
      expect(
        execFileSync('tar', ['-xzOf', out, 'files/0000-export.json'], { maxBuffer: 64 * 1024 * 1024 }).equals(
          input.files[0]!.content!,
        ),
      ).toBe(true);
      expect(await verifyBundle(out, { profiles })).toEqual(written);
      expect((await writeBundle(input, path.join(dir, 'again.bundle'), { profiles })).sha256).toBe(written.sha256);
    },
  );

  it('ends the deflate stream properly when the tar fills its last block exactly', async () => {
    // Headers, manifest and end marker are multiples of 512: pad the one file so the tar is a whole number of blocks.
    const probe = await writeBundle(
      {
        harness: 'opencode',
        profile: 'opencode-v1_2_0',
        sessionId: 'ses_1',
        capturedAtUnixMs: 5,
        files: [{ role: 'portable_export', name: 'f.json', content: Buffer.alloc(512, 0x61) }],
      },
      path.join(dir, 'probe.bundle'),
    );
    const tarBytes = zlib.gunzipSync(await readFile(path.join(dir, 'probe.bundle'))).length;
    const content = Buffer.alloc(DEFLATE_BLOCK * 3 - (tarBytes - 512), 0x61);
    const out = path.join(dir, 'exact.bundle');
    await writeBundle(
      {
        harness: 'opencode',
        profile: 'opencode-v1_2_0',
        sessionId: 'ses_1',
        capturedAtUnixMs: 5,
        files: [{ role: 'portable_export', name: 'f.json', content }],
      },
      out,
    );
    const tarred = zlib.gunzipSync(await readFile(out));
    expect(tarred.length % DEFLATE_BLOCK).toBe(0);
    expect(parseTar(tarred)[0]!.data).toEqual(content);
    expect(probe.size).toBeGreaterThan(0);
    await verifyBundle(out, { profiles });
  });

  it('writes fixed gzip and tar headers: mode 0600, mtime 0, uid/gid 0, no names, files then manifest', async () => {
    const input = await claudeSession(dir);
    const long = `${'l'.repeat(200)}.jsonl`;
    await writeFile(path.join(dir, 'projects', '-home-dev-app', long), 'long\n');
    input.files.push({
      role: 'session_companion',
      name: long,
      nativePath: `-home-dev-app/${long}`,
      path: path.join(dir, 'projects', '-home-dev-app', long),
    });
    const out = path.join(dir, 'h.bundle');
    await writeBundle(input, out);
    const bytes = await readFile(out);
    expect(bytes.subarray(0, 10)).toEqual(Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3]));
    const entries = parseTar(zlib.gunzipSync(bytes));
    const names = entries.map((e) => (e.header.prefix ? `${e.header.prefix}/${e.header.name}` : e.header.name));
    expect(names).toEqual([
      'files/0000-c0ffee.jsonl',
      'files/0001-agent-1.jsonl',
      `PaxHeader/0002-${long}`.slice(0, 100),
      `0002-${long}`.slice(0, 90),
      'manifest.json',
    ]);
    for (const { header } of entries) {
      expect(header).toMatchObject({
        mode: '0000600\0',
        uid: '0000000\0',
        gid: '0000000\0',
        mtime: '00000000000\0',
        linkname: '',
        magic: 'ustar\u000000',
        uname: '\0'.repeat(32),
        gname: '\0'.repeat(32),
      });
      expect(['0', 'x']).toContain(header.type);
    }
    // The one pax header holds the long path and nothing else (no times).
    expect(entries[2]!.header.type).toBe('x');
    const record = ` path=files/0002-${long}\n`;
    expect(entries[2]!.data.toString()).toBe(`${record.length + 3}${record}`);
    expect(JSON.parse(entries[4]!.data.toString()).files).toHaveLength(3);
    expect(entries[0]!.data.toString()).toBe(await readFile(input.files[0]!.path!, 'utf8'));
  });

  it('is read by GNU tar and node-tar as plain regular files, long names included', async () => {
    const input = await claudeSession(dir);
    const long = `${'l'.repeat(150)}.jsonl`;
    input.files.push({ role: 'session_companion', name: long, content: Buffer.from('long\n') });
    const out = path.join(dir, 'i.bundle');
    await writeBundle(input, out);
    const listing = execFileSync('tar', ['-tvzf', out], { encoding: 'utf8' }).trim().split('\n');
    expect(listing).toHaveLength(4);
    for (const line of listing)
      expect(line).toMatch(/^-rw------- 0\/0 .* 1970-01-01 00:00 (files\/000[0-2]-|manifest\.json)/);
    expect(listing[2]).toMatch(new RegExp(` files/0002-${long}$`));
    const seen: string[] = [];
    await tar.list({ file: out, onReadEntry: (e) => void seen.push(`${e.type} ${e.path} ${e.mode?.toString(8)}`) });
    expect(seen).toEqual([
      'File files/0000-c0ffee.jsonl 600',
      'File files/0001-agent-1.jsonl 600',
      `File files/0002-${long} 600`,
      'File manifest.json 600',
    ]);
  });

  // procfs files claim 0 bytes and hold more: to the writer, a file that grew after it was stat'ed.
  it.skipIf(!existsSync('/proc/self/stat'))(
    "cuts a file that grows while being read at the size first stat'ed",
    async () => {
      const out = path.join(dir, 'g.bundle');
      const written = await writeBundle(
        codexInput([{ role: 'rollout', name: 'stat', nativePath: 'stat', path: '/proc/self/stat' }], {
          root: '/proc/self',
        }),
        out,
      );
      expect(written.manifest.files[0]).toMatchObject({ size: 0, sha256: createHash('sha256').digest('hex') });
      await verifyBundle(out, { profiles });
    },
  );

  it('replaces an existing bundle atomically and leaves no temporary file', async () => {
    const out = path.join(dir, 'out', 'r.bundle');
    await mkdir(path.dirname(out));
    await writeFile(out, 'old');
    await writeBundle(codexInput([await rollout()]), out);
    expect(await readdir(path.dirname(out))).toEqual(['r.bundle']);
    await verifyBundle(out, { profiles });
  });

  it('exports the content type and caps', () => {
    expect(BUNDLE_CONTENT_TYPE).toBe('application/vnd.blue.session-bundle+tar+gzip');
    expect(LIMITS).toMatchObject({ bundleBytes: 128 * 1024 ** 2, fileBytes: 64 * 1024 ** 2, files: 2048 });
  });
});

describe('writeBundle refuses', () => {
  async function refusal(input: BundleInput, options: Parameters<typeof writeBundle>[2] = {}): Promise<string> {
    const out = path.join(dir, 'refused', 'r.bundle');
    await mkdir(path.dirname(out), { recursive: true });
    const error = await rejected(writeBundle(input, out, options));
    expect(error.code).toBe('ARTIFACT_INVALID');
    expect(await readdir(path.dirname(out))).toEqual([]);
    return error.message;
  }

  it('a symlinked file, even to a file inside the root', async () => {
    const real = await rollout('real.jsonl');
    await symlink(real.path!, path.join(dir, 'link.jsonl'));
    const message = await refusal(
      codexInput([{ ...real, name: 'link.jsonl', nativePath: 'link.jsonl', path: path.join(dir, 'link.jsonl') }]),
    );
    expect(message).toBe(`session file "link.jsonl" (${path.join(dir, 'link.jsonl')}): is a symbolic link`);
  });

  it('a hard-linked file (its other name may be any file of the machine)', async () => {
    const real = await rollout('real.jsonl');
    await link(real.path!, path.join(dir, 'second-name.jsonl'));
    expect(await refusal(codexInput([real]))).toBe(
      `session file "real.jsonl" (${real.path!}): has 2 hard links (only a file with one name is read)`,
    );
  });

  it('a file outside the root, directly or through a linked directory', async () => {
    const outside = await mkdtemp(path.join(tmpdir(), 'blue-agent-outside-'));
    try {
      await writeFile(path.join(outside, 'secret'), 'key');
      const root = path.join(dir, 'root');
      await mkdir(root);
      const direct = await refusal(
        codexInput([{ role: 'rollout', name: 'secret', nativePath: 'secret', path: path.join(outside, 'secret') }], {
          root,
        }),
      );
      expect(direct).toMatch(/: lies outside the session root .* \(it resolves to .*secret\)$/);
      await symlink(outside, path.join(root, 'sessions'));
      const linked = await refusal(
        codexInput(
          [
            {
              role: 'rollout',
              name: 'secret',
              nativePath: 'sessions/secret',
              path: path.join(root, 'sessions', 'secret'),
            },
          ],
          { root },
        ),
      );
      expect(linked).toMatch(/lies outside the session root/);
    } finally {
      await rm(outside, { recursive: true, force: true });
    }
  });

  it('a directory and a FIFO', async () => {
    await mkdir(path.join(dir, 'd'));
    expect(
      await refusal(codexInput([{ role: 'rollout', name: 'd', nativePath: 'd', path: path.join(dir, 'd') }])),
    ).toMatch(/: is not a regular file \(a directory\)/);
    execFileSync('mkfifo', [path.join(dir, 'fifo')]);
    expect(
      await refusal(codexInput([{ role: 'rollout', name: 'fifo', nativePath: 'fifo', path: path.join(dir, 'fifo') }])),
    ).toMatch(/: is not a regular file \(a FIFO\)/);
  });

  it('a file over 64 MiB (sparse, never written) and files adding up to over 128 MiB', async () => {
    const sparse = async (name: string, size: number): Promise<SessionFile> => {
      const handle = await open(path.join(dir, name), 'w');
      await handle.truncate(size);
      await handle.close();
      return { role: 'session_companion', name, nativePath: name, path: path.join(dir, name) };
    };
    const big = await sparse('big.jsonl', 64 * 1024 * 1024 + 1);
    expect(await refusal(codexInput([{ ...big, role: 'rollout' }]))).toMatch(
      /"big.jsonl" .*: is 67108865 bytes, over the 64.0 MiB cap for one file/,
    );
    const parts = [
      await sparse('a', 60 * 1024 ** 2),
      await sparse('b', 60 * 1024 ** 2),
      await sparse('c', 60 * 1024 ** 2),
    ];
    expect(await refusal(codexInput(parts))).toMatch(
      /files add up to more than 128.0 MiB, the cap for one bundle \(at session file "c"/,
    );
  });

  it('more than 2048 files', async () => {
    const files = Array.from(
      { length: 2049 },
      (_, i): SessionFile => ({ role: 'session_state', name: `f${i}`, content: Buffer.from('x') }),
    );
    expect(await refusal(codexInput(files))).toBe('session s-1 has 2049 files, over the cap of 2048');
    expect(await refusal(codexInput([]))).toBe('session s-1 has no files to bundle');
  });

  it('bad bundle names', async () => {
    for (const name of ['a/b', '../x', '', 'x y', 'a\0b', 'naïve', 'x'.repeat(251)]) {
      const message = await refusal(codexInput([{ role: 'rollout', name, content: Buffer.from('x') }]));
      expect(message).toMatch(
        /its bundle name (must be 1 or more characters of A-Z a-z 0-9 \. _ -|is longer than 250 characters)$/,
      );
    }
    expect(
      await refusal(
        codexInput([
          { role: 'rollout', name: 'a', content: Buffer.from('x') },
          { role: 'rollout', name: 'a', content: Buffer.from('y') },
        ]),
      ),
    ).toBe('session file "a": the bundle name is used twice');
  });

  it('unsafe or duplicate native paths, and a native path that is not where the file lies', async () => {
    const file = await rollout();
    const cases: [string, RegExp][] = [
      ['/etc/passwd', /native path "\/etc\/passwd" is absolute$/],
      ['../x', /native path "..\/x" contains ".."$/],
      ['a/./b', /contains a "." segment$/],
      ['a\\b', /contains a backslash$/],
      ['a\0b', /contains a NUL character$/],
      ['a//b', /has an empty path segment/],
      ['C:/x', /starts with a drive letter$/],
      ['other.jsonl', /its native path other.jsonl is not where it lies in the session root \(rollout.jsonl\)$/],
    ];
    for (const [nativePath, message] of cases)
      expect(await refusal(codexInput([{ ...file, nativePath }]))).toMatch(message);
    const second = await rollout('second.jsonl');
    expect(await refusal(codexInput([file, { ...second, nativePath: 'rollout.jsonl' }]))).toMatch(
      /"second.jsonl" .*: native path rollout.jsonl is also the native path of "rollout.jsonl"$/,
    );
  });

  it('paths without a root, relative paths, and files with neither or both sources', async () => {
    const file = await rollout();
    expect(await refusal(codexInput([file], { root: undefined }))).toMatch(
      /a file on disk needs a session root to lie inside/,
    );
    expect(await refusal(codexInput([file], { root: 'relative' }))).toMatch(
      /the session root "relative" is not an absolute path/,
    );
    expect(await refusal(codexInput([{ ...file, path: 'rollout.jsonl' }]))).toMatch(/the path is not absolute/);
    expect(await refusal(codexInput([{ ...file, content: Buffer.from('x') }]))).toMatch(/has both a path and content/);
    expect(await refusal(codexInput([{ role: 'rollout', name: 'x' }]))).toMatch(/has neither a path nor content/);
    expect(await refusal(codexInput([{ ...file, path: path.join(dir, 'missing') }]))).toMatch(
      /cannot be read \(ENOENT\)/,
    );
  });

  it('metadata the manifest schema refuses, before reading any file', async () => {
    const file = await rollout();
    expect(await refusal(codexInput([file], { title: 't'.repeat(257) }))).toMatch(
      /invalid bundle manifest: \/title must NOT have more than 256 characters/,
    );
    expect(await refusal(codexInput([file], { sessionId: 'a b' }))).toMatch(/\/native_session_id must match pattern/);
    expect(await refusal(codexInput([file], { capturedAtUnixMs: -1 }))).toMatch(/\/captured_at_unix_ms must be >= 0/);
  });

  it('roles the profile does not allow, when given the profiles', async () => {
    const file = await rollout();
    expect(await refusal(codexInput([{ ...file, role: 'primary_transcript' }]), { profiles })).toMatch(
      new RegExp(
        'session file "rollout.jsonl" .*: role primary_transcript is not one of profile ' +
          String.raw`codex-v0_145_0's roles \(rollout\)`,
      ),
    );
    expect(await refusal(codexInput([file], { profile: 'codex-v1' }), { profiles })).toBe(
      'compatibility profile "codex-v1" is unknown to this blue-agent',
    );
  });

  it('a bundle that grows past the cap while being written, removing the partial file', async () => {
    const file = await rollout('random.jsonl', randomBytes(256 * 1024).toString('base64'));
    expect(await refusal(codexInput([file]), { limits: { bundleBytes: 64 * 1024 } })).toBe(
      'the bundle would be larger than 64.0 KiB, the cap',
    );
    const big = await rollout('big.jsonl', randomBytes(24 * 1024 * 1024).toString('base64'));
    expect(await refusal(codexInput([big]), { limits: { bundleBytes: 1024 * 1024 } })).toBe(
      'the bundle would be larger than 1.0 MiB, the cap',
    );
  });

  // sysfs files claim 4096 bytes and hold fewer: to the writer, a file that shrank after it was stat'ed.
  it.skipIf(!existsSync('/sys/devices/system/cpu/online'))('a file that shrinks while being read', async () => {
    const root = '/sys/devices/system/cpu';
    const message = await refusal(
      codexInput([{ role: 'rollout', name: 'online', nativePath: 'online', path: `${root}/online` }], { root }),
    );
    expect(message).toMatch(
      /^session file "online" \(\/sys\/devices\/system\/cpu\/online\): shrank while being read \(\d+ of 4096 bytes\)$/,
    );
  });

  it('content that compresses like a decompression bomb', async () => {
    const file = await rollout('zeros.jsonl', '\n'.repeat(4 * 1024 * 1024));
    expect(await refusal(codexInput([file]), { limits: { ratioFloorBytes: 1024 * 1024 } })).toMatch(
      /compress more than 200:1, which a restore refuses/,
    );
  });
});

describe('extractBundle', () => {
  let bundle: string;
  beforeEach(async () => {
    bundle = path.join(dir, 'e.bundle');
    await writeBundle(codexInput([await rollout()]), bundle);
  });

  it('extracts into an existing empty directory', async () => {
    const target = path.join(dir, 'empty');
    await mkdir(target);
    const result = await extractBundle(bundle, target, { profiles });
    expect(result.files).toEqual([path.join(target, 'files', '0000-rollout.jsonl')]);
  });

  it('refuses a directory that is not empty, a file, or a symlink, touching nothing', async () => {
    const full = path.join(dir, 'full');
    await mkdir(full);
    await writeFile(path.join(full, 'keep'), 'mine');
    expect((await rejected(extractBundle(bundle, full, { profiles }))).message).toBe(`${full}: is not empty`);
    expect(await filesUnder(full)).toEqual(['keep']);
    expect((await rejected(extractBundle(bundle, path.join(full, 'keep'), { profiles }))).message).toMatch(
      /exists and is not a directory$/,
    );
    const empty = path.join(dir, 'elsewhere');
    await mkdir(empty);
    await symlink(empty, path.join(dir, 'link'));
    const error = await rejected(extractBundle(bundle, path.join(dir, 'link'), { profiles }));
    expect(error.code).toBe('UNSAFE_PATH');
    expect(error.message).toMatch(/is a symbolic link$/);
    expect(await filesUnder(empty)).toEqual([]);
  });
});

describe('a consistent snapshot (stable), for captures nobody said had ended', () => {
  async function growing(): Promise<{ input: BundleInput; file: string; append: () => Promise<void> }> {
    const root = path.join(dir, 'root');
    await mkdir(root, { recursive: true });
    const file = path.join(root, 'transcript.jsonl');
    // Random bytes deflate slowly enough that an append lands while the file is read.
    await writeFile(file, randomBytes(24 * 1024 * 1024));
    const input: BundleInput = {
      harness: 'claude',
      profile: 'claude-v2_0_12',
      sessionId: 'growing-session',
      capturedAtUnixMs: 1,
      root,
      captureReason: 'idle',
      files: [{ role: 'primary_transcript', name: 'transcript.jsonl', nativePath: 'transcript.jsonl', path: file }],
    };
    const append = async () => {
      const handle = await open(file, 'a');
      await handle.write('{"type":"user"}\n');
      await handle.close();
    };
    return { input, file, append };
  }

  it('refuses with SESSION_CHANGING when a file changes while it is read, and leaves nothing behind', async () => {
    const { input, append } = await growing();
    const out = path.join(dir, 'stable.bundle');
    const writing = writeBundle(input, out, { stable: true });
    await new Promise((resolve) => setTimeout(resolve, 150));
    await append();
    const error = await rejected(writing);
    expect(error.code).toBe('SESSION_CHANGING');
    expect(error.message).toContain('changed while it was being read');
    expect(existsSync(out)).toBe(false);
    expect((await readdir(dir)).filter((n) => n.includes('.partial'))).toEqual([]);
  });

  it(
    'without it, a file still being appended to is cut at the size it had at open; the manifest records why it ' +
      'was captured',
    async () => {
      const { input, append } = await growing();
      const out = path.join(dir, 'cut.bundle');
      const writing = writeBundle(input, out);
      await new Promise((resolve) => setTimeout(resolve, 150));
      await append();
      const written = await writing;
      expect(written.manifest.files[0]!.size).toBe(24 * 1024 * 1024);
      expect(written.manifest.capture_reason).toBe('idle');
      expect((await verifyBundle(out, { profiles })).manifest.capture_reason).toBe('idle');
    },
  );
});

it(
  'a redactor sees every file whole; sizes and digests describe the redacted bytes, and the manifest names the ' +
    'rules',
  async () => {
    const root = path.join(dir, 'redact-root');
    await mkdir(root, { recursive: true });
    const file = path.join(root, 'transcript.jsonl');
    await writeFile(file, '{"text":"token ghp_0123456789abcdefghijklmnopqrstuvwxyz"}\n');
    const out = path.join(dir, 'redacted.bundle');
    const written = await writeBundle(
      {
        harness: 'claude',
        profile: 'claude-v2_0_12',
        sessionId: 'redacted-session',
        capturedAtUnixMs: 1,
        root,
        title: 'token ghp_0123456789abcdefghijklmnopqrstuvwxyz',
        files: [{ role: 'primary_transcript', name: 'transcript.jsonl', nativePath: 'transcript.jsonl', path: file }],
      },
      out,
      {
        redaction: {
          rules: 'test-rules',
          version: '1',
          redact: (bytes) => ({
            bytes: Buffer.from(bytes.toString('utf8').replace(/ghp_[A-Za-z0-9]{36}/g, '[REDACTED:GITHUB_TOKEN]')),
            replaced: 1,
          }),
          redactText: async (text) => ({ text: text.replace(/ghp_[A-Za-z0-9]{36}/g, '[REDACTED:TEST]'), replaced: 1 }),
        },
      },
    );
    const expected = '{"text":"token [REDACTED:GITHUB_TOKEN]"}\n';
    // The manifest's title went through the same redactor, and counts.
    expect(written.manifest.title).toBe('token [REDACTED:TEST]');
    expect(written.manifest.redaction).toEqual({ mode: 'secrets', rules: 'test-rules', version: '1', replaced: 2 });
    expect(written.manifest.files[0]).toMatchObject({
      size: Buffer.byteLength(expected),
      sha256: createHash('sha256').update(expected).digest('hex'),
    });
    const verified = await verifyBundle(out, { profiles });
    expect(verified.manifest.redaction?.rules).toBe('test-rules');
  },
);
