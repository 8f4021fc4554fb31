/**
 * A command's declaration becomes a commander command: its arguments and options reach its run as commander parsed
 * them, a bad value is a parse error in the declaration's words, and help a command loads is loaded only when argv
 * names it.
 */
import { Command, CommanderError } from 'commander';
import { describe, expect, it } from 'vitest';
import { addCommand, loadHelp, type CommandDeclaration, type Runner } from '../../src/cli/declaration.js';

/** A program holding `declarations`, and the runs its parse made: which declaration, with which values. */
function programOf(
  declarations: readonly CommandDeclaration[],
  loadedHelp: ReadonlyMap<CommandDeclaration, string> = new Map(),
) {
  const runs: { declaration: CommandDeclaration; values: readonly unknown[] }[] = [];
  let out = '';
  const runner: Runner = {
    loadedHelp,
    run: async (declaration, values) => {
      runs.push({ declaration, values });
    },
  };
  const program = new Command('tool')
    .exitOverride()
    .configureOutput({ writeOut: (s) => (out += s), writeErr: () => undefined, outputError: () => undefined });
  for (const declaration of declarations) addCommand(program, declaration, runner);
  const parse = async (...argv: string[]): Promise<string | undefined> => {
    try {
      await program.parseAsync(argv, { from: 'user' });
      return undefined;
    } catch (error) {
      if (error instanceof CommanderError) return error.code;
      throw error;
    }
  };
  return { runs, parse, help: () => out };
}

const noRun = async (): Promise<number> => 0;

describe('a declared command', () => {
  const copy: CommandDeclaration = {
    usage: 'copy <from> [to]',
    summary: 'copy a thing',
    options: [
      { flags: '--mode <mode>', description: 'how', choices: ['fast', 'safe'], default: 'safe' },
      { flags: '--name <name>', description: 'who', required: true },
      {
        flags: '--tag <tag>',
        description: 'a tag, repeatable, lower-case',
        parse: (value: string, previous: string[] | undefined) => {
          if (value !== value.toLowerCase()) throw new Error(`"${value}" is not lower-case`);
          return [...(previous ?? []), value];
        },
      },
      { flags: '--no-launch', description: 'do not launch' },
    ],
    run: noRun,
  };

  it('runs with its arguments, then its options, as commander parsed them', async () => {
    const { runs, parse } = programOf([copy]);
    expect(await parse('copy', 'a', '--name', 'n', '--tag', 'x', '--tag', 'y', '--no-launch')).toBeUndefined();
    expect(runs).toEqual([
      { declaration: copy, values: ['a', undefined, { mode: 'safe', name: 'n', tag: ['x', 'y'], launch: false }] },
    ]);
  });

  it(
    'refuses what its options refuse: a missing required option, a value not among the choices, a value its ' +
      'parser throws at',
    async () => {
      const { runs, parse } = programOf([copy]);
      expect(await parse('copy', 'a')).toBe('commander.missingMandatoryOptionValue');
      expect(await parse('copy', 'a', '--name', 'n', '--mode', 'slow')).toBe('commander.invalidArgument');
      expect(await parse('copy', 'a', '--name', 'n', '--tag', 'X')).toBe('commander.invalidArgument');
      expect(runs).toEqual([]);
    },
  );

  it("reports a parser's refusal as a parse error, in the parser's words", async () => {
    const program = new Command('tool')
      .exitOverride()
      .configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined });
    addCommand(program, copy, { loadedHelp: new Map(), run: async () => undefined });
    const error = await program
      .parseAsync(['copy', 'a', '--name', 'n', '--tag', 'X'], { from: 'user' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CommanderError);
    expect((error as CommanderError).message).toContain('"X" is not lower-case');
  });

  it('holds its subcommands, each run with its own values', async () => {
    const add: CommandDeclaration = {
      usage: 'add <email>',
      summary: 'add one',
      options: [{ flags: '--admin', description: 'an administrator' }],
      run: noRun,
    };
    const list: CommandDeclaration = { usage: 'list', summary: 'list them', run: noRun };
    const { runs, parse } = programOf([{ usage: 'users', summary: 'users', subcommands: [add, list] }]);
    await parse('users', 'add', 'me@example.com', '--admin');
    await parse('users', 'list');
    expect(runs).toEqual([
      { declaration: add, values: ['me@example.com', { admin: true }] },
      { declaration: list, values: [{}] },
    ]);
  });

  it('shows its help after the options, or the help loaded for this run in its place', async () => {
    const doctor: CommandDeclaration = {
      usage: 'check',
      summary: 'check',
      help: '\nChecks: some.',
      loadHelp: async () => '\nChecks: all of them.',
      run: noRun,
    };
    const before = programOf([doctor]);
    await before.parse('check', '--help');
    expect(before.help()).toContain('Checks: some.');
    const after = programOf([doctor], await loadHelp([doctor], ['check', '--help']));
    await after.parse('check', '--help');
    expect(after.help()).toContain('Checks: all of them.');
    expect(after.help()).not.toContain('Checks: some.');
  });
});

describe('loadHelp', () => {
  it('loads the help of the commands argv names, subcommands included, and of no other', async () => {
    const loads: string[] = [];
    const loading = (name: string) => async () => {
      loads.push(name);
      return name;
    };
    const show: CommandDeclaration = { usage: 'show <id>', summary: 'show', loadHelp: loading('show'), run: noRun };
    const policy: CommandDeclaration = {
      usage: 'policy',
      summary: 'policy',
      subcommands: [show, { usage: 'list', summary: 'list', loadHelp: loading('list'), run: noRun }],
    };
    const doctor: CommandDeclaration = { usage: 'doctor', summary: 'doctor', loadHelp: loading('doctor'), run: noRun };

    expect([...(await loadHelp([policy, doctor], ['policy', 'show', '--help'])).entries()]).toEqual([[show, 'show']]);
    expect(loads).toEqual(['show']);
    expect((await loadHelp([policy, doctor], ['status'])).size).toBe(0);
    expect(loads).toEqual(['show']);
  });
});
