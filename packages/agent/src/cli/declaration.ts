/**
 * What a command declares — its name and arguments, options, help and a run that loads the command's module only when
 * it runs — and the commander command built from it. Each command's declaration is `commands/<command>.ts`; its run
 * is `<command>.ts`.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { Context } from '../context.js';

export interface OptionDeclaration {
  /** As commander spells them: `--json`, `--harness <name>`, `--no-launch`. */
  readonly flags: string;
  readonly description: string;
  /** The command refuses to run without it. */
  readonly required?: boolean;
  readonly default?: string;
  readonly choices?: readonly string[];
  /**
   * The value the run gets, from the text given and the value so far (a repeatable option adds to it); a throw says
   * the value is invalid, in the thrown message's words.
   */
  readonly parse?: (value: string, previous: never) => unknown;
}

export interface CommandDeclaration {
  /** The name, then the arguments as commander spells them: `status`, `show <id>`, `resume [id]`. */
  readonly usage: string;
  /** The one line `--help` lists the command with. */
  readonly summary: string;
  readonly options?: readonly OptionDeclaration[];
  /** Shown after the options in its `--help`: what it does in more words, exit codes, examples. */
  readonly help?: string;
  /**
   * The help, completed with what only the command's own modules know (the checks harnesses add, say): loaded before
   * parsing, and only when argv names the command, so that no other command loads those modules. `help` stands in
   * until then.
   */
  readonly loadHelp?: () => Promise<string>;
  readonly subcommands?: readonly CommandDeclaration[];
  /**
   * Runs the command with its arguments, then its options, as commander parsed them (types cannot check what a
   * declaration says it takes, hence `never`); loads the command's module only now. Resolves to the exit code.
   */
  readonly run?: (ctx: Context, ...values: never[]) => Promise<number>;
}

/** What the commands built from declarations share: how a run's exit code is kept, and the help loaded so far. */
export interface Runner {
  run(declaration: CommandDeclaration, values: readonly unknown[]): Promise<void>;
  /** Help texts that `loadHelp` gave. */
  readonly loadedHelp: ReadonlyMap<CommandDeclaration, string>;
}

/** Adds `declaration` to `parent` as a subcommand, with its own subcommands. */
export function addCommand(parent: Command, declaration: CommandDeclaration, runner: Runner): Command {
  const command = parent.command(declaration.usage).description(declaration.summary);
  for (const option of declaration.options ?? []) command.addOption(toOption(option));
  if (declaration.loadHelp !== undefined)
    command.addHelpText('after', () => runner.loadedHelp.get(declaration) ?? declaration.help ?? '');
  else if (declaration.help !== undefined) command.addHelpText('after', declaration.help);
  if (declaration.run !== undefined) {
    // Commander passes the arguments, the options, then the command itself.
    command.action((...values: unknown[]) => runner.run(declaration, values.slice(0, -1)));
  }
  for (const sub of declaration.subcommands ?? []) addCommand(command, sub, runner);
  return command;
}

function toOption(declaration: OptionDeclaration): Option {
  const option = new Option(declaration.flags, declaration.description);
  if (declaration.required === true) option.makeOptionMandatory();
  if (declaration.choices !== undefined) option.choices(declaration.choices);
  if (declaration.default !== undefined) option.default(declaration.default);
  const { parse } = declaration;
  if (parse !== undefined) {
    option.argParser((value: string, previous: unknown) => {
      try {
        return parse(value, previous as never);
      } catch (error) {
        throw new InvalidArgumentError(error instanceof Error ? error.message : String(error));
      }
    });
  }
  return option;
}

/**
 * Loads the help of each command in `declarations`, or among their subcommands, that argv names and has help to load
 * (`loadHelp`).
 */
export async function loadHelp(
  declarations: readonly CommandDeclaration[],
  argv: readonly string[],
  loaded = new Map<CommandDeclaration, string>(),
): Promise<Map<CommandDeclaration, string>> {
  for (const declaration of declarations) {
    if (!argv.includes(nameOf(declaration))) continue;
    if (declaration.loadHelp !== undefined) loaded.set(declaration, await declaration.loadHelp());
    await loadHelp(declaration.subcommands ?? [], argv, loaded);
  }
  return loaded;
}

function nameOf(declaration: CommandDeclaration): string {
  return declaration.usage.split(' ')[0]!;
}
