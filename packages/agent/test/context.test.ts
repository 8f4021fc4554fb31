/**
 * The state layout lives on Context.paths: every file and folder blue-agent keeps is named in src/context.ts, and no
 * other module spells a state path.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolvePaths, stateLayout, type StateLayout } from '../src/context.js';
import { scanSource, scanSources, type ScannedSource } from '../../../test/support/source-scan.js';

const STATE = '/state';
const layout = stateLayout(STATE);
const relative = Object.values(layout)
  .filter((p) => p !== STATE)
  .map((p) => path.relative(STATE, p).split(path.sep));
/** File names of the layout distinctive enough to be refused wherever a literal ends in one (`ledger.json`, `run.log`).
 * */
const FILE_NAMES = [...new Set(relative.map((parts) => parts.at(-1)!).filter((name) => /[.-]/.test(name)))];
/** Every name of the layout, refused as an argument of path.join / path.resolve. */
const SEGMENTS = new Set(relative.flat());

/** Where `source` spells a state path itself, as `file:line what`. */
function statePathLiterals(source: ScannedSource): string[] {
  const found: string[] = [];
  const ending = new RegExp(`(^|/)(${FILE_NAMES.map((n) => n.replace(/[.]/g, '\\.')).join('|')})$`);
  for (const literal of source.literals) {
    if (ending.test(literal.text)) found.push(`${source.file}:${literal.line} names ${JSON.stringify(literal.text)}`);
    if (literal.kind === 'template' && /\$\{[^}]*\bstateDir\}\//.test(literal.text))
      found.push(`${source.file}:${literal.line} builds \`${literal.text}\``);
  }
  for (const call of source.pathCalls) {
    for (const arg of call.args) {
      if (arg.literal !== undefined ? SEGMENTS.has(arg.literal) : /\bstateDir\b/.test(arg.code)) {
        found.push(`${source.file}:${call.line} joins ${call.args.map((a) => a.code).join(', ')}`);
        break;
      }
    }
  }
  return found;
}

describe('the state layout', () => {
  it('keeps every file and folder inside the state directory, each under its own name', () => {
    const values = Object.values(layout);
    expect(new Set(values).size).toBe(values.length);
    for (const value of values) expect(value === STATE || value.startsWith(`${STATE}/`)).toBe(true);
    expect(layout).toMatchObject<Partial<StateLayout>>({
      ledgerFile: '/state/ledger.json',
      spoolDir: '/state/spool',
      locksDir: '/state/locks',
      captureLogFile: '/state/capture.log',
    });
  });

  it('is what Context.paths carries, under BLUE_AGENT_HOME; the Control API data follows XDG_DATA_HOME', () => {
    const paths = resolvePaths(
      { HOME: '/home/me', BLUE_AGENT_HOME: '/elsewhere/state', XDG_DATA_HOME: '/data' },
      'linux',
    );
    expect(paths).toMatchObject(stateLayout('/elsewhere/state'));
    expect(paths.controlDataDir).toBe('/data/blue-agent/control');
    expect(resolvePaths({ HOME: '/home/me', XDG_DATA_HOME: 'relative' }, 'linux').controlDataDir).toBe(
      '/home/me/.local/share/blue-agent/control',
    );
  });

  it('carries the XDG config and data homes, each when absolute, else its default under HOME', () => {
    expect(resolvePaths({ HOME: '/home/me', XDG_CONFIG_HOME: '/cfg', XDG_DATA_HOME: '/data' }, 'linux')).toMatchObject({
      configHome: '/cfg',
      dataHome: '/data',
    });
    for (const unset of [
      {},
      { XDG_CONFIG_HOME: '', XDG_DATA_HOME: '' },
      { XDG_CONFIG_HOME: 'cfg', XDG_DATA_HOME: 'data' },
    ]) {
      expect(resolvePaths({ HOME: '/home/me', ...unset }, 'linux')).toMatchObject({
        configHome: '/home/me/.config',
        dataHome: '/home/me/.local/share',
      });
    }
  });

  it(
    'is spelled in src/context.ts alone: no other module names a state file or joins a path onto the state ' +
      'directory',
    () => {
      const found = scanSources()
        .filter((s) => s.file !== 'packages/agent/src/context.ts')
        .flatMap(statePathLiterals);
      expect(found).toEqual([]);
    },
  );

  it('the scan finds the spellings it refuses', () => {
    const source = scanSource(
      'src/x.ts',
      [
        "const a = path.join(ctx.paths.stateDir, 'locks');",
        "const b = path.join(dir, 'ledger.json'); // 'run.log' in a comment is fine",
        'const c = `${ctx.paths.stateDir}/spool`;',
        "const d = path.join(home, '.cache', 'x'); const e = 'the run.log of the agent'; /* 'capture.log' */",
        "const f = /'[a-z]'/.test(g) ? 'policy' : `${h}/run.log`;",
      ].join('\n'),
    );
    expect(statePathLiterals(source)).toEqual([
      'src/x.ts:2 names "ledger.json"',
      'src/x.ts:3 builds `${ctx.paths.stateDir}/spool`',
      'src/x.ts:5 names "${h}/run.log"',
      'src/x.ts:1 joins ctx.paths.stateDir, "locks"',
      'src/x.ts:2 joins dir, "ledger.json"',
    ]);
  });
});

describe("the README's state table", () => {
  it('names every file and folder of the layout', () => {
    const readme = readFileSync(path.join(import.meta.dirname, '..', '..', '..', 'README.md'), 'utf8');
    const table = readme.slice(
      readme.indexOf('## Where state lives'),
      readme.indexOf('\n## ', readme.indexOf('## Where state lives') + 1),
    );
    const missing = relative
      .map((parts) => parts.join('/'))
      .filter((name) => {
        // cache/, locks/ …: a folder's row names it with a trailing slash; files by their path.
        return !table.includes(`\`${name}\``) && !table.includes(`\`${name}/\``) && !table.includes(`\`${name}/<`);
      });
    expect(missing).toEqual([]);
  });
});
