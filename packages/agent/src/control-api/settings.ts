/**
 * Where the Control API is and which token it gets: derived from the agent config and the environment (which wins),
 * and the client made from them (`controlClient`). The token comes from BLUE_AGENT_TOKEN or the token file: a bare
 * token, or the credentials of a device sign-in (credentials.ts), whose access token is refreshed first when it is
 * about to expire.
 */
import { readFile, stat } from 'node:fs/promises';
import { loadAgentConfig, resolveConfigPath, type AgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import { ControlClient } from './client.js';
import { CONTROL_URL_ENV, TOKEN_ENV } from './env.js';
import { safeUrl } from './scrub.js';

export interface ControlSettings {
  /** The Control API base URL (may carry a path prefix), or undefined when none is configured. */
  controlUrl: string | undefined;
  /** Where the URL came from, for messages. */
  controlUrlSource: 'BLUE_AGENT_CONTROL_URL' | 'control_url' | undefined;
  /** The token file consulted when BLUE_AGENT_TOKEN is not set. */
  tokenFile: string;
  /** Where the token comes from, for messages; never the token itself. */
  tokenSource: string;
  /** The bearer token, or undefined when none is configured. Never log what this returns. */
  readToken(): Promise<string | undefined>;
}

/** Resolves the Control API URL and token source. Throws CONFIG_INVALID for a malformed URL. */
export function controlSettings(ctx: Context, config: AgentConfig): ControlSettings {
  const fromEnv = nonEmpty(ctx.env[CONTROL_URL_ENV]);
  const controlUrlSource =
    fromEnv !== undefined ? CONTROL_URL_ENV : config.control_url !== undefined ? 'control_url' : undefined;
  const controlUrl = fromEnv ?? nonEmpty(config.control_url);
  if (controlUrl !== undefined)
    checkControlUrl(
      controlUrl,
      controlUrlSource === CONTROL_URL_ENV ? CONTROL_URL_ENV : `control_url in ${ctx.paths.configFile}`,
    );

  const tokenFile = config.token_file === undefined ? ctx.paths.tokenFile : resolveConfigPath(ctx, config.token_file);
  const envToken = nonEmpty(ctx.env[TOKEN_ENV]);
  return {
    controlUrl,
    controlUrlSource,
    tokenFile,
    tokenSource: envToken !== undefined ? TOKEN_ENV : tokenFile,
    readToken: async () => (envToken !== undefined ? checkToken(envToken, TOKEN_ENV) : readTokenFile(ctx, tokenFile)),
  };
}

/**
 * The Control API client of this machine's agent config and environment; throws NOT_LOGGED_IN when no Control API is
 * configured, and, with `requireToken`, when there is no token for it either (every route people's commands call
 * needs one).
 */
export async function controlClient(
  ctx: Context,
  options: { timeoutMs?: number; maxResponseBytes?: number; requireToken?: boolean } = {},
): Promise<ControlClient> {
  const { config } = await loadAgentConfig(ctx);
  const settings = controlSettings(ctx, config);
  if (settings.controlUrl === undefined) {
    throw new BlueError('NOT_LOGGED_IN', 'not logged in: no Control API is configured on this machine', {
      hint:
        'Run `blue-agent login --control-url URL` (the Control API your administrator gave you), or set ' +
        'BLUE_AGENT_CONTROL_URL and BLUE_AGENT_TOKEN.',
    });
  }
  const { requireToken, ...limits } = options;
  const token = await settings.readToken();
  if (token === undefined && requireToken === true) {
    throw new BlueError(
      'NOT_LOGGED_IN',
      `not logged in to the Control API at ${safeUrl(settings.controlUrl)}: no token in ${settings.tokenFile}, and ` +
        `${TOKEN_ENV} is not set`,
      {
        hint: 'Run `blue-agent login` to sign in there again, or set BLUE_AGENT_TOKEN.',
      },
    );
  }
  return ControlClient.create({
    controlUrl: settings.controlUrl,
    token,
    tokenSource: settings.tokenSource,
    env: ctx.env,
    userAgent: `blue-agent/${ctx.self.version}`,
    now: () => ctx.clock.now(),
    ...limits,
  });
}

function checkControlUrl(value: string, where: string): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new BlueError('CONFIG_INVALID', `${where}: "${value}" is not a valid URL`, {
      hint: 'Use the Control API base URL, e.g. https://control.example.com or https://example.com/blue.',
    });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new BlueError('CONFIG_INVALID', `${where}: the Control API URL must be http or https, not ${url.protocol}`, {
      hint: 'Use the Control API base URL, e.g. https://control.example.com.',
    });
  }
  // Credentials in a URL end up in logs and process listings; the token has its own channel.
  if (url.username !== '' || url.password !== '') {
    throw new BlueError('CONFIG_INVALID', `${where}: the Control API URL must not contain credentials`, {
      hint:
        `Remove user:password@ from the URL and put the token in ${TOKEN_ENV} or the token file (blue-agent ` +
        `login).`,
    });
  }
}

async function readTokenFile(ctx: Context, file: string): Promise<string | undefined> {
  let info;
  try {
    info = await stat(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new BlueError(
      'CONFIG_INVALID',
      `cannot read the token file ${file}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
      {
        file,
        hint: 'Check the file and its permissions, or run `blue-agent login` again.',
      },
    );
  }
  if (!info.isFile()) {
    throw new BlueError('CONFIG_INVALID', `the token file ${file} is not a regular file`, {
      file,
      hint: 'Point token_file at a file holding only the token, or run `blue-agent login` again.',
    });
  }
  // Windows has no POSIX mode bits to judge.
  if (ctx.platform !== 'win32' && (info.mode & 0o077) !== 0) {
    throw new BlueError(
      'CONFIG_INVALID',
      `the token file ${file} is accessible by group or others (mode ` +
        `${(info.mode & 0o777).toString(8).padStart(4, '0')}); refusing to use it`,
      { file, hint: `Run \`chmod 600 ${file}\`, then try again.` },
    );
  }
  const text = await readFile(file, 'utf8');
  // Credentials of a device sign-in (JSON): their access token, refreshed first when it is about to expire.
  if (text.trimStart().startsWith('{')) {
    const { freshAccessToken, parseCredentials } = await import('./credentials.js');
    return freshAccessToken(ctx, file, parseCredentials(text, file)!);
  }
  const token = nonEmpty(text);
  return token === undefined ? undefined : checkToken(token, file);
}

function checkToken(token: string, source: string): string {
  // Control characters would let the value split or corrupt the Authorization header.
  if (/[\u0000-\u001f\u007f\s]/.test(token)) {
    throw new BlueError('CONFIG_INVALID', `the token from ${source} contains white space or control characters`, {
      hint: 'The token must be a single word; run `blue-agent login` again or fix the value.',
    });
  }
  return token;
}

function nonEmpty(value: string | undefined): string | undefined {
  const trimmed = value?.trim();
  return trimmed === undefined || trimmed === '' ? undefined : trimmed;
}
