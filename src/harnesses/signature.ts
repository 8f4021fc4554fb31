/**
 * How a managed hook command is written and recognised. A command is ours when, read as shell words, it runs the
 * agent's entry (`blue-agent`, `blue-agent.js`) with `capture --harness <name>`: directly, after a Node binary, or
 * through the sh hook (`sh blue-agent-hook NODE ENTRY capture ...`, which does the same without starting Node.js).
 * That stays true when the agent moves or the profile changes, which is what lets reconcile find and repair a stale
 * entry, and move one from one form to the other.
 */
import type { SelfInfo } from '../context.js';
import type { HarnessName } from '../schema/index.js';
import type { ManagedHook } from './types.js';

const ENTRY_NAMES = new Set(['blue-agent', 'blue-agent.js', 'blue-agent.mjs', 'blue-agent.cjs']);
const NODE_NAME = /^(node|nodejs)(\d[\d.]*)?$/;
const SH_HOOK_NAME = 'blue-agent-hook';
const SHELL_NAME = /^(sh|dash|bash)$/;

function basename(word: string): string {
  return word.slice(word.lastIndexOf('/') + 1);
}

export function buildManagedHook(
  self: Pick<SelfInfo, 'node' | 'entry' | 'hook'>,
  harness: HarnessName,
  profile: string,
  event: string,
  timeoutSeconds: number,
  requires?: ManagedHook['requires'],
): ManagedHook {
  const argv = [...(self.hook === undefined ? [] : ['/bin/sh', self.hook]), self.node, self.entry, 'capture', '--harness', harness, '--profile', profile];
  return { harness, profile, event, timeoutSeconds, argv, command: argv.map(shellQuote).join(' '), ...(requires === undefined || requires.length === 0 ? {} : { requires }) };
}

/** POSIX single-quoting; bare words stay bare so the command reads naturally. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_./:@%+=,-]+$/.test(word)) return word.startsWith('/') ? `'${word}'` : word;
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Splits a command line into words the way a POSIX shell would for quotes and escapes (no expansion). */
export function shellWords(command: string): string[] {
  const words: string[] = [];
  let current = '';
  let inWord = false;
  for (let i = 0; i < command.length; i++) {
    const ch = command[i]!;
    if (ch === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) return words.concat(current + command.slice(i + 1));
      current += command.slice(i + 1, end);
      inWord = true;
      i = end;
    } else if (ch === '"') {
      i++;
      while (i < command.length && command[i] !== '"') {
        if (command[i] === '\\' && i + 1 < command.length && '"\\$`'.includes(command[i + 1]!)) i++;
        current += command[i];
        i++;
      }
      inWord = true;
    } else if (ch === '\\' && i + 1 < command.length) {
      current += command[++i];
      inWord = true;
    } else if (/\s/.test(ch)) {
      if (inWord) words.push(current);
      current = '';
      inWord = false;
    } else {
      current += ch;
      inWord = true;
    }
  }
  if (inWord) words.push(current);
  return words;
}

/** True when `command` (a shell command line) is a managed capture hook for `harness`. */
export function isManagedCommand(command: string, harness: HarnessName): boolean {
  return isManagedArgv(shellWords(command), harness);
}

/** True when an argument vector is a managed capture hook for `harness`. */
export function isManagedArgv(words: readonly string[], harness: HarnessName): boolean {
  const verb = words.indexOf('capture');
  if (verb < 1) return false;
  // The agent's entry must be the program that runs: alone, after a Node binary, or after `env node`.
  if (!ENTRY_NAMES.has(basename(words[verb - 1]!))) return false;
  const runner = words.slice(0, verb - 1).map(basename);
  const launches =
    runner.length === 0 ||
    (runner.length === 1 && NODE_NAME.test(runner[0]!)) ||
    (runner.length === 2 && runner[0] === 'env' && NODE_NAME.test(runner[1]!)) ||
    (runner.length === 3 && SHELL_NAME.test(runner[0]!) && runner[1] === SH_HOOK_NAME && NODE_NAME.test(runner[2]!));
  if (!launches) return false;
  const rest = words.slice(verb + 1);
  const flag = rest.indexOf('--harness');
  const named = flag >= 0 ? rest[flag + 1] : rest.find((w) => w.startsWith('--harness='))?.slice('--harness='.length);
  return named === harness;
}
