import { spawn } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { readFileSync, realpathSync } from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { parse } from 'smol-toml';
import { afterEach, describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import { codex } from '../../../src/harnesses/codex/index.js';
import { checkOutcome, listHandlers, userView } from '../../../src/harnesses/codex/model.js';
import { hookStateKey, hookTrustHash } from '../../../src/harnesses/codex/trust.js';
import { buildManagedHook } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { makeTestHome, repoRoot, type TestHome } from '../../../../../test/support/context.js';
import { thrown } from '../../../../../test/support/errors.js';
import { harnessBin, hasHarness } from '../../../../../test/support/harness-bins.js';

const SELF = { node: '/usr/bin/node', entry: '/opt/blue-agent/bin/blue-agent.js' };
const desired = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'SessionEnd', 3);
const COMMAND = `'/usr/bin/node' '/opt/blue-agent/bin/blue-agent.js' capture --harness codex --profile codex-v0_145_0`;
/** `currentHash` that codex-cli 0.171.0 (`hooks/list`) reported for this hook as `[[hooks.SessionEnd]]` with timeout 3.
 * */
const CODEX_0171_HASH = 'sha256:af0d00637015263581475795918690b9d4e9e3e9f525792b9e153a712cd5521e';

const TOML_FILE = '/home/me/.codex/config.toml';
const JSON_FILE = '/home/me/.codex/hooks.json';

const BLOCK = [
  '[[hooks.SessionEnd]]',
  '[[hooks.SessionEnd.hooks]]',
  'type = "command"',
  `command = "${COMMAND}"`,
  'timeout = 3',
  '',
].join('\n');

function fixture(name: string): string {
  return readFileSync(path.join(repoRoot, 'fixtures', 'codex', name), 'utf8');
}

function plan(
  text: string | null,
  hook: ManagedHook | null = desired,
  owned?: OwnershipRecord,
  file = TOML_FILE,
): HookPlan {
  return codex.planHook({ text, file, desired: hook, owned });
}

function managedIn(text: string): number {
  const doc = text.trimStart().startsWith('{') ? (JSON.parse(text) as Record<string, unknown>) : parse(text);
  return listHandlers(doc.hooks).filter((h) => h.managed).length;
}

const TOML_FIXTURES = [
  'empty.toml',
  'user-session-end.toml',
  'other-events.toml',
  'comments.toml',
  'crlf.toml',
  'no-final-newline.toml',
  'non-ascii.toml',
  'hooks-state.toml',
];

describe('codex planHook (config.toml)', () => {
  it('creates the file with only the managed block, and removal deletes it again', () => {
    const installed = plan(null);
    expect(installed.text).toBe(BLOCK);
    expect(installed.managedFound).toBe(0);
    expect(installed.owned).toMatchObject({ format: 'toml', created: true });
    const removed = plan(installed.text, null, installed.owned);
    expect(removed).toEqual({ text: null, owned: undefined, managedFound: 1 });
  });

  it('leaves a missing file missing when nothing is wanted', () => {
    expect(plan(null, null)).toEqual({ text: null, owned: undefined, managedFound: 0 });
  });

  it.each(TOML_FIXTURES)(
    '%s: install appends one managed hook, keeps every user byte, and removal restores the original',
    (name) => {
      const original = fixture(name);
      const installed = plan(original);
      expect(installed.managedFound).toBe(0);
      const text = installed.text!;
      expect(text.startsWith(original)).toBe(true);
      expect(managedIn(text)).toBe(1);
      expect(userView(parse(text))).toBe(userView(parse(original)));
      // Install twice = install once: the second plan is a no-op on the same string.
      const again = plan(text, desired, installed.owned);
      expect(again.text).toBe(text);
      expect(again.owned).toEqual(installed.owned);
      expect(again.managedFound).toBe(1);
      // Install then remove gives back the original bytes.
      const removed = plan(text, null, installed.owned);
      expect(removed.text).toBe(original);
      expect(removed.owned).toBeUndefined();
      expect(removed.managedFound).toBe(1);
    },
  );

  it('appends after the user SessionEnd groups, so theirs keep their positions and fire first', () => {
    const original = fixture('user-session-end.toml');
    const text = plan(original).text!;
    expect(text).toBe(`${original}\n${BLOCK}`);
    const groups = (parse(text).hooks as Record<string, Array<{ hooks: Array<{ command: string }> }>>).SessionEnd!;
    expect(groups.map((g) => g.hooks[0]!.command)).toEqual([
      '~/bin/notify-done.sh',
      'echo bye >> /tmp/codex.log',
      COMMAND,
    ]);
  });

  it('adds SessionEnd next to user hooks of other events without touching them', () => {
    const original = fixture('other-events.toml');
    const doc = parse(plan(original).text!) as { hooks: Record<string, unknown> };
    expect(doc.hooks.PreToolUse).toEqual((parse(original) as { hooks: Record<string, unknown> }).hooks.PreToolUse);
    expect(doc.hooks.Stop).toEqual([{ hooks: [{ type: 'command', command: 'say done' }] }]);
    expect(doc.hooks.SessionEnd).toEqual([{ hooks: [{ type: 'command', command: COMMAND, timeout: 3 }] }]);
  });

  it('keeps comments, including the one right where the block is appended', () => {
    const original = fixture('comments.toml');
    const text = plan(original).text!;
    expect(text).toBe(`${original}\n${BLOCK}`);
    expect(text).toContain(
      '# ---- end of file: a comment right where an appended block would go ----\n\n[[hooks.SessionEnd]]',
    );
  });

  it('writes CRLF into a CRLF file', () => {
    const original = fixture('crlf.toml');
    expect(original).toContain('\r\n');
    const text = plan(original).text!;
    expect(text).toBe(`${original}\r\n${BLOCK.replace(/\n/g, '\r\n')}`);
    expect(/(?<!\r)\n/.test(text)).toBe(false);
  });

  it('terminates a last line without newline, and removal takes that back too', () => {
    const original = fixture('no-final-newline.toml');
    expect(original.endsWith('\n')).toBe(false);
    const installed = plan(original);
    expect(installed.text).toBe(`${original}\n\n${BLOCK}`);
    expect(plan(installed.text, null, installed.owned).text).toBe(original);
  });

  it('keeps non-ASCII text and escapes a non-ASCII or quoted command as a TOML basic string', () => {
    const original = fixture('non-ascii.toml');
    const odd = buildManagedHook(
      { node: '/usr/bin/node', entry: '/opt/blué "agent"/bin/blue-agent.js' },
      'codex',
      'codex-v0_145_0',
      'SessionEnd',
      3,
    );
    const text = plan(original, odd).text!;
    expect(text.startsWith(original)).toBe(true);
    expect(text).toContain(String.raw`command = "'/usr/bin/node' '/opt/blué \"agent\"/bin/blue-agent.js' capture`);
    const parsed = parse(text) as { hooks: { SessionEnd: Array<{ hooks: Array<{ command: string }> }> } };
    expect(parsed.hooks.SessionEnd.at(-1)!.hooks[0]!.command).toBe(odd.command);
  });

  it('keeps [hooks.state] tables byte for byte through install and removal', () => {
    const original = fixture('hooks-state.toml');
    const stateTables = original.slice(original.indexOf('[hooks.state.'));
    const installed = plan(original);
    expect(installed.text!).toContain(stateTables);
    expect(installed.text!.indexOf(stateTables)).toBe(original.indexOf(stateTables));
    expect(plan(installed.text, null, installed.owned).text).toBe(original);
  });

  it('rejects an unparseable file with its line and column', () => {
    const error = thrown(() => plan(fixture('invalid.toml')));
    expect(error.code).toBe('NATIVE_CONFIG_PARSE');
    expect(error.file).toBe(TOML_FILE);
    expect(error.line).toBe(2);
    expect(error.column).toBeGreaterThan(1);
    expect(error.message).toMatch(new RegExp(`^${TOML_FILE}:2:\\d+: invalid TOML`));
    expect(error.hint).toBeTruthy();
    // Removal reads the file too: a file that does not parse is never rewritten.
    expect(thrown(() => plan(fixture('invalid.toml'), null)).code).toBe('NATIVE_CONFIG_PARSE');
  });

  it('refuses to add next to an inline SessionEnd array, pointing at it', () => {
    const original = fixture('inline-array-conflict.toml');
    const error = thrown(() => plan(original));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.line).toBe(4);
    expect(error.column).toBe(1);
    expect(error.message).toContain('hooks.SessionEnd');
    expect(error.hint).toMatch(/\[\[hooks\.SessionEnd\]\]/);
    // Nothing to remove there: the file stays as it is.
    expect(plan(original, null).text).toBe(original);
  });

  it('refuses to add next to an inline hooks table', () => {
    const error = thrown(() => plan(fixture('inline-table-conflict.toml')));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.line).toBe(2);
  });

  it('refuses to edit a managed hook written inline, but leaves a right one alone', () => {
    const inline =
      `[[hooks.SessionEnd]]\nhooks = [{ type = "command", command = "'/usr/local/bin/node' ` +
      `'/opt/old/blue-agent.js' capture --harness codex --profile codex-v0_140_0" }]\n`;
    expect(thrown(() => plan(inline)).code).toBe('NATIVE_CONFIG_CONFLICT');
    const right =
      `[[hooks.SessionEnd]]\nhooks = [{ type = "command", command = "${COMMAND.replace(/"/g, '\\"')}", ` +
      `timeout = 3 }]\n`;
    expect(plan(right).text).toBe(right);
  });

  it('updates a stale managed entry in place, keeping its comment and the user hook', () => {
    const original = fixture('stale.toml');
    const result = plan(original);
    expect(result.managedFound).toBe(1);
    const expected = original
      .replace(
        `"'/usr/local/bin/node' '/old/prefix/lib/blue-agent/bin/blue-agent.js' capture --harness codex --profile ` +
          `codex-v0_140_0"`,
        `"${COMMAND}"`,
      )
      .replace('timeout = 1', 'timeout = 3');
    expect(result.text).toBe(expected);
    expect(result.text).toContain(' # old\n');
    // Without a ledger record, removal still takes the whole managed group out cleanly.
    const removed = plan(result.text, null, undefined);
    expect(removed.text).toBe(
      original.slice(
        0,
        original.indexOf(
          '\n[[hooks.SessionEnd]]\n[[hooks.SessionEnd.hooks]]\ntype = "command"\ncommand = "\'/usr/local',
        ),
      ),
    );
    expect(managedIn(removed.text!)).toBe(0);
  });

  it('adds a missing timeout and type to a managed entry', () => {
    const original = `[[hooks.SessionEnd]]\n[[hooks.SessionEnd.hooks]]\ncommand = """${COMMAND}"""`;
    const text = plan(original).text!;
    // The command already matches (as a multi-line string), so only the missing keys are added.
    expect(text).toBe(
      `[[hooks.SessionEnd]]\n[[hooks.SessionEnd.hooks]]\ntype = "command"\ncommand = """${COMMAND}"""\ntimeout = 3`,
    );
  });

  it('caps the timeout at the 3 s Codex allows for SessionEnd', () => {
    const long = buildManagedHook(SELF, 'codex', 'codex-v0_145_0', 'SessionEnd', 30);
    expect(plan('').text).toBe(BLOCK);
    expect(plan('', long).text).toBe(BLOCK);
  });

  it('collapses duplicates to the agent group and cuts a managed hook out of a user group only', () => {
    const original = fixture('duplicates.toml');
    const result = plan(original);
    expect(result.managedFound).toBe(3);
    const expected = [
      'model = "o3"',
      '',
      '[[hooks.SessionEnd]]',
      '[[hooks.SessionEnd.hooks]]',
      'type = "command"',
      `command = "${COMMAND}"`,
      'timeout = 3',
      '',
      '[[hooks.SessionEnd]]',
      '[[hooks.SessionEnd.hooks]]',
      'type = "command"',
      'command = "echo user"',
      '',
    ].join('\n');
    expect(result.text).toBe(expected);
    expect(plan(result.text, desired, result.owned).text).toBe(expected);
  });

  it('removes every managed entry without a record and keeps the user hooks', () => {
    const result = plan(fixture('duplicates.toml'), null);
    expect(result.text).toBe(
      'model = "o3"\n\n[[hooks.SessionEnd]]\n[[hooks.SessionEnd.hooks]]\ntype = "command"\ncommand = "echo user"\n',
    );
    expect(result.owned).toBeUndefined();
  });

  it('without a record, removal of an appended block restores an LF file that ended with a newline', () => {
    const original = fixture('user-session-end.toml');
    const installed = plan(original).text!;
    expect(plan(installed, null, undefined).text).toBe(original);
  });

  it('a profile change updates in place; removal afterwards still gives back the original bytes', () => {
    const original = fixture('no-final-newline.toml');
    const first = plan(original);
    const newer = buildManagedHook(SELF, 'codex', 'codex-v0_150_0', 'SessionEnd', 3);
    const second = plan(first.text, newer, first.owned);
    expect(second.text).toBe(first.text!.replace('codex-v0_145_0', 'codex-v0_150_0'));
    expect(second.owned).toEqual(first.owned);
    expect(plan(second.text, null, second.owned).text).toBe(original);
  });

  it('content the user appends after the block survives removal', () => {
    const original = fixture('user-session-end.toml');
    const installed = plan(original);
    const later = '# a note added later\n\n[hooks.state."/x/config.toml:session_end:2:0"]\ntrusted_hash = "sha256:1"\n';
    const edited = `${installed.text}${later}`;
    const removed = plan(edited, null, installed.owned).text!;
    expect(removed).toBe(`${original}${later}`);
  });

  it('refuses any plan that would change a user entry or miss the managed hook', () => {
    const before = parse(fixture('user-session-end.toml'));
    const after = parse(plan(fixture('user-session-end.toml')).text!);
    expect(() => checkOutcome(TOML_FILE, before, after, desired)).not.toThrow();
    const lostUserHook = parse(BLOCK);
    expect(thrown(() => checkOutcome(TOML_FILE, before, lostUserHook, desired)).code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(thrown(() => checkOutcome(TOML_FILE, before, before, desired)).code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(thrown(() => checkOutcome(TOML_FILE, before, after, null)).code).toBe('NATIVE_CONFIG_CONFLICT');
  });

  it('treats hostile input as data: no TypeError, only BlueErrors or plans', () => {
    const inputs = [
      '\u0000',
      '[[[',
      'a = """',
      '\uFEFFa = 1\n',
      'hooks = 1\n',
      '[hooks]\nSessionEnd = 1\n',
      '[[hooks.SessionEnd]]\nhooks = 5\n',
      '__proto__ = 1\n[hooks.__proto__]\nx=1\n',
    ];
    for (const input of inputs) {
      for (const hook of [desired, null]) {
        try {
          const result = plan(input, hook);
          if (result.text !== null && hook !== null) expect(managedIn(result.text)).toBe(1);
        } catch (error) {
          expect(error).toBeInstanceOf(BlueError);
        }
      }
    }
  });
});

describe('codex planHook (hooks.json)', () => {
  const planJson = (text: string | null, hook: ManagedHook | null = desired, owned?: OwnershipRecord) =>
    plan(text, hook, owned, JSON_FILE);

  it.each([
    'hooks-user.json',
    'hooks-description.json',
    'hooks-minified.json',
    'hooks-crlf-tabs.json',
    'hooks-empty-array-spaced.json',
    'hooks-empty-object.json',
  ])('%s: install adds one managed group, keeps the rest, and removal restores the original', (name) => {
    const original = fixture(name);
    const installed = planJson(original);
    const text = installed.text!;
    expect(managedIn(text)).toBe(1);
    expect(userView(JSON.parse(text) as Record<string, unknown>)).toBe(
      userView(JSON.parse(original) as Record<string, unknown>),
    );
    expect(planJson(text, desired, installed.owned).text).toBe(text);
    expect(planJson(text, null, installed.owned).text).toBe(original);
  });

  it('appends to the user SessionEnd array in the file’s own layout', () => {
    const text = planJson(fixture('hooks-user.json')).text!;
    expect(text).toContain(
      [
        '        ]',
        '      },',
        '      {',
        '        "hooks": [',
        '          {',
        '            "type": "command",',
        `            "command": ${JSON.stringify(COMMAND)},`,
        '            "timeout": 3',
        '          }',
        '        ]',
        '      }',
        '    ],',
        '    "Stop"',
      ].join('\n'),
    );
    expect(JSON.parse(text).description).toBe('team hooks');
  });

  it('keeps tabs and CRLF', () => {
    const text = planJson(fixture('hooks-crlf-tabs.json')).text!;
    expect(/(?<!\r)\n/.test(text)).toBe(false);
    expect(text).toContain('\t\t"SessionEnd": [\r\n\t\t\t{\r\n\t\t\t\t"hooks": [');
  });

  it('creates hooks.json when missing and deletes it on removal; an empty file comes back empty', () => {
    const created = planJson(null);
    expect(JSON.parse(created.text!)).toEqual({
      hooks: { SessionEnd: [{ hooks: [{ type: 'command', command: COMMAND, timeout: 3 }] }] },
    });
    expect(planJson(created.text, null, created.owned).text).toBeNull();
    const empty = planJson('');
    expect(planJson(empty.text, null, empty.owned).text).toBe('');
  });

  it('updates a stale managed handler value by value and collapses duplicates', () => {
    const original = JSON.stringify(
      {
        hooks: {
          SessionEnd: [
            {
              hooks: [
                { type: 'command', command: 'echo user' },
                {
                  type: 'command',
                  command: "'/old/bin/node' '/old/blue-agent' capture --harness codex --profile codex-v0_140_0",
                },
              ],
            },
            {
              hooks: [
                { type: 'command', command: "'/old/node' '/old/blue-agent.js' capture --harness codex --profile p" },
              ],
            },
          ],
        },
      },
      null,
      2,
    );
    const result = planJson(original);
    expect(result.managedFound).toBe(2);
    const doc = JSON.parse(result.text!) as { hooks: { SessionEnd: Array<{ hooks: unknown[] }> } };
    expect(doc.hooks.SessionEnd).toEqual([
      { hooks: [{ type: 'command', command: 'echo user' }] },
      { hooks: [{ type: 'command', command: COMMAND, timeout: 3 }] },
    ]);
  });

  it('rejects comments (Codex reads strict JSON) with line and column', () => {
    const error = thrown(() => planJson(fixture('hooks-invalid.json')));
    expect(error.code).toBe('NATIVE_CONFIG_PARSE');
    expect(error.line).toBe(2);
    expect(error.column).toBe(3);
  });

  it('refuses a hooks value that is not an object', () => {
    const error = thrown(() => planJson('{\n  "hooks": []\n}\n'));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.line).toBe(2);
  });
});

describe('codex files', () => {
  let home: TestHome;
  afterEach(async () => home?.cleanup());
  const interval = {
    profile: 'codex-v0_145_0',
    capture: { event: 'SessionEnd', hook: { file: 'config.toml', format: 'codex-config-toml', timeout_seconds: 3 } },
  } as unknown as Interval;

  it('roots at ~/.codex, or at an absolute CODEX_HOME', async () => {
    home = await makeTestHome();
    expect(codex.configRoot(home.ctx)).toBe(path.join(home.home, '.codex'));
    expect(codex.configRoot(home.context({ env: { CODEX_HOME: '/srv/codex' } }))).toBe('/srv/codex');
    expect(codex.configRoot(home.context({ env: { CODEX_HOME: 'relative/dir' } }))).toBe(
      path.join(home.home, '.codex'),
    );
    expect(codex.knownHookFiles(home.ctx)).toEqual([
      path.join(home.home, '.codex', 'config.toml'),
      path.join(home.home, '.codex', 'hooks.json'),
    ]);
  });

  it('chooses hooks.json only when it already holds hooks', async () => {
    home = await makeTestHome();
    const root = path.join(home.home, '.codex');
    await mkdir(root, { recursive: true });
    expect(await codex.hookFile(home.ctx, interval)).toBe(path.join(root, 'config.toml'));
    await writeFile(path.join(root, 'hooks.json'), '{ "description": "nothing yet" }\n');
    expect(await codex.hookFile(home.ctx, interval)).toBe(path.join(root, 'config.toml'));
    await writeFile(path.join(root, 'hooks.json'), 'not json at all');
    expect(await codex.hookFile(home.ctx, interval)).toBe(path.join(root, 'config.toml'));
    await writeFile(path.join(root, 'hooks.json'), '{ "hooks": {} }\n');
    expect(await codex.hookFile(home.ctx, interval)).toBe(path.join(root, 'hooks.json'));
  });
});

describe('codex pendingState (hook trust)', () => {
  let home: TestHome;
  afterEach(async () => home?.cleanup());

  async function codexHome(): Promise<{ ctx: TestHome['ctx']; root: string }> {
    home = await makeTestHome();
    const root = path.join(home.root, 'codex-home');
    await mkdir(root, { recursive: true });
    return { ctx: home.context({ env: { CODEX_HOME: root } }), root: realpathSync(root) };
  }

  const trust = (key: string, hash: string, extra = '') =>
    `\n[hooks.state."${key}"]\n${extra}trusted_hash = "${hash}"\n`;

  it('computes the key and hash the way codex 0.171 reports them', () => {
    expect(hookStateKey('/root/cxtest1/config.toml', 'SessionEnd', 0, 0)).toBe(
      '/root/cxtest1/config.toml:session_end:0:0',
    );
    expect(hookTrustHash('SessionEnd', {}, { type: 'command', command: COMMAND, timeout: 3 })).toBe(CODEX_0171_HASH);
    // Codex clamps a SessionEnd timeout to 3 s before hashing.
    expect(hookTrustHash('SessionEnd', {}, { type: 'command', command: COMMAND, timeout: 10 })).toBe(CODEX_0171_HASH);
    // Values reported by codex-cli 0.171.0 for other shapes: a default timeout, a matcher, statusMessage.
    expect(hookTrustHash('SessionEnd', {}, { type: 'command', command: 'echo user' })).toBe(
      'sha256:62780ad2995f0658413f586bf6f217d3e9872596fd7d95077ff166c45955f0f8',
    );
    expect(hookTrustHash('SessionEnd', { matcher: '' }, { type: 'command', command: 'echo a' })).toBe(
      'sha256:09e80799a3b1dfe564822890c7f433842fe40807568e06226ea859c143a3a350',
    );
    expect(
      hookTrustHash(
        'SessionEnd',
        { matcher: 'exit|clear' },
        { type: 'command', command: 'echo b', timeout: 2, statusMessage: 'bye' },
      ),
    ).toBe('sha256:ce7ad70a2f270995cf7fc3d2a0e66fe05ab339ca9aec71c289b19db863e211d9');
  });

  it('reports awaiting_trust until the user trusts the current hook in config.toml', async () => {
    const { ctx, root } = await codexHome();
    const text = plan(fixture('user-session-end.toml')).text!;
    const key = `${root}/config.toml:session_end:2:0`;
    const untrusted = codex.pendingState!(ctx, text, desired);
    expect(untrusted?.state).toBe('awaiting_trust');
    expect(untrusted?.reason).toContain(`(hooks.state."${key}")`);
    expect(untrusted?.reason).toContain('/hooks');
    expect(codex.pendingState!(ctx, text + trust(key, CODEX_0171_HASH), desired)).toBeUndefined();
    expect(codex.pendingState!(ctx, text + trust(key, 'sha256:old'), desired)?.reason).toContain(
      `changed since it was trusted (hooks.state."${key}")`,
    );
    expect(
      codex.pendingState!(ctx, text + trust(key, CODEX_0171_HASH, 'enabled = false\n'), desired)?.reason,
    ).toContain(`disabled in Codex (hooks.state."${key}")`);
    expect(
      codex.pendingState!(ctx, text + trust(`${root}/config.toml:session_end:0:0`, CODEX_0171_HASH), desired)?.state,
    ).toBe('awaiting_trust');
    expect(
      codex.pendingState!(ctx, `[features]\nhooks = false\n${text}${trust(key, CODEX_0171_HASH)}`, desired)?.reason,
    ).toContain('[features]');
  });

  it('names the canonical CODEX_HOME in the key, as Codex does', async () => {
    const { root } = await codexHome();
    const link = path.join(home.root, 'codex-link');
    await symlink(root, link);
    const ctx = home.context({ env: { CODEX_HOME: link } });
    const text = plan(null).text!;
    expect(
      codex.pendingState!(ctx, text + trust(`${root}/config.toml:session_end:0:0`, CODEX_0171_HASH), desired),
    ).toBeUndefined();
    expect(
      codex.pendingState!(ctx, text + trust(`${link}/config.toml:session_end:0:0`, CODEX_0171_HASH), desired)?.state,
    ).toBe('awaiting_trust');
  });

  it('looks up trust for a hooks.json hook in config.toml', async () => {
    const { ctx, root } = await codexHome();
    const text = plan(fixture('hooks-user.json'), desired, undefined, path.join(root, 'hooks.json')).text!;
    expect(codex.pendingState!(ctx, text, desired)?.state).toBe('awaiting_trust');
    await writeFile(
      path.join(root, 'config.toml'),
      `model = "o3"${trust(`${root}/hooks.json:session_end:1:0`, CODEX_0171_HASH)}`,
    );
    expect(codex.pendingState!(ctx, text, desired)).toBeUndefined();
  });
});

interface CodexHookEntry {
  key: string;
  eventName: string;
  command?: string;
  timeoutSec: number;
  currentHash: string;
  trustStatus: string;
  enabled: boolean;
}

/** Asks the real Codex app server which hooks it sees, with their trust keys, hashes and status. */
async function codexHooksList(
  codexHome: string,
  cwd: string,
  home: string,
): Promise<{ hooks: CodexHookEntry[]; warnings: string[] }> {
  const bin = harnessBin('codex');
  const child = spawn(process.execPath, [bin, 'app-server'], {
    cwd,
    env: { ...process.env, CODEX_HOME: codexHome, HOME: home },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const lines = readline.createInterface({ input: child.stdout });
  const send = (message: unknown) => child.stdin.write(`${JSON.stringify(message)}\n`);
  try {
    return await new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`codex app-server did not answer hooks/list: ${stderr}`)),
        25_000,
      );
      lines.on('line', (line) => {
        const message = JSON.parse(line) as {
          id?: number;
          result?: { data: Array<{ hooks: CodexHookEntry[]; warnings: string[] }> };
          error?: unknown;
        };
        if (message.id === 1) {
          send({ method: 'initialized' });
          send({ id: 2, method: 'hooks/list', params: { cwds: [cwd] } });
        } else if (message.id === 2) {
          clearTimeout(timer);
          if (message.result === undefined) reject(new Error(`hooks/list failed: ${JSON.stringify(message.error)}`));
          else resolve(message.result.data[0]!);
        }
      });
      child.on('error', reject);
      send({ id: 1, method: 'initialize', params: { clientInfo: { name: 'blue-agent-test', version: '0' } } });
    });
  } finally {
    child.stdin.end();
    child.kill();
  }
}

describe.runIf(hasHarness('codex'))('codex planHook and pendingState against the real codex CLI', () => {
  let home: TestHome;
  afterEach(async () => home?.cleanup());

  async function setup(): Promise<{ root: string; work: string; ctx: TestHome['ctx'] }> {
    home = await makeTestHome();
    const root = path.join(home.root, 'codex-home');
    const work = path.join(home.root, 'work');
    await mkdir(root, { recursive: true });
    await mkdir(work, { recursive: true });
    return { root: realpathSync(root), work, ctx: home.context({ env: { CODEX_HOME: root } }) };
  }

  it('config.toml: Codex sees the user hooks, then the managed hook, with the key and hash we compute', async () => {
    const { root, work, ctx } = await setup();
    const text = plan(fixture('user-session-end.toml'), desired, undefined, path.join(root, 'config.toml')).text!;
    await writeFile(path.join(root, 'config.toml'), text);
    const listed = await codexHooksList(root, work, home.home);
    expect(listed.warnings).toEqual([]);
    expect(listed.hooks.map((h) => h.command)).toEqual(['~/bin/notify-done.sh', 'echo bye >> /tmp/codex.log', COMMAND]);
    const ours = listed.hooks[2]!;
    expect(ours).toMatchObject({
      key: `${root}/config.toml:session_end:2:0`,
      currentHash: CODEX_0171_HASH,
      timeoutSec: 3,
      trustStatus: 'untrusted',
    });
    expect(codex.pendingState!(ctx, text, desired)?.reason).toContain(ours.key);

    // Trust recorded the way Codex records it: Codex and pendingState then agree that the hook runs.
    const trusted = `${text}\n[hooks.state."${ours.key}"]\ntrusted_hash = "${ours.currentHash}"\n`;
    await writeFile(path.join(root, 'config.toml'), trusted);
    expect((await codexHooksList(root, work, home.home)).hooks[2]!.trustStatus).toBe('trusted');
    expect(codex.pendingState!(ctx, trusted, desired)).toBeUndefined();

    // Removal leaves the trust table and Codex's view of the user hooks as they were.
    const removed = plan(trusted, null, undefined, path.join(root, 'config.toml')).text!;
    await writeFile(path.join(root, 'config.toml'), removed);
    const after = await codexHooksList(root, work, home.home);
    expect(after.hooks.map((h) => h.command)).toEqual(['~/bin/notify-done.sh', 'echo bye >> /tmp/codex.log']);
  });

  it('hooks.json: the managed hook loads from hooks.json and its trust lives in config.toml', async () => {
    const { root, work, ctx } = await setup();
    const file = path.join(root, 'hooks.json');
    const text = plan(fixture('hooks-user.json'), desired, undefined, file).text!;
    await writeFile(file, text);
    const listed = await codexHooksList(root, work, home.home);
    expect(listed.warnings).toEqual([]);
    const ours = listed.hooks.find((h) => h.command === COMMAND)!;
    expect(ours).toMatchObject({
      key: `${root}/hooks.json:session_end:1:0`,
      currentHash: CODEX_0171_HASH,
      trustStatus: 'untrusted',
    });
    expect(codex.pendingState!(ctx, text, desired)?.state).toBe('awaiting_trust');
    await writeFile(
      path.join(root, 'config.toml'),
      `[hooks.state."${ours.key}"]\ntrusted_hash = "${ours.currentHash}"\n`,
    );
    expect((await codexHooksList(root, work, home.home)).hooks.find((h) => h.command === COMMAND)!.trustStatus).toBe(
      'trusted',
    );
    expect(codex.pendingState!(ctx, text, desired)).toBeUndefined();
  });
});
