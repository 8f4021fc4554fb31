/**
 * `blue-agent login [--control-url URL] [--no-browser] [--json]`: signs this machine in with the device flow (a code
 * to approve in a browser; credentials that refresh themselves), or, with `--token-stdin [--offline]`, saves a bearer
 * token an administrator made. Either way it saves where the Control API is (control_url in the agent config, spliced
 * in so that everything else in the file keeps its bytes and comments) and the token or credentials (the token file,
 * 0600, written atomically). Without --control-url it signs in again where it did before (BLUE_AGENT_CONTROL_URL, else
 * the saved control_url), and says so. A token is taken only from stdin — argv is visible to every user of the
 * machine — and never appears in output, logs or error messages.
 *
 * Verification of a token from stdin: it is tried against GET <url>/governance-config. A refused token (401/403), a
 * wrong URL or an unreachable Control API saves nothing; with --offline an unreachable one saves the token unchecked
 * (a machine set up before it can reach the network the Control API lives on), while one that answers still checks it.
 */
import type { Readable } from 'node:stream';
import { parseDocument, isMap } from 'yaml';
import { loadAgentConfig } from '../config.js';
import { CONTROL_URL_ENV, TOKEN_ENV } from '../control-api/env.js';
import { controlSettings } from '../control-api/settings.js';
import type { Context } from '../context.js';
import { writeTokenFile, type Credentials } from '../control-api/credentials.js';
import { deviceSignIn } from '../control-api/device-sign-in.js';
import { fetchGovernanceConfig, governanceConfigUrl } from '../control-api/governance-config.js';
import { ControlClient } from '../control-api/client.js';
import { SessionsApi } from '../control-api/sessions.js';
import { BlueError, signalExitCode, toBlueError, usageError } from '@blue-agent/contract/errors.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import { agentConfigSchema, parseYamlText, validateDocument } from '@blue-agent/contract/schema/index.js';
import { readTextIfExists, replaceFileAtomically, resolveWriteTarget } from '@blue-agent/contract/util/fs.js';

/** A bearer token is a few hundred bytes at most; more on stdin is a mistake (a file piped in by accident). */
const MAX_TOKEN_BYTES = 8 * 1024;
const VERIFY_TIMEOUT_MS = 10_000;

export interface LoginOptions {
  /** Undefined: BLUE_AGENT_CONTROL_URL, else the saved control_url. */
  controlUrl?: string;
  tokenStdin?: boolean;
  /** --offline: a token from stdin is saved unchecked when the Control API cannot be reached. */
  offline?: boolean;
  /** False with --no-browser: the device flow only prints where to go. */
  browser?: boolean;
  json?: boolean;
}

export interface LoginReport {
  ok: true;
  control_url: string;
  /** Where the URL came from: the flag, the environment, or the control_url saved by an earlier login. */
  control_url_source: ControlUrlSource;
  config_file: string;
  token_file: string;
  /** True when the Control API accepted the token; false when it could not be reached (--offline). */
  verified: boolean;
  /** `device`: signed in with the device flow (credentials that refresh); `token`: a token from stdin. */
  method: 'device' | 'token';
  /** Who the device sign-in is for. */
  email?: string;
  warnings: string[];
}

export async function loginCommand(ctx: Context, opts: LoginOptions, stdin: Readable = process.stdin): Promise<number> {
  const report = await login(ctx, opts, stdin);
  if (opts.json === true) {
    ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const lines = [
      ...(report.email === undefined ? [] : [`signed in as ${report.email}`]),
      `control_url ${report.control_url} saved in ${report.config_file}`,
      report.method === 'device'
        ? `credentials saved in ${report.token_file} (mode 0600; the access token refreshes itself)`
        : `token saved in ${report.token_file} (mode 0600)`,
      report.verified ? 'the Control API accepted the token' : 'the token was not checked (--offline)',
      ...report.warnings.map((w) => `warning: ${w}`),
    ];
    ctx.stdout.write(`${lines.join('\n')}\n`);
  }
  return 0;
}

export async function login(ctx: Context, opts: LoginOptions, stdin: Readable): Promise<LoginReport> {
  const { controlUrl, source } = await controlUrlFor(ctx, opts.controlUrl);
  if (source !== '--control-url')
    ctx.stderr.write(
      `Signing in to the Control API at ${controlUrl} (${SOURCE_WORDS[source](ctx)}; --control-url URL signs in ` +
        `elsewhere).\n`,
    );
  if (opts.tokenStdin !== true) {
    if (opts.offline === true)
      throw usageError(
        '--offline applies to a token from stdin only',
        'The device flow needs the Control API: drop --offline, or add --token-stdin.',
      );
    return deviceLogin(ctx, controlUrl, source, opts);
  }
  // Without a pipe the terminal is stdin: say what is awaited rather than seem to hang.
  if ((stdin as { isTTY?: boolean }).isTTY === true)
    ctx.stderr.write('Paste the token, then press Enter and Ctrl-D:\n');
  const token = await readToken(stdin);
  const warnings: string[] = [];

  const outcome = await fetchGovernanceConfig({
    url: governanceConfigUrl(controlUrl),
    token,
    tokenSource: 'stdin',
    etag: undefined,
    timeoutMs: VERIFY_TIMEOUT_MS,
    maxBytes: MAX_POLICY_BYTES,
    userAgent: `blue-agent/${ctx.self.version}`,
    clientVersion: ctx.self.version,
    env: ctx.env,
  }).catch((error: unknown) => {
    // The server took the token (it authenticates before it looks for a policy) but has no policy to give yet, or
    // none this blue-agent may apply (426, another major pinned): the token is good, the policy is another matter.
    if (
      error instanceof BlueError &&
      (error.code === 'POLICY_MISSING' ||
        error.code === 'POLICY_INCOMPATIBLE' ||
        error.code === 'CLIENT_VERSION_MISMATCH')
    ) {
      warnings.push(`${error.message}; saved anyway. ${error.hint ?? ''}`);
      return { kind: 'ok' as const };
    }
    throw error;
  });
  const origin = new URL(controlUrl).origin;
  if (outcome.kind === 'unavailable') {
    // Saving a token nobody checked is a choice, never a fallback: a typo in the URL would otherwise pass unnoticed.
    if (opts.offline !== true) {
      throw new BlueError(
        'CONTROL_API_UNREACHABLE',
        `cannot check the token with the Control API at ${origin}: ${outcome.reason}; nothing was saved`,
        {
          hint:
            `Check --control-url and the network, then try again; to save the token unchecked on a machine ` +
            `that cannot reach the Control API yet, add --offline.`,
        },
      );
    }
    warnings.push(
      `the token was not checked with the Control API at ${origin}: ${outcome.reason}; saved anyway (--offline)`,
    );
  }

  const tokenFile = await save(ctx, controlUrl, `${token}\n`, warnings);
  return {
    ok: true,
    control_url: controlUrl,
    control_url_source: source,
    config_file: ctx.paths.configFile,
    token_file: tokenFile,
    verified: outcome.kind !== 'unavailable',
    method: 'token',
    warnings,
  };
}

export type ControlUrlSource = '--control-url' | typeof CONTROL_URL_ENV | 'control_url';

const SOURCE_WORDS: Record<ControlUrlSource, (ctx: Context) => string> = {
  '--control-url': () => 'from --control-url',
  [CONTROL_URL_ENV]: () => `from ${CONTROL_URL_ENV}`,
  control_url: (ctx) => `control_url saved in ${ctx.paths.configFile}`,
};

/** --control-url, else where the other commands find the Control API: BLUE_AGENT_CONTROL_URL, else the saved
 * control_url. */
async function controlUrlFor(
  ctx: Context,
  given: string | undefined,
): Promise<{ controlUrl: string; source: ControlUrlSource }> {
  if (given !== undefined) return { controlUrl: normaliseControlUrl(given), source: '--control-url' };
  const settings = controlSettings(ctx, (await loadAgentConfig(ctx)).config);
  if (settings.controlUrl === undefined || settings.controlUrlSource === undefined) {
    throw usageError(
      'no Control API to sign in to: give --control-url (login saves it, so later logins need it no more)',
      'Example: blue-agent login --control-url https://control.example.com',
    );
  }
  try {
    return { controlUrl: normaliseControlUrl(settings.controlUrl), source: settings.controlUrlSource };
  } catch (error) {
    const where =
      settings.controlUrlSource === 'control_url' ? `control_url in ${ctx.paths.configFile}` : CONTROL_URL_ENV;
    throw new BlueError(
      'CONFIG_INVALID',
      `${where}: ${(error as BlueError).message.replace(/^--control-url /, 'the URL ')}`,
      { hint: 'Give --control-url URL: login saves it in place of this one.' },
    );
  }
}

/**
 * The device flow: the code and where to approve it on stderr (and the browser opened at that page where one can
 * be), then the credentials saved once approved, and who they are for.
 */
async function deviceLogin(
  ctx: Context,
  controlUrl: string,
  source: ControlUrlSource,
  opts: LoginOptions,
): Promise<LoginReport> {
  const abort = new AbortController();
  const interrupted = (signal: NodeJS.Signals) => abort.abort(signal);
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  let credentials: Credentials;
  try {
    credentials = await deviceSignIn(ctx, controlUrl, {
      signal: abort.signal,
      prompt: (code) => {
        const page = code.verification_uri_complete ?? code.verification_uri;
        ctx.stderr.write(
          `To sign in, open ${code.verification_uri} in a browser and enter the code ${code.user_code}\n` +
            (code.verification_uri_complete === undefined ? '' : `(or open ${code.verification_uri_complete})\n`) +
            `Waiting for approval (the code works for ${Math.round(code.expires_in / 60)} minutes; Ctrl-C stops)…\n`,
        );
        if (opts.browser !== false) void openBrowser(ctx, page);
      },
    });
  } catch (error) {
    if (abort.signal.aborted) {
      // Stopped by the person (or the system), as any command a signal stops: exit 130 (Ctrl-C) or 143 (SIGTERM).
      const signal = abort.signal.reason === 'SIGTERM' ? 'SIGTERM' : 'SIGINT';
      throw new BlueError(
        'INTERRUPTED',
        `the sign-in was stopped (${signal === 'SIGINT' ? 'Ctrl-C' : signal}) before the code was approved; ` +
          `nothing was saved`,
        {
          hint: 'Run `blue-agent login` again to sign in.',
          exitCode: signalExitCode(signal),
        },
      );
    }
    throw error;
  } finally {
    process.off('SIGINT', interrupted);
    process.off('SIGTERM', interrupted);
  }
  const warnings: string[] = [];
  const client = await ControlClient.create({
    controlUrl,
    token: credentials.access_token,
    tokenSource: 'the new sign-in',
    env: ctx.env,
    userAgent: `blue-agent/${ctx.self.version}`,
    timeoutMs: VERIFY_TIMEOUT_MS,
  });
  const api = new SessionsApi(client, () => ctx.clock.now());
  let me;
  try {
    me = await api.me();
  } finally {
    await api.close();
  }
  const tokenFile = await save(ctx, controlUrl, `${JSON.stringify(credentials)}\n`, warnings);
  return {
    ok: true,
    control_url: controlUrl,
    control_url_source: source,
    config_file: ctx.paths.configFile,
    token_file: tokenFile,
    verified: true,
    method: 'device',
    email: me.email,
    warnings,
  };
}

/** Opens `url` in the person's browser when this machine has a desktop; never waits for it, never fails the login. */
async function openBrowser(ctx: Context, url: string): Promise<void> {
  const desktop = ctx.platform === 'darwin' || (ctx.env.DISPLAY ?? '') !== '' || (ctx.env.WAYLAND_DISPLAY ?? '') !== '';
  if (!desktop || !/^https?:\/\//.test(url)) return;
  await ctx.run(ctx.platform === 'darwin' ? 'open' : 'xdg-open', [url], { timeoutMs: 5_000 }).catch(() => undefined);
}

/** Saves the token file's text and control_url (everything that can be refused is checked before anything is written).
 * */
async function save(ctx: Context, controlUrl: string, tokenText: string, warnings: string[]): Promise<string> {
  const loaded = await loadAgentConfig(ctx);
  const settings = controlSettings(ctx, loaded.config);
  const configWrite = await planControlUrl(ctx.paths.configFile, controlUrl);
  await writeTokenFile(settings.tokenFile, tokenText).catch((error: unknown) => {
    throw toBlueError(error, { action: 'write the token to', file: settings.tokenFile });
  });
  await configWrite?.().catch((error: unknown) => {
    throw toBlueError(error, { action: 'update the agent config', file: ctx.paths.configFile });
  });
  const envUrl = ctx.env[CONTROL_URL_ENV]?.trim();
  if (envUrl !== undefined && envUrl !== '' && envUrl !== controlUrl)
    warnings.push(`${CONTROL_URL_ENV} is set and overrides the saved control_url`);
  if ((ctx.env[TOKEN_ENV]?.trim() ?? '') !== '') warnings.push(`${TOKEN_ENV} is set and overrides the saved token`);
  return settings.tokenFile;
}

/** An http(s) base URL without credentials, query or fragment, and without a trailing slash. */
export function normaliseControlUrl(value: string): string {
  const hint = 'Give the Control API base URL, e.g. https://control.example.com or https://example.com/blue.';
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    // The value is not echoed: a token pasted into the wrong option must not end up in a terminal log.
    throw usageError('--control-url is not a valid URL', hint);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw usageError(`--control-url must be http or https, not ${url.protocol}`, hint);
  // Credentials in a URL end up in logs and process listings; the token has its own channel.
  if (url.username !== '' || url.password !== '')
    throw usageError(
      '--control-url must not contain credentials',
      'Give the token on stdin with --token-stdin instead.',
    );
  if (url.search !== '' || url.hash !== '') throw usageError('--control-url must not have a query or fragment', hint);
  const normalised = `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  if (normalised.length > 2048) throw usageError('--control-url is longer than 2048 characters', hint);
  return normalised;
}

async function readToken(stdin: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stdin as AsyncIterable<Buffer | string>) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    size += buffer.length;
    if (size > MAX_TOKEN_BYTES) {
      stdin.destroy();
      throw usageError(
        `the token on stdin is longer than ${MAX_TOKEN_BYTES} bytes`,
        'Pipe in a file holding only the token.',
      );
    }
    chunks.push(buffer);
  }
  const token = Buffer.concat(chunks).toString('utf8').trim();
  if (token === '')
    throw usageError(
      'no token on stdin',
      'Pipe the token in: blue-agent login --control-url URL --token-stdin < token-file',
    );
  // Control characters would let the value split or corrupt the Authorization header.
  if (/[\u0000-\u001f\u007f\s]/.test(token)) {
    throw usageError(
      'the token on stdin contains white space or control characters',
      'The token must be a single word; check what was piped in.',
    );
  }
  return token;
}

/**
 * Plans setting control_url in the agent config, creating the file or changing only that key (comments and order
 * kept). Returns the write to make, or undefined when the file already says so.
 */
async function planControlUrl(configFile: string, controlUrl: string): Promise<(() => Promise<void>) | undefined> {
  const target = await resolveWriteTarget(configFile);
  const before = await readTextIfExists(target);
  let text: string;
  if (before === null || before.trim() === '') {
    text = `${before ?? ''}control_url: ${controlUrl}\n`;
  } else {
    parseYamlText(before, configFile, 'CONFIG_PARSE');
    const doc = parseDocument(before, { uniqueKeys: true });
    if (doc.contents !== null && !isMap(doc.contents)) {
      throw new BlueError(
        'CONFIG_INVALID',
        `${configFile}: the agent config is not a mapping; cannot set control_url in it`,
        {
          file: configFile,
          hint: 'Fix the file so that it holds `key: value` settings, then log in again.',
        },
      );
    }
    if (doc.get('control_url') === controlUrl) return undefined;
    doc.set('control_url', controlUrl);
    text = String(doc);
  }
  const check = (written: string) => {
    const parsed = parseYamlText(written, configFile, 'CONFIG_PARSE');
    validateDocument(agentConfigSchema, parsed.data, configFile, parsed);
  };
  check(text);
  return () => replaceFileAtomically(target, text, { expected: before, newFileMode: 0o600, verify: check });
}
