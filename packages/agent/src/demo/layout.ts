/**
 * Where `blue-agent demo` puts things and what its child processes see: pure functions of the demo's temporary root.
 * Two throwaway machines, A (captures) and B (restores), each with a HOME of its own, share one stand-in `bin/` and
 * the Control API's data directory. Nothing here names the user's HOME, XDG directories or harness variables.
 */
import path from 'node:path';

export interface MachineLayout {
  /** `{{ROOT}}` of the recorded fixtures: HOME is `<root>/home`, the session ran in `<root>/work/proj`. */
  root: string;
  home: string;
  /** The working directory: where the session ran on A, where it is restored for on B. */
  workDir: string;
  configHome: string;
  dataHome: string;
  stateHome: string;
  cacheHome: string;
}

export interface DemoLayout {
  root: string;
  controlData: string;
  bin: string;
  tmp: string;
  a: MachineLayout;
  b: MachineLayout;
}

export function demoLayout(root: string): DemoLayout {
  return {
    root,
    controlData: path.join(root, 'control'),
    bin: path.join(root, 'bin'),
    tmp: path.join(root, 'tmp'),
    a: machine(path.join(root, 'a')),
    b: machine(path.join(root, 'b')),
  };
}

function machine(root: string): MachineLayout {
  const home = path.join(root, 'home');
  return {
    root,
    home,
    workDir: path.join(root, 'work', 'proj'),
    configHome: path.join(home, '.config'),
    dataHome: path.join(home, '.local', 'share'),
    stateHome: path.join(home, '.local', 'state'),
    cacheHome: path.join(home, '.cache'),
  };
}

/**
 * The whole environment of a child process on one demo machine, built from nothing rather than filtered from ours:
 * no variable of the user's (HOME, XDG_*, the harnesses' home variables, BLUE_AGENT_*, proxies,
 * NODE_OPTIONS) can leak in. PATH finds the stand-in harness first, then Node.js and the system's tools.
 */
export function machineEnv(layout: DemoLayout, m: MachineLayout, nodeBin: string): Record<string, string> {
  const system = ['/usr/local/bin', '/usr/bin', '/bin'];
  const dirs = [layout.bin, path.dirname(nodeBin), ...system.filter((d) => d !== path.dirname(nodeBin))];
  return {
    HOME: m.home,
    PATH: dirs.join(':'),
    TMPDIR: layout.tmp,
    XDG_CONFIG_HOME: m.configHome,
    XDG_DATA_HOME: m.dataHome,
    XDG_STATE_HOME: m.stateHome,
    XDG_CACHE_HOME: m.cacheHome,
    LANG: 'C.UTF-8',
    NO_COLOR: '1',
    // git (the capture records the repository) must not find a repository or configuration above the demo.
    GIT_CEILING_DIRECTORIES: layout.root,
    GIT_CONFIG_NOSYSTEM: '1',
  };
}

/** Replaces `{{NAME}}` placeholders of the recorded fixtures; unknown ones are left as they are. */
export function substitute(text: string, vars: Readonly<Record<string, string>>): string {
  return text.replace(/\{\{([A-Z][A-Z0-9_]*)\}\}/g, (all, name: string) => vars[name] ?? all);
}

/** A file name with its placeholders replaced, refused when it would leave its folder. */
export function substitutedName(name: string, vars: Readonly<Record<string, string>>): string | undefined {
  const out = substitute(name, vars);
  if (out === '' || out === '.' || out === '..' || out.includes('/') || out.includes('\0')) return undefined;
  return out;
}

/** The `sh` script of the stand-in harness: answers `--version` as the recorded CLI did, refuses everything else. */
export function standInScript(name: string, versionLine: string): string {
  const quoted = `'${versionLine.replace(/'/g, `'\\''`)}'`;
  return [
    '#!/bin/sh',
    `# blue-agent demo: a stand-in for ${name}. It only answers --version, with the version the demo session was`,
    '# recorded with; it is not the real CLI and cannot run or resume a session.',
    'if [ "$1" = "--version" ] || [ "$1" = "-v" ]; then',
    `  printf '%s\\n' ${quoted}`,
    '  exit 0',
    'fi',
    `echo "this ${name} is the stand-in of blue-agent demo; install the real CLI to resume the session" >&2`,
    'exit 1',
    '',
  ].join('\n');
}
