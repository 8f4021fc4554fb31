/**
 * `blue-agent logout [--revoke] [--json]`: signs this machine out. The token file goes; a device sign-in, which is this
 * machine's alone, is revoked on the Control API first (best effort), and a token an administrator made is revoked
 * only with --revoke, since it may be in use elsewhere (another machine, automation, the first administrator's
 * token file). control_url stays, so that `blue-agent login` signs in there again.
 */
import { loadAgentConfig } from '../config.js';
import type { Context } from '../context.js';
import { signOut, type SignedOut } from '../control-api/sign-out.js';
import { TOKEN_ENV } from '../control-api/env.js';
import { controlSettings } from '../control-api/settings.js';
import { toBlueError } from '@blue-agent/contract/errors.js';

export interface LogoutOptions {
  revoke?: boolean;
  json?: boolean;
}

export interface LogoutReport extends SignedOut {
  ok: true;
  token_file: string;
  /** Where `blue-agent login` signs in again; null when none is saved. */
  control_url: string | null;
  warnings: string[];
}

export async function logoutCommand(ctx: Context, opts: LogoutOptions): Promise<number> {
  const report = await logout(ctx, opts);
  if (opts.json === true) {
    ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return 0;
  }
  const what =
    report.held === 'device' ? "this machine's sign-in" : report.held === 'token' ? 'the token' : 'the token file';
  const lines = [
    report.removed
      ? `Signed out: removed ${what} (${report.token_file}).`
      : `Not signed in: there is no ${report.token_file}; nothing to remove.`,
    ...revocationLines(report),
    ...(report.control_url === null
      ? []
      : [`control_url ${report.control_url} stays saved: \`blue-agent login\` signs in there again.`]),
    ...report.warnings.map((w) => `warning: ${w}`),
  ];
  ctx.stdout.write(`${lines.join('\n')}\n`);
  return 0;
}

function revocationLines(report: LogoutReport): string[] {
  const { state, reason } = report.revocation;
  if (state === 'revoked')
    return [
      `Revoked on the Control API: ` +
        `${report.held === 'device' ? 'the sign-in and its tokens no longer work' : 'the token no longer works'} ` +
        `anywhere.`,
    ];
  const elsewhere =
    "revoke it on the dashboard's Account page, or ask an administrator (`blue-agent control-plane tokens revoke ID`)";
  if (state === 'failed')
    return [
      `Not revoked on the Control API: ${reason ?? 'it did not say why'}. It works until it lapses: ${elsewhere}.`,
    ];
  if (report.held === 'token')
    return [
      `The token was not revoked, as it may be in use elsewhere (\`logout --revoke\` revokes it too): to end it, ` +
        `${elsewhere}.`,
    ];
  return [];
}

export async function logout(ctx: Context, opts: LogoutOptions): Promise<LogoutReport> {
  const { config } = await loadAgentConfig(ctx);
  const settings = controlSettings(ctx, config);
  const done = await signOut(ctx, settings.tokenFile, settings.controlUrl, {
    device: true,
    token: opts.revoke === true,
  }).catch((error: unknown) => {
    throw toBlueError(error, { action: 'remove the token file', file: settings.tokenFile });
  });
  const warnings: string[] = [];
  if ((ctx.env[TOKEN_ENV]?.trim() ?? '') !== '')
    warnings.push(`${TOKEN_ENV} is set: commands keep using that token until you unset it`);
  return { ok: true, token_file: settings.tokenFile, control_url: settings.controlUrl ?? null, ...done, warnings };
}
