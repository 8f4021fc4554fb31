/**
 * Hostile bundles: content that passed (or would pass) verification but must never be written where it says, and
 * profiles that cannot resume. Each is refused with a typed error and nothing written anywhere — not in the harness
 * folders, not outside them, and no staging folder left behind.
 */
import { createHash } from 'node:crypto';
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import { verifyBundle } from '@blue-agent/contract/bundle/index.js';
import { prepareRestore } from '../../src/restore/index.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import type { TestHome } from '../../../../test/support/context.js';
import { rejected } from '../../../../test/support/errors.js';
import {
  fixtureProfile,
  rawBundle,
  restoreHome,
  shippedProfiles,
  snapshot,
  type RawFile,
} from '../../../../test/support/restore-homes.js';

const ID = '0b7c4a1e-1111-4222-8333-944455556666';
const HASH = 'a'.repeat(32);
const META =
  '{"timestamp":"2026-11-30T16:33:24.960Z","type":"session_meta",' +
  `"payload":{"id":"${ID}","timestamp":"2026-11-30T16:33:24.929Z","cwd":"/w"}}\n`;

let t: TestHome;
let destination: string;

beforeEach(async () => {
  t = await restoreHome();
  await mkdir(path.join(t.root, 'dest'));
  destination = await realpath(path.join(t.root, 'dest'));
});

afterEach(async () => {
  await t.cleanup();
});

interface Case {
  name: string;
  harness: HarnessName;
  profile?: string;
  files: RawFile[];
  code: string;
  message: RegExp;
}

const claudeTranscript: RawFile = {
  role: 'primary_transcript',
  name: 'transcript.jsonl',
  native_path: `-w/${ID}.jsonl`,
  content: '{"type":"user"}\n',
};
const kimiFiles = (extra: RawFile[]): RawFile[] => [
  { role: 'agent_wire_history', name: 'wire.jsonl', native_path: `sessions/${HASH}/${ID}/wire.jsonl`, content: '{}\n' },
  { role: 'kimi_state', name: 'state.json', native_path: `sessions/${HASH}/${ID}/state.json`, content: '{}\n' },
  {
    role: 'session_state',
    name: 'context.jsonl',
    native_path: `sessions/${HASH}/${ID}/context.jsonl`,
    content: '{}\n',
  },
  ...extra,
];

const WD = `wd_proj_${'c'.repeat(12)}`;
const kimiCodeFiles = (extra: RawFile[]): RawFile[] => [
  {
    role: 'agent_wire_history',
    name: 'wire.jsonl',
    native_path: `${WD}/${ID}/agents/main/wire.jsonl`,
    content: '{}\n',
  },
  {
    role: 'kimi_state',
    name: 'state.json',
    native_path: `${WD}/${ID}/state.json`,
    content: `{"id": "${ID}", "version": 2, "cwd": "/w"}\n`,
  },
  ...extra,
];

const cases: Case[] = [
  {
    name: 'Claude: a native path climbing out with ..',
    harness: 'claude',
    files: [{ ...claudeTranscript, native_path: `../../../../tmp/${ID}.jsonl` }],
    code: 'BUNDLE_INVALID',
    message: /\.\./,
  },
  {
    name: 'Claude: an absolute native path',
    harness: 'claude',
    files: [{ ...claudeTranscript, native_path: `/tmp/${ID}.jsonl` }],
    code: 'BUNDLE_INVALID',
    message: /absolute/,
  },
  {
    name: 'Claude: a backslash in the native path',
    harness: 'claude',
    files: [{ ...claudeTranscript, native_path: `-w\\..\\${ID}.jsonl` }],
    code: 'BUNDLE_INVALID',
    message: /backslash/,
  },
  {
    name: 'Claude: the transcript of another session',
    harness: 'claude',
    files: [{ ...claudeTranscript, native_path: '-w/other.jsonl' }],
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Claude: a companion outside the session folder',
    harness: 'claude',
    files: [
      claudeTranscript,
      { role: 'session_companion', name: 'x', native_path: '-w/other-session/evil.jsonl', content: 'x' },
    ],
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Claude: a companion in another project folder',
    harness: 'claude',
    files: [
      claudeTranscript,
      { role: 'session_companion', name: 'x', native_path: `-other/${ID}/evil.jsonl`, content: 'x' },
    ],
    code: 'RESTORE_UNSAFE',
    message: /another project folder/,
  },
  {
    name: 'Claude: a companion named like a restore temp file',
    harness: 'claude',
    files: [
      claudeTranscript,
      { role: 'session_companion', name: 'x', native_path: `-w/${ID}/.blue-agent-restore-x`, content: 'x' },
    ],
    code: 'BUNDLE_INVALID',
    message: /temporary/,
  },
  {
    name: 'Claude: a role the profile does not have',
    harness: 'claude',
    files: [claudeTranscript, { role: 'rollout', name: 'r', native_path: `-w/${ID}/r.jsonl`, content: 'x' }],
    code: 'BUNDLE_INVALID',
    message: /role rollout/,
  },
  {
    name: 'Claude: a profile that cannot resume',
    harness: 'claude',
    profile: 'claude-v1_0_85',
    files: [claudeTranscript],
    code: 'RESTORE_UNSUPPORTED',
    message: /does not support resuming/,
  },
  {
    name: 'Claude: an unknown profile',
    harness: 'claude',
    profile: 'claude-v9_9_9',
    files: [claudeTranscript],
    code: 'RESTORE_UNSUPPORTED',
    message: /does not know/,
  },
  {
    name: 'Codex: a rollout outside the dated folders',
    harness: 'codex',
    files: [{ role: 'rollout', name: 'rollout.jsonl', native_path: `../config.toml`, content: META }],
    code: 'BUNDLE_INVALID',
    message: /\.\./,
  },
  {
    name: 'Codex: a rollout under another name',
    harness: 'codex',
    files: [{ role: 'rollout', name: 'rollout.jsonl', native_path: `2026/11/30/config.toml`, content: META }],
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Codex: a rollout of another session',
    harness: 'codex',
    files: [
      {
        role: 'rollout',
        name: 'rollout.jsonl',
        native_path: `2026/11/30/rollout-2026-11-30T16-33-24-${ID}.jsonl`,
        content: META.replace(`"id":"${ID}"`, '"id":"someone-else"'),
      },
    ],
    code: 'RESTORE_UNSAFE',
    message: /belongs to session/,
  },
  {
    name: 'Codex: a rollout without session_meta',
    harness: 'codex',
    files: [
      {
        role: 'rollout',
        name: 'rollout.jsonl',
        native_path: `2026/11/30/rollout-2026-11-30T16-33-24-${ID}.jsonl`,
        content: '{"type":"event_msg"}\n',
      },
    ],
    code: 'RESTORE_UNSAFE',
    message: /session_meta/,
  },
  {
    name: "kimi-cli: background task state (another machine's pids)",
    harness: 'kimi',
    profile: 'kimi-v1_28_0',
    files: kimiFiles([
      {
        role: 'session_state',
        name: 'runtime.json',
        native_path: `sessions/${HASH}/${ID}/tasks/t1/runtime.json`,
        content: '{"pid":1}',
      },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: "kimi-cli: the share dir's config",
    harness: 'kimi',
    profile: 'kimi-v1_28_0',
    files: kimiFiles([{ role: 'session_state', name: 'config.toml', native_path: 'config.toml', content: '[x]' }]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'kimi-cli: a file of another session',
    harness: 'kimi',
    profile: 'kimi-v1_28_0',
    files: kimiFiles([
      { role: 'session_state', name: 'c', native_path: `sessions/${HASH}/other/context.jsonl`, content: '{}' },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'kimi-cli: a plan path with a folder',
    harness: 'kimi',
    profile: 'kimi-v1_28_0',
    files: kimiFiles([{ role: 'session_state', name: 'p', native_path: 'plans/x/y.md', content: '#' }]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'kimi-cli: state.json under the wrong role',
    harness: 'kimi',
    profile: 'kimi-v1_28_0',
    files: [
      ...kimiFiles([]).filter((f) => f.role !== 'kimi_state'),
      { role: 'kimi_state', name: 's', native_path: `sessions/${HASH}/${ID}/notes.json`, content: '{}' },
    ],
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'kimi-cli: no context.jsonl',
    harness: 'kimi',
    profile: 'kimi-v1_28_0',
    files: kimiFiles([]).map((f) =>
      f.name === 'context.jsonl' ? { ...f, native_path: `sessions/${HASH}/${ID}/other.jsonl` } : f,
    ),
    code: 'RESTORE_UNSAFE',
    message: /context\.jsonl/,
  },
  {
    name: 'Kimi Code: no state.json',
    harness: 'kimi',
    files: kimiCodeFiles([]).filter((f) => f.role !== 'kimi_state'),
    code: 'BUNDLE_INVALID',
    message: /kimi_state/,
  },
  {
    name: 'Kimi Code: state.json at another place',
    harness: 'kimi',
    files: kimiCodeFiles([]).map((f) =>
      f.role === 'kimi_state' ? { ...f, native_path: `${WD}/${ID}/agents/main/state.json` } : f,
    ),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Kimi Code: a state.json that is not JSON',
    harness: 'kimi',
    files: kimiCodeFiles([]).map((f) => (f.role === 'kimi_state' ? { ...f, content: '{"cwd": ' } : f)),
    code: 'RESTORE_UNSAFE',
    message: /state\.json is not JSON/,
  },
  {
    name: "Kimi Code: a background task (another machine's pids)",
    harness: 'kimi',
    files: kimiCodeFiles([
      {
        role: 'session_state',
        name: 't.json',
        native_path: `${WD}/${ID}/agents/main/tasks/t1.json`,
        content: '{"pid":1}',
      },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Kimi Code: an undo snapshot of an edited file',
    harness: 'kimi',
    files: kimiCodeFiles([
      { role: 'session_state', name: 'f', native_path: `${WD}/${ID}/agents/main/file-history/abc@v2`, content: 'x' },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Kimi Code: the config beside the sessions',
    harness: 'kimi',
    files: kimiCodeFiles([
      { role: 'session_state', name: 'config.toml', native_path: `${WD}/config.toml`, content: '[x]' },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Kimi Code: a folder that is not a work-dir key',
    harness: 'kimi',
    files: kimiCodeFiles([]).map((f) => ({ ...f, native_path: f.native_path!.replace(WD, '.index-cache') })),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Kimi Code: a file of another session',
    harness: 'kimi',
    files: kimiCodeFiles([
      { role: 'session_state', name: 'w', native_path: `${WD}/session_other/agents/main/plans/p.md`, content: '#' },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'Kimi Code: files in two work-dir folders',
    harness: 'kimi',
    files: kimiCodeFiles([
      {
        role: 'session_state',
        name: 'p',
        native_path: `wd_other_${'b'.repeat(12)}/${ID}/agents/main/plans/p.md`,
        content: '#',
      },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /another work dir folder/,
  },
  {
    name: 'Kimi Code: an agent folder Kimi Code would not name',
    harness: 'kimi',
    files: kimiCodeFiles([
      { role: 'session_state', name: 'w', native_path: `${WD}/${ID}/agents/.hidden/wire.jsonl`, content: '{}\n' },
    ]),
    code: 'RESTORE_UNSAFE',
    message: /cannot live at/,
  },
  {
    name: 'OpenCode: an export with a native path',
    harness: 'opencode',
    files: [{ role: 'portable_export', name: 'export.json', native_path: 'x.json', content: '{}' }],
    code: 'BUNDLE_INVALID',
    message: /native_path/,
  },
  {
    name: 'OpenCode: an export of another session',
    harness: 'opencode',
    files: [
      {
        role: 'portable_export',
        name: 'export.json',
        content: JSON.stringify({ info: { id: 'ses_other' }, messages: [] }),
      },
    ],
    code: 'RESTORE_UNSAFE',
    message: /holds session/,
  },
  {
    name: 'OpenCode: an export that is not JSON',
    harness: 'opencode',
    files: [{ role: 'portable_export', name: 'export.json', content: 'nope' }],
    code: 'RESTORE_UNSAFE',
    message: /not JSON/,
  },
];

describe('hostile bundles are refused with nothing written anywhere', () => {
  for (const c of cases) {
    it(c.name, async () => {
      const bundle = path.join(t.root, 'hostile.bundle');
      await rawBundle(
        bundle,
        { harness: c.harness, profile: c.profile ?? fixtureProfile(c.harness), sessionId: ID, title: 'hostile' },
        c.files,
      );
      const before = await snapshot(t.root, ['hostile.bundle']);
      let error: unknown;
      try {
        await prepareRestore(t.ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() });
      } catch (e) {
        error = e;
      }
      expect(error, 'prepareRestore must refuse').toBeInstanceOf(BlueError);
      const blue = error as BlueError;
      expect(blue.code, blue.message).toBe(c.code);
      expect(blue.message).toMatch(c.message);
      expect(blue.hint ?? '').not.toBe('');
      expect(await snapshot(t.root, ['hostile.bundle'])).toEqual(before);
    });
  }

  it('a manifest naming session id .., . or -x fails bundle verify itself, not only restore', async () => {
    for (const id of ['..', '.', '-x', 'a.blue-agent-restore-b']) {
      const bundle = path.join(t.root, 'hostile.bundle');
      await rawBundle(bundle, { harness: 'opencode', profile: fixtureProfile('opencode'), sessionId: id }, [
        { role: 'portable_export', name: 'export.json', content: JSON.stringify({ info: { id }, messages: [] }) },
      ]);
      const error = await rejected(verifyBundle(bundle, { profiles: await shippedProfiles() }));
      expect(error.code, id).toBe('BUNDLE_INVALID');
      expect(error.message, id).toMatch(/\/native_session_id must match pattern/);
      const refused = await rejected(
        prepareRestore(t.ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() }),
      );
      expect(refused.code, id).toBe('BUNDLE_INVALID');
    }
  });

  it('a bundle whose digest does not match is refused before anything is extracted', async () => {
    const bundle = path.join(t.root, 'hostile.bundle');
    await rawBundle(bundle, { harness: 'claude', profile: fixtureProfile('claude'), sessionId: ID }, [
      claudeTranscript,
    ]);
    const { readFile, writeFile } = await import('node:fs/promises');
    const bytes = await readFile(bundle);
    bytes[bytes.length - 12] = bytes[bytes.length - 12]! ^ 0xff;
    await writeFile(bundle, bytes);
    const before = await snapshot(t.root, ['hostile.bundle']);
    await expect(
      prepareRestore(t.ctx, { bundleFile: bundle, destination, profiles: await shippedProfiles() }),
    ).rejects.toMatchObject({ code: 'BUNDLE_INVALID' });
    expect(await snapshot(t.root, ['hostile.bundle'])).toEqual(before);
    expect(createHash('sha256').update(bytes).digest('hex')).toHaveLength(64);
  });
});

/** Anything a terminal would act on: C0 (tab and line feed aside), DEL, C1, bidirectional controls. */
const TERMINAL_UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const ESCAPES = '\u001b]0;pwned\u0007\u001b[2J\u009b31m\u202e';

describe('hostile text never reaches an error message raw', () => {
  const escaping: Case[] = [
    {
      name: 'Codex: a session_meta id with terminal escapes',
      harness: 'codex',
      files: [
        {
          role: 'rollout',
          name: 'rollout.jsonl',
          native_path: `2026/11/30/rollout-2026-11-30T16-33-24-${ID}.jsonl`,
          content: META.replace(`"id":"${ID}"`, `"id":${JSON.stringify(ESCAPES.repeat(40))}`),
        },
      ],
      code: 'RESTORE_UNSAFE',
      message: /belongs to session/,
    },
    {
      name: 'OpenCode: an export id with terminal escapes',
      harness: 'opencode',
      files: [
        {
          role: 'portable_export',
          name: 'export.json',
          content: JSON.stringify({ info: { id: ESCAPES.repeat(40) }, messages: [] }),
        },
      ],
      code: 'RESTORE_UNSAFE',
      message: /holds session/,
    },
    {
      name: 'OpenCode: an export that is not JSON, full of escapes (V8 quotes it)',
      harness: 'opencode',
      files: [{ role: 'portable_export', name: 'export.json', content: `${ESCAPES.repeat(200)}` }],
      code: 'RESTORE_UNSAFE',
      message: /not JSON/,
    },
    {
      name: 'Claude: a C1 control in a native path',
      harness: 'claude',
      files: [{ ...claudeTranscript, native_path: `-w\u009b2J/${ID}.jsonl` }],
      code: 'BUNDLE_INVALID',
      message: /control character/,
    },
    {
      name: 'Claude: a bidirectional override in a native path',
      harness: 'claude',
      files: [{ ...claudeTranscript, native_path: `-w\u202egpj/${ID}.jsonl` }],
      code: 'BUNDLE_INVALID',
      message: /control character/,
    },
  ];
  for (const c of escaping) {
    it(c.name, async () => {
      const bundle = path.join(t.root, 'hostile.bundle');
      await rawBundle(
        bundle,
        { harness: c.harness, profile: c.profile ?? fixtureProfile(c.harness), sessionId: ID, title: 'hostile' },
        c.files,
      );
      const before = await snapshot(t.root, ['hostile.bundle']);
      const error = await prepareRestore(t.ctx, {
        bundleFile: bundle,
        destination,
        profiles: await shippedProfiles(),
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error, 'prepareRestore must refuse').toBeInstanceOf(BlueError);
      const blue = error as BlueError;
      expect(blue.code, blue.message).toBe(c.code);
      expect(blue.message).toMatch(c.message);
      // (A refused native path is quoted by the bundle reader, for the CLI to escape; the restore's own messages are
      // clean.)
      if (c.code !== 'BUNDLE_INVALID') {
        expect(blue.message).not.toMatch(TERMINAL_UNSAFE);
        expect(blue.message.length).toBeLessThan(1000);
      }
      expect(await snapshot(t.root, ['hostile.bundle'])).toEqual(before);
    });
  }
});
