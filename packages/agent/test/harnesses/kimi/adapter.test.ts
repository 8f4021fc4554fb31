import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'smol-toml';
import { afterEach, describe, expect, it } from 'vitest';
import { kimi } from '../../../src/harnesses/kimi/index.js';
import { buildManagedHook, isManagedCommand } from '../../../src/harness-kit/signature.js';
import type { HookPlan, ManagedHook, OwnershipRecord } from '../../../src/harnesses/types.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { makeTestHome, repoRoot, type TestHome } from '../../../../../test/support/context.js';
import { rejected, thrown } from '../../../../../test/support/errors.js';

const FILE = '/home/me/.kimi/config.toml';
const desired = buildManagedHook(
  { node: '/usr/local/bin/node', entry: '/opt/blue agent/bin/blue-agent.js' },
  'kimi',
  'kimi-v1_28_0',
  'SessionEnd',
  5,
);
const EXPECTED_COMMAND =
  `'/usr/local/bin/node' '/opt/blue agent/bin/blue-agent.js' capture --harness kimi ` + `--profile kimi-v1_28_0`;
const TABLE = [
  '[[hooks]] # managed by blue-agent',
  'event = "SessionEnd"',
  'matcher = ""',
  `command = "${EXPECTED_COMMAND}"`,
  'timeout = 5',
];

const interval: Interval = {
  profile: 'kimi-v1_28_0',
  introduced: '1.28.0',
  verified_before: '1.28.0',
  lifecycle: 'supported',
  operations: ['session_capture', 'session_resume'],
  capture: { event: 'SessionEnd', hook: { file: 'config.toml', format: 'kimi-config-toml', timeout_seconds: 5 } },
};

function fixture(name: string): string {
  return readFileSync(path.join(repoRoot, 'fixtures', 'kimi', name), 'utf8');
}

function plan(text: string | null, hook: ManagedHook | null = desired, owned?: OwnershipRecord): HookPlan {
  return kimi.planHook({ text, file: FILE, desired: hook, owned });
}

function hooksOf(text: string): Record<string, unknown>[] {
  const data = parse(text) as { hooks?: Record<string, unknown>[] };
  return data.hooks ?? [];
}

function isManaged(h: Record<string, unknown>): boolean {
  return h.event === 'SessionEnd' && typeof h.command === 'string' && isManagedCommand(h.command, 'kimi');
}

function managedOf(text: string): Record<string, unknown>[] {
  return hooksOf(text).filter(isManaged);
}

function withoutManaged(text: string): unknown {
  const data = parse(text) as Record<string, unknown>;
  const rest = hooksOf(text).filter((h) => !isManaged(h));
  const copy: Record<string, unknown> = { ...data };
  if (rest.length === 0) delete copy.hooks;
  else copy.hooks = rest;
  return copy;
}

describe('kimi adapter: locations', () => {
  let home: TestHome | undefined;
  afterEach(async () => {
    await home?.cleanup();
    home = undefined;
  });

  it(
    'keeps Kimi Code in KIMI_CODE_HOME (else ~/.kimi-code) and kimi-cli in KIMI_SHARE_DIR (else ~/.kimi), ' +
      'absolute only',
    async () => {
      home = await makeTestHome();
      const code: Interval = { ...interval, profile: 'kimi-v2_0_2', introduced: '2.0.2' };
      expect(kimi.configRoot(home.ctx)).toBe(path.join(home.home, '.kimi-code'));
      expect(kimi.knownHookFiles(home.ctx)).toEqual([
        path.join(home.home, '.kimi-code', 'config.toml'),
        path.join(home.home, '.kimi', 'config.toml'),
      ]);
      const relative = home.context({ env: { KIMI_SHARE_DIR: 'relative/share', KIMI_CODE_HOME: 'relative/code' } });
      expect(kimi.knownHookFiles(relative)).toEqual([
        path.join(home.home, '.kimi-code', 'config.toml'),
        path.join(home.home, '.kimi', 'config.toml'),
      ]);
      const share = path.join(home.root, 'share');
      const codeHome = path.join(home.root, 'code');
      const ctx = home.context({ env: { KIMI_SHARE_DIR: share, KIMI_CODE_HOME: codeHome } });
      expect(kimi.configRoot(ctx)).toBe(codeHome);
      expect(await kimi.hookFile(ctx, interval)).toBe(path.join(share, 'config.toml'));
      expect(await kimi.hookFile(ctx, code)).toBe(path.join(codeHome, 'config.toml'));
      expect(kimi.knownHookFiles(ctx)).toEqual([path.join(codeHome, 'config.toml'), path.join(share, 'config.toml')]);
    },
  );

  it("waits for Kimi Code's migration while kimi-cli's config has hooks of the user's it would drop", async () => {
    home = await makeTestHome();
    const code: Interval = { ...interval, profile: 'kimi-v2_0_2', introduced: '2.0.2' };
    const share = path.join(home.home, '.kimi');
    const codeHome = path.join(home.home, '.kimi-code');
    const target = path.join(codeHome, 'config.toml');
    await mkdir(share, { recursive: true });
    await mkdir(codeHome, { recursive: true });
    // Only the managed table, or no valid TOML: nothing of the user's to lose.
    await writeFile(path.join(share, 'config.toml'), `${TABLE.join('\n')}\n`);
    expect(await kimi.hookFile(home.ctx, code)).toBe(target);
    await writeFile(path.join(share, 'config.toml'), '[[hooks]\n');
    expect(await kimi.hookFile(home.ctx, code)).toBe(target);

    await writeFile(
      path.join(share, 'config.toml'),
      `[[hooks]]\nevent = "PreToolUse"\ncommand = "lint"\n\n${TABLE.join('\n')}\n`,
    );
    const error = await rejected(kimi.hookFile(home.ctx, code));
    expect([error.code, error.file]).toEqual(['NATIVE_CONFIG_CONFLICT', path.join(share, 'config.toml')]);
    expect(error.message).toMatch(/1 hook that Kimi Code has not migrated yet; .* its migration would drop it$/);
    expect(error.hint).toContain('kimi migrate --run');
    // kimi-cli's own hook file is not Kimi Code's concern.
    expect(await kimi.hookFile(home.ctx, interval)).toBe(path.join(share, 'config.toml'));

    // Migrated to another home: still pending for this one.
    await writeFile(
      path.join(share, '.migrated-to-kimi-code'),
      JSON.stringify({ version: 1, target_paths: ['/elsewhere/.kimi-code'] }),
    );
    await expect(kimi.hookFile(home.ctx, code)).rejects.toMatchObject({ code: 'NATIVE_CONFIG_CONFLICT' });
    // A hook of the user's in Kimi Code's config already: the migration drops kimi-cli's hooks whatever we do.
    await writeFile(target, '[[hooks]]\nevent = "Stop"\ncommand = "notify"\n');
    expect(await kimi.hookFile(home.ctx, code)).toBe(target);
    await writeFile(target, '');
    await expect(kimi.hookFile(home.ctx, code)).rejects.toMatchObject({ code: 'NATIVE_CONFIG_CONFLICT' });
    for (const marker of [
      { version: 1, target_path: codeHome, target_paths: [] },
      { version: 1, target_paths: [`${codeHome}/`] },
      { version: 1 },
    ]) {
      await writeFile(path.join(share, '.migrated-to-kimi-code'), JSON.stringify(marker));
      expect(await kimi.hookFile(home.ctx, code), JSON.stringify(marker)).toBe(target);
    }
    await writeFile(
      path.join(share, '.migrated-to-kimi-code'),
      JSON.stringify({ version: 1, target_paths: ['/elsewhere'] }),
    );
    await writeFile(path.join(codeHome, '.skip-migration-from-kimi-cli'), '');
    expect(await kimi.hookFile(home.ctx, code)).toBe(target);
  });

  it('refuses to create config.toml while a legacy config.json waits for migration', async () => {
    home = await makeTestHome();
    const share = path.join(home.home, '.kimi');
    await mkdir(share, { recursive: true });
    await writeFile(path.join(share, 'config.json'), '{"default_model": ""}');
    const error = await rejected(kimi.hookFile(home.ctx, interval));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.hint).toMatch(/Run `kimi` once/);

    // Once Kimi has migrated (config.toml exists), the hook file is usable again.
    await writeFile(path.join(share, 'config.toml'), '');
    expect(await kimi.hookFile(home.ctx, interval)).toBe(path.join(share, 'config.toml'));
  });
});

describe('kimi planHook: creating and removing', () => {
  it('creates the file with only the managed table, and deletes it again', () => {
    const installed = plan(null);
    expect(installed.text).toBe(TABLE.join('\n') + '\n');
    expect(installed.managedFound).toBe(0);
    expect(installed.owned).toEqual({ created_file: true, separator: '' });
    expect(managedOf(installed.text!)).toEqual([
      { event: 'SessionEnd', matcher: '', command: EXPECTED_COMMAND, timeout: 5 },
    ]);

    const removed = plan(installed.text, null, installed.owned);
    expect(removed).toEqual({ text: null, owned: undefined, managedFound: 1 });
  });

  it('leaves a missing file missing when no hook is wanted', () => {
    expect(plan(null, null)).toEqual({ text: null, owned: undefined, managedFound: 0 });
  });

  it('keeps a created file once the user has added to it', () => {
    const installed = plan(null);
    const edited = 'default_yolo = true\n\n' + installed.text!;
    const removed = plan(edited, null, installed.owned);
    expect(removed.text).toBe('default_yolo = true\n\n');
  });

  it('fills an existing empty file and empties it again', () => {
    const installed = plan(fixture('empty.toml'));
    expect(installed.text).toBe(TABLE.join('\n') + '\n');
    expect(plan(installed.text, null, installed.owned).text).toBe('');
  });
});

describe('kimi planHook: fixtures round-trip to the original bytes', () => {
  const cases = [
    'empty.toml',
    'user-hooks.toml',
    'comments.toml',
    'crlf.toml',
    'no-final-newline.toml',
    'non-ascii.toml',
  ];
  for (const name of cases) {
    it(name, () => {
      const original = fixture(name);
      const installed = plan(original);
      const text = installed.text!;
      expect(text.startsWith(original)).toBe(true);
      expect(managedOf(text)).toHaveLength(1);
      expect(withoutManaged(text)).toEqual(withoutManaged(original));
      expect(JSON.parse(JSON.stringify(installed.owned))).toEqual(installed.owned);

      const again = plan(text, desired, installed.owned);
      expect(again.text).toBe(text);
      expect(again.managedFound).toBe(1);

      const removed = plan(text, null, installed.owned);
      expect(removed.text).toBe(original);
      expect(removed.owned).toBeUndefined();
      expect(removed.managedFound).toBe(1);
    });
  }

  it('appends after the user hooks, on SessionEnd and other events, leaving them as they are', () => {
    const original = fixture('user-hooks.toml');
    const text = plan(original).text!;
    expect(text).toBe(original + '\n' + TABLE.join('\n') + '\n');
    const hooks = hooksOf(text);
    expect(hooks.map((h) => h.event)).toEqual(['SessionEnd', 'PreToolUse', 'SessionEnd']);
    expect(hooks[0]).toEqual({ event: 'SessionEnd', command: '~/bin/log-session.sh', timeout: 10 });
  });

  it('writes CRLF line breaks into a CRLF file', () => {
    const original = fixture('crlf.toml');
    expect(original).toContain('\r\n');
    const text = plan(original).text!;
    expect(text.replace(/\r\n/g, '')).not.toContain('\n');
    expect(text).toBe(original + '\r\n' + TABLE.join('\r\n') + '\r\n');
  });

  it('keeps a file without a final line break without one', () => {
    const original = fixture('no-final-newline.toml');
    expect(original.endsWith('\n')).toBe(false);
    const text = plan(original).text!;
    expect(text).toBe(original + '\n\n' + TABLE.join('\n'));
  });

  it('keeps non-ASCII text and writes a non-ASCII command as UTF-8', () => {
    const original = fixture('non-ascii.toml');
    const hook = buildManagedHook(
      { node: '/usr/bin/node', entry: '/home/zoë/工具/blue-agent.js' },
      'kimi',
      'kimi-v1_28_0',
      'SessionEnd',
      5,
    );
    const installed = plan(original, hook);
    expect(installed.text).toContain('/home/zoë/工具/blue-agent.js');
    expect(managedOf(installed.text!)[0]!.command).toBe(hook.command);
    expect(plan(installed.text, null, installed.owned).text).toBe(original);
  });
});

describe('kimi planHook: existing managed tables', () => {
  it('leaves a correct managed table alone, however Kimi laid it out', () => {
    const original = fixture('kimi-saved.toml');
    const result = plan(original);
    expect(result.text).toBe(original);
    expect(result.managedFound).toBe(1);
    expect(result.owned).toEqual({});

    // Found rather than appended: removal cuts the table without leaving a double blank line.
    const removed = plan(original, null, result.owned);
    expect(removed.text).toBe(original.replace(/\[\[hooks\]\][^[]*\n\n/, ''));
    expect(removed.text).not.toMatch(/\n\n\n/);
  });

  it('updates a stale managed table where it stands', () => {
    const original = fixture('stale.toml');
    const result = plan(original);
    expect(result.managedFound).toBe(1);
    const stale = original.slice(original.indexOf('[[hooks]] # managed'), original.indexOf('\n\n[background]') + 1);
    expect(result.text).toBe(original.replace(stale, TABLE.join('\n') + '\n'));
    expect(hooksOf(result.text!).map((h) => h.event)).toEqual(['Stop', 'SessionEnd']);
    expect(plan(result.text, desired, result.owned).text).toBe(result.text);
  });

  it('removes a stale managed table without a ledger record, keeping the rest', () => {
    const original = fixture('stale.toml');
    const result = plan(original, null, undefined);
    expect(result.managedFound).toBe(1);
    expect(result.text).toBe(
      'default_model = ""\n\n[[hooks]]\nevent = "Stop"\ncommand = "notify-send ' +
        'done"\n\n[background]\nmax_running_tasks = 2\n',
    );
  });

  it('collapses duplicates into one and keeps the user hook between them', () => {
    const original = fixture('duplicates.toml');
    const result = plan(original);
    expect(result.managedFound).toBe(2);
    expect(managedOf(result.text!)).toHaveLength(1);
    expect(hooksOf(result.text!).map((h) => h.event)).toEqual(['SessionEnd', 'SessionStart']);
    expect(result.text!.startsWith(TABLE.join('\n') + '\n\n[[hooks]]\nevent = "SessionStart"')).toBe(true);
    expect(plan(result.text, desired, result.owned).text).toBe(result.text);

    const removed = plan(original, null);
    expect(removed.managedFound).toBe(2);
    expect(removed.text).toBe('[[hooks]]\nevent = "SessionStart"\ncommand = "echo hello"\n');
  });

  it(
    'repairs in place the table `kimi migrate` copied from kimi-cli (no comment, its event and profile), never ' +
      'adding a second',
    () => {
      // `kimi migrate --run` writes kimi-cli's tables into Kimi Code's config.toml without their comments.
      const migrated =
        `default_model = "kimi-k2"\n\n[[hooks]]\nevent = "Stop"\ncommand = "x"\n\n[[hooks]]\nevent = ` +
        `"SessionEnd"\nmatcher = ""\ncommand = "${EXPECTED_COMMAND}"\ntimeout = 5\n`;
      const code = buildManagedHook(
        { node: '/usr/local/bin/node', entry: '/opt/blue agent/bin/blue-agent.js' },
        'kimi',
        'kimi-v2_0_2',
        'Stop',
        10,
      );
      const repaired = plan(migrated, code);
      expect(repaired.managedFound).toBe(1);
      expect(hooksOf(repaired.text!)).toEqual([
        { event: 'Stop', command: 'x' },
        { event: 'Stop', matcher: '', command: code.command, timeout: 10 },
      ]);
      expect(
        repaired.text!.startsWith(
          'default_model = "kimi-k2"\n\n[[hooks]]\nevent = "Stop"\ncommand = "x"\n\n[[hooks]] # managed by ' +
            'blue-agent\n',
        ),
      ).toBe(true);
      expect(plan(repaired.text, code, repaired.owned)).toStrictEqual({
        text: repaired.text,
        owned: repaired.owned,
        managedFound: 1,
      });
      // Withdrawn, the copy goes and the user's table stays.
      expect(plan(migrated, null).text).toBe('default_model = "kimi-k2"\n\n[[hooks]]\nevent = "Stop"\ncommand = "x"\n');
    },
  );

  it('removes its table after the user appended more tables behind it', () => {
    const original = fixture('comments.toml');
    const installed = plan(original);
    const edited = installed.text + '\n[loop_control]\nmax_steps_per_turn = 7\n';
    const removed = plan(edited, null, installed.owned);
    expect(removed.text).toBe(original + '\n[loop_control]\nmax_steps_per_turn = 7\n');
  });

  it('stays valid when text was appended right after a table that ended the file', () => {
    const original = fixture('no-final-newline.toml');
    const installed = plan(original);
    const edited = installed.text + '\n[background]\nmax_running_tasks = 1';
    const removed = plan(edited, null, installed.owned);
    expect(parse(removed.text!)).toEqual({
      loop_control: { max_steps_per_turn: 50 },
      background: { max_running_tasks: 1 },
    });
  });

  it('restores the bytes even without a ledger record in the usual layout', () => {
    const original = 'default_model = ""\n';
    const installed = plan(original);
    expect(plan(installed.text, null, undefined).text).toBe(original);
  });
});

describe('kimi planHook: unusual layouts', () => {
  const roundTrips = {
    'whitespace only': '\n\n  \n',
    'comment without final line break': '# only a comment',
    'multi-line string at the end': 'default_editor = """\nvim\n"""',
    'multi-line string holding a fake header': 'x = """\n[[hooks]]\nevent = "SessionEnd"\n"""\n',
    'quoted and spaced hooks headers':
      '[[ "hooks" ]]\nevent = "Stop"\ncommand = "a"\n[[ hooks ]] # c\nevent = "Stop"\ncommand = "b"\n',
    'hooks key inside another table': '[other]\nhooks = 1\n',
    'inline tables and arrays spanning lines': 'a = [\n  1, # one\n  2,\n]\nb = { c = "]", d = [3] }\n',
    'date-time with a space': 'when = 1979-05-27 07:32:00Z\n',
    'byte-order mark': '\uFEFFdefault_model = ""\n',
  };
  for (const [name, original] of Object.entries(roundTrips)) {
    it(name, () => {
      const installed = plan(original);
      expect(managedOf(installed.text!)).toHaveLength(1);
      expect(withoutManaged(installed.text!)).toEqual(withoutManaged(original));
      expect(plan(installed.text, desired, installed.owned).text).toBe(installed.text);
      expect(plan(installed.text, null, installed.owned).text).toBe(original);
    });
  }

  it('refuses dotted hooks keys at the root', () => {
    expect(thrown(() => plan('hooks.a = 1\n')).code).toBe('NATIVE_CONFIG_CONFLICT');
  });

  it('takes a managed table’s sub-tables with it', () => {
    const original =
      `[[hooks]]\nevent = "SessionEnd"\ncommand = "${EXPECTED_COMMAND}"\n[hooks.extra]\nx = ` +
      `1\n\n[[hooks]]\nevent = "Stop"\ncommand = "a"\n`;
    const result = plan(original, null);
    expect(result.text).toBe('[[hooks]]\nevent = "Stop"\ncommand = "a"\n');
  });
});

describe('kimi planHook: values', () => {
  it('escapes quotes, backslashes and control characters as a TOML basic string', () => {
    const hook = buildManagedHook(
      { node: '/usr/bin/node', entry: '/srv/we"ird\\dir\t/blue-agent.js' },
      'kimi',
      'p',
      'SessionEnd',
      5,
    );
    const text = plan('', hook).text!;
    expect(managedOf(text)[0]!.command).toBe(hook.command);
    expect(text).toContain('\\"');
    expect(text).toContain('\\\\');
    expect(text).toContain('\\t');
  });

  it('keeps the timeout inside Kimi’s 1..600 bounds', () => {
    expect(managedOf(plan('', { ...desired, timeoutSeconds: 0 }).text!)[0]!.timeout).toBe(1);
    expect(managedOf(plan('', { ...desired, timeoutSeconds: 9999 }).text!)[0]!.timeout).toBe(600);
    expect(managedOf(plan('', { ...desired, timeoutSeconds: 2.5 }).text!)[0]!.timeout).toBe(3);
  });

  it('rewrites a table whose timeout or matcher drifted', () => {
    const drifted =
      TABLE.join('\n').replace('timeout = 5', 'timeout = 30').replace('matcher = ""', 'matcher = "x"') + '\n';
    const result = plan(drifted);
    expect(result.text).toBe(TABLE.join('\n') + '\n');
    expect(result.managedFound).toBe(1);
  });
});

describe('kimi planHook: errors', () => {
  it('reports unparseable TOML with its line and column and changes nothing', () => {
    const error = thrown(() => plan(fixture('invalid.toml')));
    expect(error.code).toBe('NATIVE_CONFIG_PARSE');
    expect(error.file).toBe(FILE);
    expect(error.line).toBe(3);
    expect(error.column).toBeGreaterThan(0);
    expect(error.hint).toBeTruthy();
    expect(thrown(() => plan(fixture('invalid.toml'), null)).code).toBe('NATIVE_CONFIG_PARSE');
  });

  it('refuses an inline hooks array with its position and a hint', () => {
    const original = fixture('inline-array.toml');
    const error = thrown(() => plan(original));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.line).toBe(2);
    expect(error.column).toBe(1);
    expect(error.hint).toMatch(/\[\[hooks\]\]/);
    // Nothing of ours in it: removal is a no-op.
    expect(plan(original, null)).toEqual({ text: original, owned: undefined, managedFound: 0 });
  });

  it('refuses an inline array that holds a managed entry, even for removal', () => {
    const original = `hooks = [{ event = "SessionEnd", command = "${EXPECTED_COMMAND}" }]\n`;
    expect(thrown(() => plan(original, null)).code).toBe('NATIVE_CONFIG_CONFLICT');
  });

  it('refuses a plain [hooks] table', () => {
    const error = thrown(() => plan(fixture('hooks-table.toml')));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.line).toBe(1);
  });
});

describe("kimi planner: Kimi's own `hooks = []`", () => {
  const variants = [
    ['hooks = []', 'default_model = ""\nhooks = []\n\n[loop_control]\nmax_steps_per_turn = 500\n'],
    ['hooks = [ ]', 'default_model = ""\nhooks = [ ]\ntheme = "dark"\n'],
    ['hooks=[] with a comment after it', 'default_model = ""\nhooks=[]   # filled in by Kimi\ntheme = "dark"\n'],
    ['a multi-line empty array', 'hooks = [\n]\n[models]\n'],
    ['CRLF, last line, no final line break', 'theme = "dark"\r\nhooks = []'],
    ['the only line', 'hooks = []\n'],
  ] as const;

  for (const [name, original] of variants) {
    it(`${name}: the statement gives way to the managed table; removal gives back the exact bytes`, () => {
      const installed = plan(original);
      expect(managedOf(installed.text!)).toHaveLength(1);
      expect(withoutManaged(installed.text!)).toEqual(withoutManaged(original));
      expect(installed.text).not.toMatch(/^\s*hooks\s*=/m);
      expect(installed.owned).toMatchObject({ replaced: { offset: original.indexOf('hooks') } });
      // Re-planning is a no-op that keeps the record.
      expect(plan(installed.text, desired, installed.owned)).toEqual({
        text: installed.text,
        owned: installed.owned,
        managedFound: 1,
      });
      expect(plan(installed.text, null, installed.owned).text).toBe(original);
    });
  }

  it('the default config round-trips, and removal without a record still leaves a valid config', () => {
    const original = readFileSync(path.join(repoRoot, 'fixtures', 'real-world', 'kimi-default.toml'), 'utf8');
    const installed = plan(original);
    expect(plan(installed.text, null, installed.owned).text).toBe(original);
    const lost = plan(installed.text, null, undefined).text!;
    expect(withoutManaged(lost)).toEqual(withoutManaged(original));
  });

  it('a record that names anything but an empty hooks statement is ignored', () => {
    const installed = plan('hooks = []\ntheme = "dark"\n');
    const forged = { ...installed.owned, replaced: { text: 'evil = true\n', offset: 0 } };
    const removed = plan(installed.text, null, forged).text!;
    expect(removed).not.toContain('evil');
    expect(withoutManaged(removed)).toEqual({ theme: 'dark' });
  });

  it('user lines added above since: the statement goes back at a line start in the top-level table, or not', () => {
    const installed = plan('theme = "dark"\nhooks = []\n[models]\n');
    const edited = `# added later, long enough to move the offset\n${installed.text!}`;
    const removed = plan(edited, null, installed.owned).text!;
    expect(managedOf(removed)).toHaveLength(0);
    expect(withoutManaged(removed)).toEqual(withoutManaged(edited));
  });

  it('a non-empty inline array of foreign hooks is still refused with its position', () => {
    const error = thrown(() => plan('hooks = [{ event = "Stop", command = "notify-send done" }]\n'));
    expect(error.code).toBe('NATIVE_CONFIG_CONFLICT');
    expect(error.line).toBe(1);
  });
});
