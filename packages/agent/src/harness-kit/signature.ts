/**
 * How a managed hook command is written and recognised. A command is ours only in exactly the shape
 * `buildManagedHook` writes it: `[/bin/sh <hook>] <node> <entry> capture --harness <name> --profile <profile>`, each
 * word as `shellQuote` writes it, nothing before, between or after. The paths and the profile may be any (the agent
 * moves, profiles change), which is what lets reconcile find and repair a stale entry and move one from one form to
 * the other; anything else — an extra word, a shell operator (even glued to a word), another flag — is the user's
 * command, however much of ours it contains, and is never touched.
 */
import type { SelfInfo } from '../context.js';
import type { HarnessName } from '@blue-agent/contract/schema/index.js';
import type { ManagedHook } from '../harnesses/types.js';

const ENTRY_NAMES = new Set(['blue-agent', 'blue-agent.js', 'blue-agent.mjs', 'blue-agent.cjs']);
const NODE_NAME = /^(node|nodejs)(\d[\d.]*)?$/;
const SH_HOOK_NAME = 'blue-agent-hook';
/** The shell the sh hook runs under, as buildManagedHook writes it. */
const SHELL = '/bin/sh';
/** A profile name: the words a profile file's names are made of (never an operator, a quote or a space). */
const PROFILE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,255}$/;

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
  const argv = [
    ...(self.hook === undefined ? [] : [SHELL, self.hook]),
    self.node,
    self.entry,
    'capture',
    '--harness',
    harness,
    '--profile',
    profile,
  ];
  return {
    harness,
    profile,
    event,
    timeoutSeconds,
    argv,
    command: argv.map(shellQuote).join(' '),
    ...(requires === undefined || requires.length === 0 ? {} : { requires }),
  };
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

/** True when `command` (a shell command line) is a managed capture hook for `harness`, spelled as it is written. */
export function isManagedCommand(command: string, harness: HarnessName): boolean {
  const words = shellWords(command);
  // Read back as words, it must be written exactly so: no operator, quote or space that shellWords reads past.
  return isManagedArgv(words, harness) && words.map(shellQuote).join(' ') === command;
}

/** True when an argument vector is a managed capture hook for `harness`: buildManagedHook's words, nothing else. */
export function isManagedArgv(words: readonly string[], harness: HarnessName): boolean {
  const viaHook = words.length === 9;
  if (!viaHook && words.length !== 7) return false;
  if (viaHook && (words[0] !== SHELL || !isPathTo(words[1]!, (name) => name === SH_HOOK_NAME))) return false;
  const [node, entry, verb, harnessFlag, named, profileFlag, profile] = words.slice(viaHook ? 2 : 0);
  return (
    isPathTo(node!, (name) => NODE_NAME.test(name)) &&
    isPathTo(entry!, (name) => ENTRY_NAMES.has(name)) &&
    verb === 'capture' &&
    harnessFlag === '--harness' &&
    named === harness &&
    profileFlag === '--profile' &&
    PROFILE.test(profile!)
  );
}

/** An absolute path whose last segment `name` accepts. */
function isPathTo(word: string, name: (base: string) => boolean): boolean {
  return word.startsWith('/') && name(basename(word));
}
