/**
 * `sessions export` of local bundle files: markdown and json for each harness's recorded fixture, titled as its rig
 * says captures title it (`fixture.title`), checked against the golden files in each harness's test folder
 * (test/harnesses/<name>/golden/export.md and .json; regenerate with `npx vitest run test/sessions/export.test.ts -u`
 * and review the diff), plus the things an export must refuse or survive.
 */
import { createHash } from 'node:crypto';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { makeTestHome, type TestHome } from '../../../../test/support/context.js';
import { fixtureBundle, goldenExport } from '../../../../test/support/fixture-bundles.js';
import { allFixtures } from '../../../../test/support/rigs.js';

let t: TestHome;

beforeEach(async () => {
  t = await makeTestHome();
});

afterEach(async () => {
  await t.cleanup();
});

async function run(...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const before = { out: t.stdout.text().length, err: t.stderr.text().length };
  const code = await main(argv, t.ctx);
  return { code, stdout: t.stdout.text().slice(before.out), stderr: t.stderr.text().slice(before.err) };
}

describe('sessions export of a bundle file: golden output per harness', () => {
  for (const { harness, fixture, older } of allFixtures()) {
    const name = older ? `${harness} (${fixture.profile})` : harness;
    const golden = (format: 'md' | 'json') => goldenExport(harness, format, older ? fixture : undefined);
    it(`${name}: markdown (without --format)`, async () => {
      const file = path.join(t.root, `${harness}.bundle`);
      const title = fixture.title;
      await fixtureBundle(harness, file, title === undefined ? {} : { title }, fixture);
      const { code, stdout, stderr } = await run('sessions', 'export', file);
      expect(stderr).toBe('');
      expect(code).toBe(0);
      await expect(stdout).toMatchFileSnapshot(golden('md'));
    });

    it(`${name}: json`, async () => {
      const file = path.join(t.root, `${harness}.bundle`);
      const title = fixture.title;
      await fixtureBundle(harness, file, title === undefined ? {} : { title }, fixture);
      const { code, stdout } = await run('sessions', 'export', file, '--format', 'json');
      expect(code).toBe(0);
      const doc = JSON.parse(stdout);
      expect(doc.source).toBe('bundle-file');
      expect(doc.session).toBeNull();
      expect(doc.manifest.harness).toBe(harness);
      // The bundle's own digest depends on the compressor's exact output, which a zlib update may change: checked
      // against the file here, and left out of the golden file.
      const bytes = await readFile(file);
      expect(doc.bundle).toEqual({ size: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') });
      doc.bundle = { size: '<bundle size>', sha256: '<bundle sha256>' };
      await expect(`${JSON.stringify(doc, null, 2)}\n`).toMatchFileSnapshot(golden('json'));
    });
  }
});

describe('sessions export: what it checks', () => {
  it('validates --format before anything else (no Control API is even configured here)', async () => {
    const { code, stderr } = await run('sessions', 'export', '0123abcd', '--format', 'html');
    expect(code).toBe(2);
    expect(stderr).toContain('[USAGE]');
    expect(stderr).toContain('--format must be markdown or json');
  });

  it('refuses a tampered bundle file and writes nothing', async () => {
    const file = path.join(t.root, 'claude.bundle');
    await fixtureBundle('claude', file, { title: 'x' });
    const bytes = await readFile(file);
    // A byte of the deflated stream changed: the gzip checksum or a digest no longer matches.
    bytes[Math.floor(bytes.length / 2)]! ^= 0x55;
    await writeFile(file, bytes);
    const out = path.join(t.root, 'out.md');
    const { code, stdout, stderr } = await run('sessions', 'export', file, '--format', 'markdown', '--out', out);
    expect(code).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toContain('[BUNDLE_INVALID]');
    await expect(readFile(out)).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('refuses a file that is not a bundle', async () => {
    const foreign = path.join(t.root, 'not-a-bundle.bundle');
    await writeFile(foreign, 'this is not a bundle\n');
    const { code, stderr } = await run('sessions', 'export', foreign, '--format', 'json');
    expect(code).toBe(1);
    expect(stderr).toContain('[BUNDLE_INVALID]');
  });

  it('writes to --out (mode 0600) and says where', async () => {
    const file = path.join(t.root, 'opencode.bundle');
    await fixtureBundle('opencode', file, { title: 'Add a README for the CLI' });
    const out = path.join(t.root, 'export.md');
    const { code, stdout } = await run('sessions', 'export', file, '--format', 'markdown', '--out', out);
    expect(code).toBe(0);
    expect(stdout).toContain(`to ${out}`);
    expect(await readFile(out, 'utf8')).toBe(await readFile(goldenExport('opencode', 'md'), 'utf8'));
    expect((await stat(out)).mode & 0o777).toBe(0o600);
  });

  it('keeps hostile transcript text from breaking the markdown, cuts long turns, counts unreadable lines', async () => {
    const id = 'f9e2a96e-fd97-4f85-9cfe-b439ff59594a';
    const line = (record: unknown) => `${JSON.stringify(record)}\n`;
    const transcript =
      line({
        type: 'user',
        timestamp: '2026-11-30T10:00:00Z',
        message: {
          role: 'user',
          content: '# not a heading\n<script>alert(1)</script> \u001b[31mred\u001b[0m\n```\nunclosed fence',
        },
      }) +
      'this line is not JSON\n' +
      line({
        type: 'assistant',
        timestamp: '2026-11-30T10:00:01Z',
        message: {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'cat big' } }],
        },
      }) +
      line({
        type: 'user',
        timestamp: '2026-11-30T10:00:02Z',
        message: {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't1', content: `\`\`\`\n${'x'.repeat(10_000)}` }],
        },
      }) +
      line({ type: 'assistant', message: 'not an object' }) +
      line({
        type: 'assistant',
        timestamp: '2026-11-30T10:00:03Z',
        message: { role: 'assistant', content: [{ type: 'text', text: 'Done.\n===' }] },
      });
    const file = path.join(t.root, 'hostile.bundle');
    await fixtureBundle('claude', file, {
      files: [
        {
          role: 'primary_transcript',
          name: 'transcript.jsonl',
          nativePath: `-home-dev-work-proj/${id}.jsonl`,
          content: new TextEncoder().encode(transcript),
        },
      ],
    });
    const { code, stdout } = await run('sessions', 'export', file, '--format', 'markdown');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^# Session f9e2a96e$/m);
    expect(stdout).toContain('\\# not a heading');
    expect(stdout).not.toContain('<script>');
    expect(stdout).toContain('&lt;script>');
    expect(stdout).not.toContain('\u001b');
    // The user's unclosed fence is closed inside the turn, so the next heading is still a heading.
    expect(stdout).toMatch(/unclosed fence\n```\n\n### Assistant · 2026-11-30T10:00:01.000Z/);
    expect(stdout).toContain('- Tool call: `Bash: cat big`');
    // The tool output's own backticks cannot close its fence.
    expect(stdout).toContain('````text\n```\nxxxx');
    expect(stdout).toContain('_Output cut: 6,004 more characters._');
    expect(stdout).toContain('Done.\n\\===');
    expect(stdout).toContain('_Note: 2 records of the transcript could not be read and were skipped._');
  });
});
