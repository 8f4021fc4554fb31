/** `sessions show`: one session, its artifacts and who it is shared with. */
import { formatBytes } from '@blue-agent/contract/bundle/index.js';
import type { Context } from '../../context.js';
import {
  printable,
  sessionLabel,
  type SessionDetail,
  type Sharing,
  type SharingMode,
} from '../../control-api/sessions.js';
import { withApi, writeJson, sessionJson } from './common.js';

/** Recipients named at most by `show`. */
const SHOWN_RECIPIENTS = 20;
// ---------------------------------------------------------------------------------------------------------------
// show

export async function sessionsShowCommand(ctx: Context, id: string, opts: { json?: boolean }): Promise<number> {
  const shown = await withApi(ctx, async (api) => {
    const detail = await api.resolveDetail(id);
    // Anyone who may see a session may read its sharing; `can_edit` says whether the caller owns it. Only the owner
    // is shown the recipients; others see "shared with you".
    const sharing = await api.sharing(detail.session.id);
    return {
      detail,
      sharing,
      expired: api.expired(detail.session),
      json: sessionJson(api, detail.session, sharing.can_edit),
    };
  });
  const { detail, sharing } = shown;
  if (opts.json === true) {
    writeJson(ctx, { session: shown.json, artifacts: detail.artifacts, ...(sharing.can_edit ? { sharing } : {}) });
    return 0;
  }
  ctx.stdout.write(renderSession(detail, sharing, shown.expired));
  return 0;
}

export function sharingText(mode: SharingMode, recipients: readonly string[] | undefined, owned: boolean): string {
  if (!owned) return mode === 'private' ? 'private' : 'shared with you';
  if (mode === 'selected') {
    const names = recipients ?? [];
    const more = names.length > SHOWN_RECIPIENTS ? ` and ${names.length - SHOWN_RECIPIENTS} more` : '';
    return `selected: ${names.slice(0, SHOWN_RECIPIENTS).join(', ') || '(nobody)'}${more}`;
  }
  return mode === 'workspace' ? 'workspace (everyone on this Control API)' : 'private (only you)';
}

function renderSession(detail: SessionDetail, sharing: Sharing, expired: boolean): string {
  const s = detail.session;
  const owned = sharing.can_edit;
  const uploads = detail.artifacts;
  const statuses = [...new Set(uploads.map((a) => a.status))]
    .map((st) => `${uploads.filter((a) => a.status === st).length} ${st}`)
    .join(', ');
  const fields: [string, string | null | undefined][] = [
    ['id', s.id],
    ['harness', s.harness],
    ['profile', s.compatibility_profile],
    ['native id', s.native_session_id],
    ['owner', owned ? `you (${s.user_email})` : s.user_email],
    ['status', `${s.status ?? 'no completed upload'}${s.resumable ? ', resumable' : ''}`],
    [
      'size',
      s.size_bytes === null ? null : `${formatBytes(s.size_bytes)}${s.sha256 === null ? '' : `, sha256 ${s.sha256}`}`,
    ],
    ['uploads', uploads.length === 0 ? null : `${uploads.length} (${statuses})`],
    ['cwd', s.cwd],
    [
      'repository',
      s.repository.root === null
        ? null
        : `${s.repository.root}${s.repository.remote === null ? '' : ` (${s.repository.remote})`}`,
    ],
    ['captured', s.source_captured_at],
    ['updated', s.updated_at],
    [
      'retention',
      s.retention_expires_at === null ? null : `${expired ? 'expired' : 'kept until'} ${s.retention_expires_at}`,
    ],
    [
      'sharing',
      sharingText(
        s.sharing_mode,
        sharing.recipients.map((r) => r.email || r.id),
        owned,
      ),
    ],
    ['summary', s.summary],
  ];
  const width = Math.max(...fields.map(([k]) => k.length));
  let out = `${sessionLabel(s)}\n`;
  for (const [key, value] of fields)
    if (value !== null && value !== undefined && value !== '') out += `  ${key.padEnd(width)}  ${printable(value)}\n`;
  return out;
}
