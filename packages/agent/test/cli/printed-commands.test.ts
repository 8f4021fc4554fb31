/**
 * Every `blue-agent ...` command the product prints or documents — hints, doctor's fixes, `--help`'s examples, serve's
 * output, the dashboard, the README and docs/ — names a command and flags the CLI has, so that it runs as printed
 * once `blue-agent` is on PATH (scripts/install-launcher). Words that follow `blue-agent` but name no command are
 * prose ("blue-agent never overwrites it") and are left alone; so is an unknown word after a command that has
 * subcommands, unless the mention is set as a command: in backticks, in <code> or <pre>, or at the start of a line.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { makeTestHome, repoRoot, type TestHome } from '../../../../test/support/context.js';

/** `blue-agent` then words, flags and placeholders (`NAME`, `<id>`, `[--json]`), up to anything else. */
const MENTION = new RegExp(
  'blue-agent((?: +(?:[a-z][a-z0-9-]*|' +
    '--?[a-z][a-z0-9-]*(?:=[^\\s`\'"]+)?|' +
    String.raw`[A-Z][A-Z_-]*|\[--?[a-z][a-z0-9-]*[^\]\s]*\]|<[^\s>]+>))+)`,
  'g',
);

/** What is wrong with the commands `text` mentions: an unknown subcommand, or a flag its command does not have. */
function problems(program: Command, text: string): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(MENTION)) {
    const words = match[1]!.trim().split(/ +/);
    let command = program;
    let i = 0;
    for (; i < words.length; i++) {
      const sub = command.commands.find((c) => c.name() === words[i]);
      if (sub === undefined) break;
      command = sub;
    }
    if (command === program) continue;
    const said = `blue-agent ${words.join(' ')}`;
    const next = words[i];
    const asCommand = /(^|\n)[ \t]*$|[`>]$/.test(text.slice(Math.max(0, match.index - 80), match.index));
    if (
      asCommand &&
      command.commands.length > 0 &&
      next !== undefined &&
      /^[a-z]/.test(next) &&
      command.commands.every((c) => c.name() !== next)
    ) {
      out.push(`${said}: ${command.name()} has no subcommand ${next}`);
    }
    for (const word of words.slice(i)) {
      const flag = /^\[?(--[a-z][a-z0-9-]*)/.exec(word)?.[1];
      if (flag === undefined || flag === '--help') continue;
      if (!command.options.some((o) => o.long === flag)) out.push(`${said}: ${command.name()} has no ${flag}`);
    }
  }
  return out;
}

/** The sources and documents that print or show commands to people. */
function texts(): { file: string; text: string }[] {
  const files: string[] = ['README.md'];
  const walk = (dir: string, keep: (name: string) => boolean): void => {
    for (const entry of readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`;
      if (entry.isDirectory()) {
        if (rel !== 'packages/contract/src/schema/generated') walk(rel, keep);
      } else if (keep(entry.name)) files.push(rel);
    }
  };
  for (const pkg of readdirSync(path.join(repoRoot, 'packages')))
    walk(`packages/${pkg}/src`, (name) => /\.tsx?$/.test(name));
  walk('packages/agent/bin', (name) => name.endsWith('.js'));
  walk('docs', (name) => name.endsWith('.md'));
  return files.map((file) => ({ file, text: readFileSync(path.join(repoRoot, file), 'utf8') }));
}

let t: TestHome;
let program: Command;
beforeAll(async () => {
  t = await makeTestHome();
  program = buildProgram(t.ctx, { exitCode: 0 });
});
afterAll(async () => t.cleanup());

describe('the commands blue-agent prints', () => {
  it('name commands and flags the CLI has', () => {
    const found = texts().flatMap(({ file, text }) => problems(program, text).map((p) => `${file}: ${p}`));
    expect(found).toEqual([]);
  });

  it('the check sees a command or flag that does not exist, and leaves prose alone', () => {
    const text = [
      'hint: run `blue-agent sessions list --all`',
      'fix: `blue-agent reconcile --dry-run --policy FILE [--json]`',
      'blue-agent never overwrites it; blue-agent sessions are kept',
      '  blue-agent control-plane usres add me@example.com',
      'hint: run `blue-agent sessions purge ID`',
      'fix: `blue-agent service install --now`',
      'blue-agent login --control-url URL --token-file FILE',
    ].join('\n');
    expect(problems(program, text)).toEqual([
      'blue-agent control-plane usres add me: control-plane has no subcommand usres',
      'blue-agent sessions purge ID: sessions has no subcommand purge',
      'blue-agent service install --now: install has no --now',
      'blue-agent login --control-url URL --token-file FILE: login has no --token-file',
    ]);
  });
});
