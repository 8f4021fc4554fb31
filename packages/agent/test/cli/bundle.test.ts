/**
 * `blue-agent bundle verify|inspect|extract`: exit codes and output, through the command line's main().
 */
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { writeBundle, type BundleResult } from '@blue-agent/contract/bundle/index.js';
import { main } from '../../src/cli/main.js';
import { bufferOutput, type Context } from '../../src/context.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { claudeSession, codexBundle, filesUnder } from '../../../../test/support/handmade-bundles.js';

let t: TestHome;
let bundle: string;
let written: BundleResult;

beforeEach(async () => {
  t = await makeTestHome();
  const input = await claudeSession(t.root);
  input.title = 'Fix \u001b[31mred\u001b[0m test';
  bundle = path.join(t.home, 'session.bundle');
  written = await writeBundle(input, bundle);
});
afterEach(async () => t.cleanup());

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const stdout = bufferOutput();
  const stderr = bufferOutput();
  const ctx: Context = t.context({ stdout, stderr });
  const code = await main(args, ctx);
  return { code, stdout: stdout.text(), stderr: stderr.text() };
}

describe('bundle verify', () => {
  it('prints one line for a valid bundle, relative to the working directory', async () => {
    const r = await cli(['bundle', 'verify', 'session.bundle']);
    expect(r).toEqual({
      code: 0,
      stdout:
        `session.bundle: valid blue-session-bundle-v1, claude claude-v2_0_12 session c0ffee, 2 files, ` +
        `${(written.size / 1024).toFixed(1)} KiB, sha256 ${written.sha256}\n`,
      stderr: '',
    });
  });

  it('--json gives the manifest, size and digest', async () => {
    const r = await cli(['bundle', 'verify', bundle, '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({
      ok: true,
      file: bundle,
      size: written.size,
      sha256: written.sha256,
      manifest: written.manifest,
    });
  });

  it('exits 1 naming the violation', async () => {
    const bad = path.join(t.home, 'bad.bundle');
    await writeFile(
      bad,
      codexBundle(({ entries }) => void (entries[0]!.name = '../../x')),
    );
    const r = await cli(['bundle', 'verify', bad]);
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`blue-agent: error [BUNDLE_INVALID]: ${bad}: entry "../../x" has ".." in its name\n`);
    expect(r.stderr).toContain('hint: The bundle is damaged or was not made by blue-agent');
    const json = await cli(['bundle', 'verify', bad, '--json']);
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: false, error: { code: 'BUNDLE_INVALID', file: bad } });
  });
});

describe('bundle inspect', () => {
  it('prints the fields, then a table of files, with control characters escaped', async () => {
    const r = await cli(['bundle', 'inspect', bundle]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines.slice(0, 10)).toEqual([
      `bundle      ${bundle}`,
      'format      blue-session-bundle-v1 (schema 1)',
      'harness     claude',
      'profile     claude-v2_0_12',
      'session     c0ffee',
      'captured    2023-11-14T22:13:20.123Z (1700000000123)',
      'cwd         /home/dev/app',
      'repository  /home/dev/app (git@example.com:dev/app.git)',
      'title       Fix \\u001b[31mred\\u001b[0m test',
      'summary     Find why the test fails one run in ten',
    ]);
    expect(r.stdout).not.toContain('\u001b');
    expect(lines[11]).toMatch(/^ROLE +PATH +NATIVE PATH +SIZE +SHA256$/);
    const [f0, f1] = written.manifest.files;
    expect(lines[12]!.split(/ +/)).toEqual([f0!.role, f0!.path, f0!.native_path, String(f0!.size), f0!.sha256]);
    expect(lines[13]!.split(/ +/)).toEqual([f1!.role, f1!.path, f1!.native_path, String(f1!.size), f1!.sha256]);
  });

  it('--json gives the manifest; a hostile bundle exits 1', async () => {
    expect(JSON.parse((await cli(['bundle', 'inspect', bundle, '--json'])).stdout)).toEqual({
      ok: true,
      file: bundle,
      manifest: written.manifest,
    });
    const bad = path.join(t.home, 'bad.bundle');
    await writeFile(
      bad,
      codexBundle(({ entries }) => void Object.assign(entries[0]!, { type: '2', linkname: '/etc/shadow', data: '' })),
    );
    const r = await cli(['bundle', 'inspect', bad]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('is a symbolic link to "/etc/shadow"');
  });
});

describe('bundle extract', () => {
  it('verifies, extracts and lists the files', async () => {
    const r = await cli(['bundle', 'extract', bundle, 'out']);
    const dir = path.join(t.home, 'out');
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]).toBe(`${bundle}: verified and extracted manifest.json and 2 files into ${dir}`);
    expect(r.stdout).toMatch(/ {2}files\/0000-c0ffee.jsonl +primary_transcript +[0-9.]+ KiB\n/);
    expect(await filesUnder(dir)).toEqual(['files/0000-c0ffee.jsonl', 'files/0001-agent-1.jsonl', 'manifest.json']);
    const again = await cli(['bundle', 'extract', bundle, 'out', '--json']);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout).error).toMatchObject({ code: 'UNSAFE_PATH', message: `${dir}: is not empty` });
  });

  it('--json gives the extracted paths; a hostile bundle exits 1 and writes nothing', async () => {
    const r = await cli(['bundle', 'extract', bundle, path.join(t.root, 'x'), '--json']);
    const doc = JSON.parse(r.stdout);
    expect(doc).toMatchObject({ ok: true, dir: path.join(t.root, 'x'), sha256: written.sha256 });
    expect(await readFile(doc.files[0], 'utf8')).toContain('"uuid":"main-0"');
    const bad = path.join(t.home, 'bad.bundle');
    await writeFile(
      bad,
      codexBundle(({ manifest }) => void (manifest.compatibility_profile = 'codex-v0_1_0')),
    );
    const failed = await cli(['bundle', 'extract', bad, 'y']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('compatibility profile "codex-v0_1_0" is unknown');
    expect(await filesUnder(path.join(t.home, 'y'))).toEqual([]);
  });
});
