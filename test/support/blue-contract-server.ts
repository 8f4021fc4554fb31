/**
 * A loopback stand-in for Blue's own reference Control API, answering exactly the shapes of Blue's service contract
 * (docs/contract.md; research on its server's behaviour) and nothing of this project's extensions: no ETag, no
 * `code` in errors (`{"error": "<message>"}` only), no `sha256`/`artifact_id` in listings, no `method`/`headers`/digest
 * in download answers, `id_prefix` ignored, a relative complete_url, and a storage service on another origin that
 * presigns `content-type` + `x-amz-meta-sha256`. It enforces what Blue's server enforces of a client (contract
 * version and capabilities → 426 with X-Blue-Required-Client-Version, bodies it would refuse), and every request and
 * answer is also held to Blue's published schemas (fixtures/contract/blue-0.2.0, via contract.ts): what does not
 * match is collected in `problems`, which a test expects empty. The bearer token reaching the storage origin is a
 * problem too.
 */
import { createHash, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { blueContractProblems, blueValidator } from './contract.js';

export interface BlueUser {
  id: string;
  email: string;
  role: 'admin' | 'member';
  token: string;
}

interface Artifact {
  id: string;
  session: string;
  sha256: string;
  size: number;
  contentType: string;
  status: 'pending' | 'complete' | 'superseded' | 'failed';
  createdAt: number;
  completedAt: number | null;
  retentionAt: number | null;
  /** What the storage service holds for it. */
  blob?: { bytes: Buffer; sha256Meta: string | undefined };
}

interface Session {
  id: string;
  owner: BlueUser;
  harness: string;
  profile: string;
  nativeId: string;
  cwd: string | null;
  format: string;
  resumable: boolean;
  title: string | null;
  summary: string | null;
  capturedAt: number | null;
  repositoryRoot: string | null;
  repositoryRemote: string | null;
  sharing: 'private' | 'workspace' | 'selected';
  grants: Set<string>;
  current: string | null;
  updatedAt: number;
}

export interface SeenRequest {
  origin: 'control' | 'storage';
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingMessage['headers'];
  body: string;
  raw: Buffer;
  status?: number;
}

export interface BlueContractServer {
  /** The Control API's base URL. */
  url: string;
  /** The storage service's origin (signed URLs point here). */
  storageUrl: string;
  alice: BlueUser;
  bob: BlueUser;
  carol: BlueUser;
  admin: BlueUser;
  clock: { now(): number; advance(ms: number): void };
  requests: SeenRequest[];
  /** Everything that broke Blue's contract, in either direction. Expected empty. */
  problems: string[];
  /** Bodies of POST /client-status, in order. */
  statuses: Record<string, unknown>[];
  /** The current GovernanceConfig as served. */
  governance(): Record<string, unknown>;
  /** Publishes a new revision: the base document with `over` on top; returns its revision id. */
  publish(over?: Record<string, unknown>): string;
  close(): Promise<void>;
}

/** The harness keys of Blue's compiled registry (its presign refuses any other). */
const BLUE_HARNESSES = new Set(['codex', 'claude', 'kimi', 'opencode']);
const RETENTION_MS = 30 * 86_400_000;
const PRESIGN_TTL_S = 300;

class Answer extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(`HTTP ${status}`);
  }
}

const fail = (status: number, message: string, headers: Record<string, string> = {}) =>
  new Answer(status, { error: message }, headers);
const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export async function startBlueContractServer(options: { clientVersion: string }): Promise<BlueContractServer> {
  // The real time (the agent judges retention by its own clock), movable forward.
  let offset = 0;
  const clock = { now: () => Date.now() + offset, advance: (ms: number) => void (offset += ms) };
  const org = randomUUID();
  const user = (name: string, role: BlueUser['role'] = 'member'): BlueUser => ({
    id: randomUUID(),
    email: `${name}@example.com`,
    role,
    token: `blue_${name}_${randomUUID()}`,
  });
  const users = { alice: user('alice'), bob: user('bob'), carol: user('carol'), admin: user('admin', 'admin') };
  const everyone = Object.values(users);
  const sessions = new Map<string, Session>();
  const artifacts = new Map<string, Artifact>();
  const requests: SeenRequest[] = [];
  const problems: string[] = [];
  const statuses: Record<string, unknown>[] = [];

  let control!: Server;
  let storage!: Server;
  let url = '';
  let storageUrl = '';

  // -- governance ---------------------------------------------------------------------------------------------------

  const base = (): Record<string, unknown> => ({
    contract_version: 3,
    required_capabilities: [
      'adapter_intervals',
      'compiled_harness_registry',
      'transactional_reconcile',
      'versioned_state',
      'tenant_client_version_pin',
    ],
    minimum_client_version: options.clientVersion,
    required_client_version: options.clientVersion,
    ttl_seconds: 300,
    required: false,
    allowed_harnesses: ['codex', 'claude', 'kimi', 'opencode'],
    harnesses: {
      claude: {
        version_requirement: '>=2.0.12 <3',
        managed_config: { model: 'claude-sonnet', approval_policy: 'on-request', auto_approve: false },
        mcp: [{ name: 'docs', command: 'docs-mcp', args: ['--stdio'], env: { DOCS_TOKEN: 'from-vault' } }],
        package_overrides: { 'team-skills': { enabled: true, settings: { level: 2 } } },
      },
      codex: { managed_config: { sandbox_mode: 'workspace-write', reasoning_effort: 'high' } },
    },
    packages: [
      {
        id: 'team-skills',
        name: 'Team skills',
        version: '1.2.0',
        source_ref: 'https://packages.example.com/team-skills-1.2.0.tar.gz',
        sha256: 'c'.repeat(64),
        settings: { level: 1 },
        adapters: { claude: { plugin_dir: 'plugin', introduced: '2.0.0' } },
      },
    ],
    gateway: { type: 'proxy', proxy_url: 'https://gateway.example.com/v1', auth_style: 'bearer' },
    session_upload: { presign_url: `${url}/session-uploads/presign` },
    telemetry: { sink_url: 'https://telemetry.example.com/ingest' },
  });
  let governance: Record<string, unknown> = {};
  const publish = (over: Record<string, unknown> = {}): string => {
    const revision = randomUUID();
    governance = { ...base(), ...over, revision };
    return revision;
  };

  /** Blue's enforce_client_capabilities: before anything else of GET /governance-config. */
  function governanceAnswer(req: SeenRequest): Answer {
    const pin: Record<string, string> =
      typeof governance.required_client_version === 'string'
        ? { 'x-blue-required-client-version': governance.required_client_version }
        : {};
    const claimed = Number.parseInt(String(req.headers['x-blue-contract-version'] ?? ''), 10);
    const contract = Number.isNaN(claimed) ? 1 : claimed;
    const needed = typeof governance.contract_version === 'number' ? governance.contract_version : 1;
    if (contract < needed)
      throw fail(426, `governance contract ${needed} requires a newer client; client reports ${contract}`, pin);
    const capabilities = new Set(
      String(req.headers['x-blue-capabilities'] ?? '')
        .split(',')
        .map((c) => c.trim())
        .filter((c) => c !== ''),
    );
    const missing = ((governance.required_capabilities as string[] | undefined) ?? []).filter(
      (c) => !capabilities.has(c),
    );
    if (missing.length > 0)
      throw fail(426, `governance requires unsupported client capabilities: ${missing.join(', ')}`, pin);
    return new Answer(200, governance, pin);
  }

  const harnessMetadata = {
    contract_version: 3,
    harnesses: [
      {
        key: 'claude',
        aliases: ['claude-code'],
        label: 'Claude',
        description: 'Claude Code settings',
        binary_names: ['claude'],
        install_command_template: "npm install -g '@anthropic-ai/claude-code@{version}'",
        capabilities: ['hooks', 'mcp', 'session_resume', 'session_start', 'session_upload'],
        component_rules: { agents_require_plugin: false, hooks_require_plugin: false, hooks_as_plugin_modules: false },
        generations: [
          {
            profile: 'claude-v2_0_12',
            introduced: '2.0.12',
            before: null,
            verified_before: '2.1.253-0',
            lifecycle: 'supported',
            capabilities: ['mcp', 'hooks', 'session_upload', 'session_start', 'session_resume'],
            component_rules: {
              agents_require_plugin: false,
              hooks_require_plugin: false,
              hooks_as_plugin_modules: false,
            },
          },
        ],
      },
    ],
  };

  // -- sessions -----------------------------------------------------------------------------------------------------

  const mayView = (who: BlueUser, s: Session) =>
    who.role === 'admin' || s.owner.id === who.id || s.sharing === 'workspace' || s.grants.has(who.id);
  const recipients = (s: Session) =>
    (s.sharing === 'workspace'
      ? everyone.filter((u) => u.id !== s.owner.id)
      : s.sharing === 'selected'
        ? everyone.filter((u) => s.grants.has(u.id))
        : []
    ).sort((a, b) => a.email.localeCompare(b.email));

  /** Blue's session_json + share_recipient_count: contract fields only. */
  function sessionJson(s: Session): Record<string, unknown> {
    const a = s.current === null ? undefined : artifacts.get(s.current);
    return {
      id: s.id,
      user_id: s.owner.id,
      user_email: s.owner.email,
      harness: s.harness,
      compatibility_profile: s.profile,
      native_session_id: s.nativeId,
      cwd: s.cwd,
      artifact_format: s.format,
      resumable: s.resumable,
      title: s.title,
      summary: s.summary,
      source_captured_at: iso(s.capturedAt),
      repository: { root: s.repositoryRoot, remote: s.repositoryRemote },
      sharing_mode: s.sharing,
      updated_at: iso(s.updatedAt),
      status: a?.status ?? null,
      size_bytes: a?.size ?? null,
      content_type: a?.contentType ?? null,
      retention_expires_at: iso(a?.retentionAt ?? null),
      share_recipient_count: recipients(s).length,
    };
  }

  const newestFirst = (a: Session, b: Session) => b.updatedAt - a.updatedAt || (b.id < a.id ? -1 : 1);

  function list(who: BlueUser, q: URLSearchParams): Record<string, unknown> {
    const harness = q.get('harness');
    const text = q.get('q')?.trim().toLowerCase();
    const matches = (s: Session) =>
      s.current !== null &&
      (harness === null || s.harness === harness) &&
      (text === undefined ||
        text === '' ||
        [s.nativeId, s.cwd ?? '', s.title ?? '', s.summary ?? ''].some((v) => v.toLowerCase().includes(text)));
    const cursorPage = (all: Session[], extra: (s: Session) => Record<string, unknown>) => {
      const limit = Math.min(100, Math.max(1, Number(q.get('limit') ?? 50)));
      const cursor = q.get('cursor');
      const from = cursor === null ? 0 : all.findIndex((s) => s.id === cursor) + 1;
      if (cursor !== null && from === 0) return { items: [], next_cursor: null };
      const page = all.slice(from, from + limit);
      return {
        items: page.map((s) => ({ ...sessionJson(s), ...extra(s) })),
        next_cursor: from + limit < all.length ? page.at(-1)!.id : null,
      };
    };
    if (q.get('resumable') === 'true') {
      // The picker: owned, workspace-shared or granted only (administrators too), resumable and complete.
      const all = [...sessions.values()]
        .filter(
          (s) =>
            matches(s) &&
            s.resumable &&
            artifacts.get(s.current!)?.status === 'complete' &&
            (s.owner.id === who.id || s.sharing === 'workspace' || s.grants.has(who.id)),
        )
        .sort(newestFirst);
      return cursorPage(all, (s) => ({ shared: s.owner.id !== who.id }));
    }
    const visible = [...sessions.values()].filter((s) => matches(s) && mayView(who, s)).sort(newestFirst);
    const numbered = ['page', 'per_page', 'q', 'updated_from', 'updated_to', 'sort'].some((k) => q.has(k));
    if (numbered) {
      if (q.has('cursor') || q.has('limit')) throw fail(400, 'page/per_page cannot be combined with cursor/limit');
      const page = Number(q.get('page') ?? 1);
      const perPage = Number(q.get('per_page') ?? 25);
      if (!(page >= 1) || !(perPage >= 1 && perPage <= 100)) throw fail(400, 'per_page must be between 1 and 100');
      const total = visible.length;
      return {
        items: visible.slice((page - 1) * perPage, page * perPage).map(sessionJson),
        page,
        per_page: perPage,
        total,
        total_pages: total === 0 ? 0 : Math.ceil(total / perPage),
      };
    }
    return cursorPage(visible, () => ({}));
  }

  function session(who: BlueUser, id: string, forWrite = false): Session {
    const s = sessions.get(id);
    if (s === undefined) throw fail(404, 'captured session not found');
    if (!forWrite && !mayView(who, s)) throw fail(403, 'session access denied');
    return s;
  }

  function presign(who: BlueUser, body: Record<string, unknown>): Record<string, unknown> {
    const harness = String(body.harness);
    if (!BLUE_HARNESSES.has(harness)) throw fail(400, 'unknown harness');
    const sha = String(body.sha256);
    const size = Number(body.size_bytes);
    if (!/^[0-9a-fA-F]{64}$/.test(sha) || !(size >= 0 && size <= 128 * 1024 * 1024))
      throw fail(400, 'invalid size or sha256');
    const format = (body.artifact_format as string | undefined) ?? 'legacy-raw';
    const profile = (body.compatibility_profile as string | undefined) ?? 'legacy';
    if (body.resumable === true && (format !== 'blue-session-bundle-v1' || profile === 'legacy'))
      throw fail(400, 'resumable uploads require a supported bundle format and compatibility profile');
    const key = `${who.id}\u0000${harness}\u0000${profile}\u0000${String(body.session_id)}`;
    let s = [...sessions.values()].find(
      (x) => `${x.owner.id}\u0000${x.harness}\u0000${x.profile}\u0000${x.nativeId}` === key,
    );
    const fields = {
      cwd: (body.cwd as string | null | undefined) ?? null,
      format,
      resumable: body.resumable === true,
      title: (body.title as string | null | undefined) ?? null,
      summary: (body.summary as string | null | undefined) ?? null,
      capturedAt:
        typeof body.captured_at_unix_ms === 'number' && body.captured_at_unix_ms > 0 ? body.captured_at_unix_ms : null,
      repositoryRoot: (body.repository_root as string | null | undefined) ?? null,
      repositoryRemote: (body.repository_remote as string | null | undefined) ?? null,
      updatedAt: clock.now(),
    };
    if (s === undefined) {
      s = {
        id: randomUUID(),
        owner: who,
        harness,
        profile,
        nativeId: String(body.session_id),
        sharing: 'private',
        grants: new Set(),
        current: null,
        ...fields,
      };
      sessions.set(s.id, s);
    } else Object.assign(s, fields);
    const existing = [...artifacts.values()].find((a) => a.session === s.id && a.sha256 === sha);
    if (existing?.status === 'complete')
      return {
        upload_id: existing.id,
        status: 'complete',
        upload_url: null,
        method: null,
        headers: {},
        complete_url: null,
      };
    const artifact: Artifact = existing ?? {
      id: randomUUID(),
      session: s.id,
      sha256: sha,
      size,
      contentType: String(body.content_type),
      status: 'pending',
      createdAt: clock.now(),
      completedAt: null,
      retentionAt: null,
    };
    Object.assign(artifact, { status: 'pending', size, contentType: String(body.content_type) });
    artifacts.set(artifact.id, artifact);
    return {
      upload_id: artifact.id,
      status: 'pending',
      upload_url: `${storageUrl}/bucket/${artifact.id}?X-Amz-Signature=${randomUUID()}`,
      method: 'PUT',
      headers: { 'content-type': artifact.contentType, 'x-amz-meta-sha256': sha },
      complete_url: `/session-uploads/${artifact.id}/complete`,
    };
  }

  function complete(who: BlueUser, id: string): Record<string, unknown> {
    const a = artifacts.get(id);
    if (a === undefined) throw fail(404, 'upload not found');
    const s = sessions.get(a.session)!;
    if (who.role !== 'admin' && s.owner.id !== who.id) throw fail(403, 'session access denied');
    if (a.status === 'complete') return { id, status: 'complete' };
    if (a.blob === undefined) throw fail(400, 'uploaded blob not found: NoSuchKey');
    if (a.blob.bytes.length !== a.size || a.blob.sha256Meta !== a.sha256) {
      a.status = 'failed';
      throw fail(400, 'uploaded blob size or checksum does not match');
    }
    for (const other of artifacts.values())
      if (other.session === s.id && other.status === 'complete') other.status = 'superseded';
    Object.assign(a, { status: 'complete', completedAt: clock.now(), retentionAt: clock.now() + RETENTION_MS });
    s.current = a.id;
    s.updatedAt = clock.now();
    return { id, status: 'complete' };
  }

  function download(who: BlueUser, id: string): Record<string, unknown> {
    const s = sessions.get(id);
    const a = s?.current === null || s === undefined ? undefined : artifacts.get(s.current);
    if (s === undefined || a?.status !== 'complete') throw fail(404, 'completed session artifact not found');
    if (!mayView(who, s)) throw fail(403, 'session access denied');
    if (a.retentionAt !== null && a.retentionAt <= clock.now()) throw fail(410, 'session artifact has expired');
    return {
      download_url: `${storageUrl}/bucket/${a.id}?X-Amz-Signature=${randomUUID()}`,
      expires_in_seconds: PRESIGN_TTL_S,
    };
  }

  function sharingState(who: BlueUser, id: string): Record<string, unknown> {
    const s = session(who, id);
    const r = recipients(s);
    return {
      mode: s.sharing,
      can_edit: s.owner.id === who.id,
      recipient_count: r.length,
      recipients: r.map((u) => ({ id: u.id, email: u.email })),
    };
  }

  function updateSharing(who: BlueUser, id: string, raw: string): Record<string, unknown> {
    // Blue's SessionSharingInput is deny_unknown_fields: an axum rejection, in plain text.
    let body: Record<string, unknown>;
    try {
      body = JSON.parse(raw) as Record<string, unknown>;
    } catch {
      throw new Answer(400, 'Failed to parse the request body as JSON');
    }
    const unknown = Object.keys(body).filter((k) => k !== 'mode' && k !== 'user_ids');
    if (unknown.length > 0)
      throw new Answer(
        422,
        `Failed to deserialize the JSON body into the target type: unknown field \`${unknown[0]}\``,
      );
    const mode = body.mode;
    const ids = (body.user_ids as string[] | undefined) ?? [];
    if (mode !== 'private' && mode !== 'workspace' && mode !== 'selected')
      throw fail(400, 'sharing mode must be private, workspace, or selected');
    if (mode !== 'selected' && ids.length > 0) throw fail(400, 'user_ids are only valid for selected sharing');
    const s = session(who, id, true);
    if (s.owner.id !== who.id) throw fail(403, 'only the session owner may change sharing');
    const unique = [...new Set(ids)].filter((u) => u !== s.owner.id).sort();
    if (mode === 'selected' && unique.length === 0) throw fail(400, 'selected sharing requires at least one recipient');
    if (unique.some((u) => !everyone.some((e) => e.id === u)))
      throw fail(400, 'all recipients must be active workspace members');
    s.sharing = mode;
    s.grants = new Set(mode === 'selected' ? unique : []);
    return { id: s.id, mode, user_ids: mode === 'selected' ? unique : [] };
  }

  function detail(who: BlueUser, id: string): Record<string, unknown> {
    const s = session(who, id);
    const list = [...artifacts.values()].filter((a) => a.session === s.id).sort((a, b) => b.createdAt - a.createdAt);
    return {
      session: sessionJson(s),
      sharing: { user_ids: [...s.grants].sort() },
      artifacts: list.map((a) => ({
        id: a.id,
        sha256: a.sha256,
        size_bytes: a.size,
        content_type: a.contentType,
        status: a.status,
        created_at: iso(a.createdAt),
        completed_at: iso(a.completedAt),
        retention_expires_at: iso(a.retentionAt),
      })),
    };
  }

  // -- HTTP ---------------------------------------------------------------------------------------------------------

  /** The request body against the contract's request schema, and the fields Blue's server would refuse. */
  function checkRequest(operation: string, schema: string | { inline: unknown }, body: unknown): void {
    const validate = blueValidator(schema);
    if (validate !== undefined && !validate(body))
      problems.push(
        `${operation} request: ${validate.errors?.[0]?.instancePath || '/'} ` +
          `${validate.errors?.[0]?.message ?? 'is invalid'}`,
      );
  }

  function route(req: SeenRequest, who: BlueUser): Answer {
    const { method, path: p, query } = req;
    const json = () => {
      try {
        return JSON.parse(req.body === '' ? 'null' : req.body) as Record<string, unknown>;
      } catch {
        throw new Answer(400, 'Failed to parse the request body as JSON');
      }
    };
    const id = /^\/session-uploads\/([0-9a-f-]{36})(\/[a-z]+)?$/.exec(p);
    if (method === 'GET' && p === '/auth/me') {
      return new Answer(200, {
        id: who.id,
        sub: `idp|${who.id}`,
        email: who.email,
        org_id: org,
        role: who.role,
        expires_at: Math.floor(clock.now() / 1000) + 3600,
        current_revision: governance.revision,
      });
    }
    if (method === 'GET' && p === '/governance-config') return governanceAnswer(req);
    if (method === 'GET' && p === '/harness-metadata') return new Answer(200, harnessMetadata);
    if (method === 'POST' && p === '/client-status') {
      const body = json();
      checkRequest('reportClientStatus', 'ClientStatusReport.json', body);
      if (
        typeof body?.instance_id !== 'string' ||
        body.instance_id.trim() === '' ||
        typeof body.client_version !== 'string' ||
        body.client_version.trim() === ''
      ) {
        throw fail(400, 'instance_id and client_version are required');
      }
      const attempt = body.reconciliation_attempt as { harness?: string; revision?: string } | null | undefined;
      if (
        attempt !== undefined &&
        attempt !== null &&
        (!attempt.harness || !attempt.revision || typeof body.error !== 'string' || body.error.trim() === '')
      ) {
        throw fail(400, 'reconciliation_attempt requires harness, revision, and a non-empty error');
      }
      statuses.push(body);
      return new Answer(204, undefined);
    }
    if (method === 'POST' && p === '/session-uploads/presign') {
      const body = json();
      checkRequest('presignSessionUpload', 'SessionUploadPresignRequest.json', body);
      return new Answer(200, presign(who, body));
    }
    if (method === 'GET' && p === '/session-uploads') return new Answer(200, list(who, query));
    if (method === 'GET' && p === '/session-uploads/members') {
      const q = query.get('q')?.trim().toLowerCase() ?? '';
      if (q.length > 200) throw fail(400, 'q must be 200 characters or fewer');
      const items = everyone
        .filter((u) => u.id !== who.id && u.email.toLowerCase().includes(q))
        .sort((a, b) => a.email.localeCompare(b.email))
        .slice(0, 10);
      return new Answer(200, { items: items.map((u) => ({ id: u.id, email: u.email })) });
    }
    if (id !== null) {
      const [, target, tail] = id;
      if (method === 'GET' && tail === undefined) return new Answer(200, detail(who, target!));
      if (method === 'POST' && tail === '/complete') return new Answer(200, complete(who, target!));
      if (method === 'POST' && tail === '/download') return new Answer(200, download(who, target!));
      if (method === 'GET' && tail === '/sharing') return new Answer(200, sharingState(who, target!));
      if (method === 'PUT' && tail === '/sharing') {
        checkRequest(
          'updateSessionSharing',
          {
            inline: {
              type: 'object',
              required: ['mode'],
              additionalProperties: false,
              properties: {
                mode: { type: 'string' },
                user_ids: { type: 'array', items: { type: 'string', format: 'uuid' } },
              },
            },
          },
          json(),
        );
        return new Answer(200, updateSharing(who, target!, req.body));
      }
    }
    // An unknown route: axum's empty 404.
    return new Answer(404, undefined);
  }

  function send(res: ServerResponse, req: SeenRequest, answer: Answer): void {
    req.status = answer.status;
    const headers: Record<string, string> = { ...answer.headers };
    let text = '';
    if (typeof answer.body === 'string') {
      headers['content-type'] = 'text/plain; charset=utf-8';
      text = answer.body;
    } else if (answer.body !== undefined) {
      headers['content-type'] = 'application/json';
      text = JSON.stringify(answer.body);
      if (req.origin === 'control') {
        for (const problem of blueContractProblems(
          req.method,
          req.path,
          answer.status,
          answer.body,
          headers['content-type'],
        ))
          problems.push(`answer: ${problem}`);
      }
    }
    res.writeHead(answer.status, headers).end(text);
  }

  function serve(origin: SeenRequest['origin'], handler: (req: SeenRequest, res: ServerResponse) => void): Server {
    return createServer((raw, res) => {
      const chunks: Buffer[] = [];
      raw.on('data', (c: Buffer) => chunks.push(c));
      raw.on('end', () => {
        const at = new URL(raw.url ?? '/', 'http://x');
        const body = Buffer.concat(chunks);
        const req: SeenRequest = {
          origin,
          method: raw.method ?? '',
          path: at.pathname,
          query: at.searchParams,
          headers: raw.headers,
          body: body.toString('utf8'),
          raw: body,
        };
        requests.push(req);
        handler(req, res);
      });
    });
  }

  control = serve('control', (req, res) => {
    try {
      const auth = req.headers.authorization;
      const who = everyone.find((u) => auth === `Bearer ${u.token}`);
      if (who === undefined) throw fail(401, 'invalid or expired session');
      send(res, req, route(req, who));
    } catch (error) {
      if (error instanceof Answer) send(res, req, error);
      else send(res, req, fail(500, `database operation failed: ${String(error)}`));
    }
  });

  storage = serve('storage', (req, res) => {
    const bytes = req.raw;
    if (req.headers.authorization !== undefined || everyone.some((u) => JSON.stringify(req.headers).includes(u.token)))
      problems.push(`the bearer token reached the storage service (${req.method} ${req.path})`);
    const a = artifacts.get(/^\/bucket\/([0-9a-f-]{36})$/.exec(req.path)?.[1] ?? '');
    if (a === undefined || !req.query.has('X-Amz-Signature')) {
      res.writeHead(403, { 'content-type': 'application/xml' }).end('<Error><Code>AccessDenied</Code></Error>');
      return;
    }
    if (req.method === 'PUT') {
      if (req.headers['content-type'] !== a.contentType) {
        res
          .writeHead(403, { 'content-type': 'application/xml' })
          .end('<Error><Code>SignatureDoesNotMatch</Code></Error>');
        return;
      }
      const meta = req.headers['x-amz-meta-sha256'];
      a.blob = { bytes, sha256Meta: typeof meta === 'string' ? meta : undefined };
      res.writeHead(200, { etag: `"${createHash('md5').update(bytes).digest('hex')}"` }).end();
      return;
    }
    if (req.method === 'GET' && a.blob !== undefined) {
      res.writeHead(200, { 'content-type': a.contentType, 'content-length': a.blob.bytes.length }).end(a.blob.bytes);
      return;
    }
    res.writeHead(404, { 'content-type': 'application/xml' }).end('<Error><Code>NoSuchKey</Code></Error>');
  });

  await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
  await new Promise<void>((resolve) => storage.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(control.address() as AddressInfo).port}`;
  storageUrl = `http://127.0.0.1:${(storage.address() as AddressInfo).port}`;
  publish();

  const close = (server: Server) =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return {
    url,
    storageUrl,
    ...users,
    clock,
    requests,
    problems,
    statuses,
    governance: () => governance,
    publish,
    close: async () => {
      await Promise.all([close(control), close(storage)]);
    },
  };
}
