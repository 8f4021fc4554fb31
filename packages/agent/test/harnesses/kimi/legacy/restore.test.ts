/**
 * Restoring a kimi-cli session: its native index merge (kimi.json work_dirs), text in, text out (every other byte and
 * entry is kept, the session's entry is added once, and merging again changes nothing), and a whole restore of its
 * recorded fixture through the restore engine.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { mergeKimiWorkDirs, mergeKimiWorkDirsBytes } from '../../../../src/harnesses/kimi/legacy/restore.js';
import { kimiWorkDirHash } from '../../../../src/harnesses/kimi/legacy/session.js';
import { applyRestore, prepareRestore } from '../../../../src/restore/index.js';
import type { TestHome } from '../../../../../../test/support/context.js';
import { blueErrorOf } from '../../../../../../test/support/recorded-sessions.js';
import {
  fixtureBundle,
  shippedProfiles,
  snapshot,
  useRestoreHomes,
} from '../../../../../../test/support/restore-homes.js';
import { KIMI_CLI_FIXTURE } from '../rig.js';

let source: TestHome;
let target: TestHome;
let destination: string;
useRestoreHomes('my_project', (homes) => ({ source, target, destination } = homes));

const prepare = async (bundle: string) =>
  prepareRestore(target.ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() });
const bundleOf = () => fixtureBundle('kimi', source, path.join(source.root, 'kimi.bundle'), KIMI_CLI_FIXTURE);

describe('Kimi kimi.json work_dirs', () => {
  it('adds an entry, updates an existing one in place, keeps unknown keys and other entries', () => {
    expect(JSON.parse(mergeKimiWorkDirs(null, '/w', 'id1'))).toEqual({
      work_dirs: [{ path: '/w', kaos: 'local', last_session_id: 'id1' }],
    });
    const text =
      '{\r\n  "work_dirs": [\r\n    {"path": "/w", "kaos": "local", "last_session_id": "old", "x": 1}\r\n  ],\r\n  ' +
      '"k": true\r\n}\r\n';
    const updated = mergeKimiWorkDirs(text, '/w', 'id1');
    expect(updated).toBe(text.replace('"old"', '"id1"'));
    expect(mergeKimiWorkDirs(updated, '/w', 'id1')).toBe(updated);
    const noList = mergeKimiWorkDirs('{"thinking": false}\n', '/w', 'id1');
    expect(JSON.parse(noList)).toEqual({
      thinking: false,
      work_dirs: [{ path: '/w', kaos: 'local', last_session_id: 'id1' }],
    });
    expect(() => mergeKimiWorkDirs('{"work_dirs": {}}', '/w', 'id1')).toThrow(/not a list/);
    expect(() => mergeKimiWorkDirs('[1]', '/w', 'id1')).toThrow(/not a JSON object/);
  });

  it('keeps every other entry whatever they hold (property)', () => {
    const entry = fc.record(
      {
        path: fc.string({ maxLength: 10 }),
        kaos: fc.constantFrom('local', 'ssh'),
        last_session_id: fc.string({ maxLength: 8 }),
        extra: fc.option(fc.integer(), { nil: undefined }),
      },
      { requiredKeys: ['path'] },
    );
    fc.assert(
      fc.property(
        fc.array(entry, { maxLength: 6 }),
        fc.dictionary(fc.constantFrom('thinking', 'other', 'z'), fc.jsonValue()),
        (dirs, extra) => {
          const text = `${JSON.stringify({ ...extra, work_dirs: dirs }, null, 2)}\n`;
          const merged = mergeKimiWorkDirs(text, '/dest', 'sid');
          const doc = JSON.parse(merged) as { work_dirs: Record<string, unknown>[] } & Record<string, unknown>;
          for (const [k, v] of Object.entries(extra)) expect(doc[k]).toEqual(JSON.parse(JSON.stringify(v)));
          const ours = doc.work_dirs.filter((d) => d.path === '/dest' && (d.kaos === 'local' || d.kaos === undefined));
          expect(ours.length).toBeGreaterThanOrEqual(1);
          expect(ours[0]!.last_session_id).toBe('sid');
          expect(
            doc.work_dirs.filter((d) => !(d.path === '/dest' && (d.kaos === 'local' || d.kaos === undefined))),
          ).toEqual(
            JSON.parse(
              JSON.stringify(dirs.filter((d) => !(d.path === '/dest' && (d.kaos === 'local' || d.kaos === undefined)))),
            ),
          );
          expect(mergeKimiWorkDirs(merged, '/dest', 'sid')).toBe(merged);
        },
      ),
    );
  });
});

describe('index bytes that are not valid UTF-8', () => {
  it('kimi.json that is not valid UTF-8 is refused, not re-encoded', () => {
    const text = Buffer.concat([
      Buffer.from('{"work_dirs": [], "name": "'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}\n'),
    ]);
    expect(() => mergeKimiWorkDirsBytes(text, '/w', 'id1')).toThrow(
      expect.objectContaining({ code: 'RESTORE_CONFLICT', message: expect.stringMatching(/not valid UTF-8/) }),
    );
    const valid = Buffer.from(
      '{"work_dirs": [{"path": "/w", "kaos": "local", "last_session_id": "id1"}], "name": "é"}\n',
    );
    expect(mergeKimiWorkDirsBytes(valid, '/w', 'id1')).toBe(valid);
  });
});

describe('Kimi kimi.json: duplicate keys and formatting', () => {
  it('refuses a document with a key given twice where the merge edits (top level, a work_dirs entry)', () => {
    const twice = '{"work_dirs": [], "work_dirs": [{"path": "/w", "kaos": "local", "last_session_id": "old"}]}\n';
    expect(() => mergeKimiWorkDirs(twice, '/w', 'id1')).toThrow(
      expect.objectContaining({
        code: 'NATIVE_CONFIG_CONFLICT',
        message: expect.stringMatching(/"work_dirs" appears twice/),
      }),
    );
    const entry = '{"work_dirs": [{"path": "/other", "path": "/w", "kaos": "local", "last_session_id": "old"}]}\n';
    expect(() => mergeKimiWorkDirs(entry, '/w', 'id1')).toThrow(
      expect.objectContaining({
        code: 'NATIVE_CONFIG_CONFLICT',
        message: expect.stringMatching(/work_dirs\[0\] has the key "path" twice/),
      }),
    );
    const key = '{"last_session_id": 1, "work_dirs": [{"path": "/w", "last_session_id": "a", "last_session_id": "b"}]}';
    expect(() => mergeKimiWorkDirs(key, '/w', 'id1')).toThrow(/twice/);
    // Duplicates deeper down (not edited) are the user's business.
    const deep = '{"x": {"a": 1, "a": 2}, "work_dirs": []}';
    expect(JSON.parse(mergeKimiWorkDirs(deep, '/w', 'id1')).work_dirs).toEqual([
      { path: '/w', kaos: 'local', last_session_id: 'id1' },
    ]);
  });

  it('keeps a compact file compact and a file indented with tabs or 4 spaces indented so', () => {
    const compact = '{"work_dirs":[{"path":"/a","kaos":"local","last_session_id":"x"}],"thinking":true}';
    const appended = mergeKimiWorkDirs(compact, '/w', 'id1');
    expect(appended).not.toMatch(/\n/);
    expect(appended.startsWith('{"work_dirs":[{"path":"/a","kaos":"local","last_session_id":"x"},')).toBe(true);
    expect(JSON.parse(appended)).toEqual({
      work_dirs: [
        { path: '/a', kaos: 'local', last_session_id: 'x' },
        { path: '/w', kaos: 'local', last_session_id: 'id1' },
      ],
      thinking: true,
    });
    const noList = mergeKimiWorkDirs('{"thinking":true}\n', '/w', 'id1');
    expect(noList.trimEnd()).not.toMatch(/\n/);
    expect(JSON.parse(noList)).toEqual({
      thinking: true,
      work_dirs: [{ path: '/w', kaos: 'local', last_session_id: 'id1' }],
    });

    const tabs = '{\n\t"work_dirs": [\n\t\t{\n\t\t\t"path": "/a"\n\t\t}\n\t]\n}\n';
    const tabbed = mergeKimiWorkDirs(tabs, '/w', 'id1');
    expect(tabbed.startsWith('{\n\t"work_dirs": [\n\t\t{\n\t\t\t"path": "/a"\n\t\t},')).toBe(true);
    expect(tabbed).not.toMatch(/\n +\S/);
    const four = `${JSON.stringify({ work_dirs: [{ path: '/a' }], k: 1 }, null, 4)}\n`;
    const spaced = mergeKimiWorkDirs(four, '/w', 'id1');
    expect(spaced).toContain('\n        {\n            "path": "/w",');
  });
});

describe('kimi-cli: a whole restore of its fixture', () => {
  it(
    'places the session under md5(destination), the plan file, and merges the work_dirs entry keeping the rest of ' +
      'kimi.json',
    async () => {
      const session = await bundleOf();
      const share = path.join(target.home, '.kimi');
      await mkdir(share, { recursive: true });
      const kimiJson = path.join(share, 'kimi.json');
      const original =
        '{\n  "work_dirs": [\n    {\n      "path": "/srv/other",\n      "kaos": "local",\n      "last_session_id": ' +
        '"keep-me",\n      "future_key": 1\n    }\n  ],\n  "thinking": true,\n  "unknown": {"a": [1, 2]}\n}\n';
      await writeFile(kimiJson, original);
      const prepared = await prepare(session.bundle);
      const result = await applyRestore(target.ctx, prepared);
      const hash = kimiWorkDirHash(destination);
      expect(result.placed).toContain(path.join(share, 'sessions', hash, session.sessionId, 'context.jsonl'));
      expect(result.placed).toContain(path.join(share, 'sessions', hash, session.sessionId, 'wire.jsonl'));
      expect(result.placed).toContain(path.join(share, 'plans', 'iron-man-storm-batman.md'));
      expect(result.placed.some((p) => p.includes(`${path.sep}tasks${path.sep}`))).toBe(false);
      expect(result.resumeArgv).toEqual(['kimi', '--session', session.sessionId]);
      const merged = await readFile(kimiJson, 'utf8');
      const doc = JSON.parse(merged) as { work_dirs: Record<string, unknown>[]; thinking: boolean; unknown: unknown };
      expect(doc.work_dirs).toEqual([
        { path: '/srv/other', kaos: 'local', last_session_id: 'keep-me', future_key: 1 },
        { path: destination, kaos: 'local', last_session_id: session.sessionId },
      ]);
      expect(doc.thinking).toBe(true);
      expect(doc.unknown).toEqual({ a: [1, 2] });
      // Every byte before the insertion is the user's.
      expect(merged.startsWith(original.slice(0, original.indexOf('\n  ],')))).toBe(true);
      for (const f of session.result.manifest.files) {
        if (f.role === 'kimi_state') continue; // made at capture (sanitised)
        const rel = f.native_path!;
        const bytes = await readFile(path.join(source.home, '.kimi', ...rel.split('/')));
        const placed = rel.startsWith('plans/')
          ? path.join(share, ...rel.split('/'))
          : path.join(share, 'sessions', hash, ...rel.split('/').slice(2));
        expect(await readFile(placed)).toEqual(bytes);
      }
    },
  );

  it('a kimi.json that does not parse is never overwritten, and nothing is placed', async () => {
    const session = await bundleOf();
    const share = path.join(target.home, '.kimi');
    await mkdir(share, { recursive: true });
    await writeFile(path.join(share, 'kimi.json'), '{"work_dirs": [ oops');
    const before = await snapshot(target.home);
    const prepared = await prepare(session.bundle);
    const error = await blueErrorOf(() => applyRestore(target.ctx, prepared));
    expect(error.code).toBe('NATIVE_CONFIG_PARSE');
    await prepared.dispose();
    expect(await snapshot(target.home)).toEqual(before);
  });
});

describe('kimi-cli: kimi.json', () => {
  it('that is not valid UTF-8 is refused, never re-encoded, and nothing is placed', async () => {
    const session = await bundleOf();
    const share = path.join(target.home, '.kimi');
    await mkdir(share, { recursive: true });
    await writeFile(
      path.join(share, 'kimi.json'),
      Buffer.concat([Buffer.from('{"work_dirs": [], "name": "'), Buffer.from([0xff]), Buffer.from('"}\n')]),
    );
    const before = await snapshot(target.home);
    const prepared = await prepare(session.bundle);
    const error = await blueErrorOf(() => applyRestore(target.ctx, prepared));
    await prepared.dispose();
    expect(error.code).toBe('RESTORE_CONFLICT');
    expect(error.message).toMatch(/not valid UTF-8/);
    expect(await snapshot(target.home)).toEqual(before);
  });
});
