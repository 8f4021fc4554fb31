/**
 * The git repository a session ran in: its root and remote, for the manifest. Read with `git` itself (so worktrees,
 * `.git` files and safe.directory rules mean what they mean to git), with a timeout; absent outside a repository or
 * when git is missing or refuses. The remote is stripped of credentials before it goes anywhere.
 */
import { stat } from 'node:fs/promises';
import type { Context } from '../context.js';

export interface Repository {
  root: string;
  remote?: string;
}

const GIT_TIMEOUT_MS = 5_000;
const MAX_LENGTH = 4096;

/** Answers already asked of git, by directory: a drain builds many sessions from the same few directories. */
export type RepositoryCache = Map<string, Promise<Repository | undefined>>;

export async function readRepository(
  ctx: Context,
  cwd: string | undefined,
  cache?: RepositoryCache,
): Promise<Repository | undefined> {
  const key = cwd ?? '';
  const known = cache?.get(key);
  if (known !== undefined) return known;
  const answer = askGit(ctx, cwd).catch(
    // The repository is optional context: nothing about it may fail a capture.
    () => undefined,
  );
  cache?.set(key, answer);
  return answer;
}

async function askGit(ctx: Context, cwd: string | undefined): Promise<Repository | undefined> {
  if (cwd === undefined || !cwd.startsWith('/')) return undefined;
  const info = await stat(cwd).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) return undefined;
  const env = {
    ...ctx.env,
    // Never prompt, never take locks or write to the user's repository.
    GIT_TERMINAL_PROMPT: '0',
    GIT_OPTIONAL_LOCKS: '0',
    LC_ALL: 'C',
  };
  const git = (args: string[]) =>
    ctx.run('git', ['-C', cwd, ...args], { timeoutMs: GIT_TIMEOUT_MS, env, cwd, maxOutputBytes: 64 * 1024 });
  const top = await git(['rev-parse', '--show-toplevel']);
  if (top.spawnError !== undefined || top.timedOut || top.exitCode !== 0) return undefined;
  const root = top.stdout.trim();
  if (root === '' || !root.startsWith('/') || root.length > MAX_LENGTH || root.includes('\n')) return undefined;
  const remotes = await git(['config', '--get-regexp', '^remote\\..*\\.url$']);
  const remote = remotes.exitCode === 0 && !remotes.timedOut ? pickRemote(remotes.stdout) : undefined;
  return remote === undefined ? { root } : { root, remote };
}

/** `origin` when there is one, else the first remote; credentials, query and fragment removed. */
export function pickRemote(configOutput: string): string | undefined {
  const urls = new Map<string, string>();
  for (const line of configOutput.split('\n')) {
    const match = /^remote\.(.+)\.url (.+)$/.exec(line.trim());
    if (match !== null && !urls.has(match[1]!)) urls.set(match[1]!, match[2]!);
  }
  const url = urls.get('origin') ?? urls.values().next().value;
  if (url === undefined) return undefined;
  const clean = stripCredentials(url);
  return clean.length > 0 && clean.length <= MAX_LENGTH ? clean : undefined;
}

/**
 * `https://user:token@host/x.git?a=b` -> `https://host/x.git`: HTTP user names are often tokens too. Other schemes
 * keep a user name (`ssh://git@host/x`) but lose any password; scp-like `git@host:org/x.git` names no secret.
 */
export function stripCredentials(url: string): string {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(url);
  if (scheme === null) {
    const scp = /^([^@/]*)@(.*)$/.exec(url);
    const bare = scp !== null && scp[1]!.includes(':') ? scp[2]! : url;
    return bare.replace(/[?#].*$/, '');
  }
  try {
    const parsed = new URL(url);
    if (/^https?$/i.test(scheme[1]!)) parsed.username = '';
    parsed.password = '';
    parsed.search = '';
    parsed.hash = '';
    return parsed.toString();
  } catch {
    // Not a URL that parses: drop the whole user part of the authority, by hand.
    return url.replace(/^([A-Za-z][A-Za-z0-9+.-]*:\/\/)[^/@]*@/, '$1').replace(/[?#].*$/, '');
  }
}
