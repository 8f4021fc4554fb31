/**
 * Kimi Code's `state.json`, by an allow-list written for its two schemas:
 *   - version 2 (0.33 and later; `sessionMetaSchema`): `{id, version: 2, cwd, createdAt, updatedAt (epoch ms), title,
 *     titleKind, isCustomTitle, lastPrompt, archived, archivedAt, forkedFrom, lastTurnReason, agents, custom}`;
 *   - version 1 (0.10 to 0.32): `{createdAt, updatedAt (ISO), title, isCustomTitle, agents, custom, lastPrompt,
 *     workDir (0.25 and later)}`.
 * Kept: what resume needs to continue the session as it was (its identity, its directory, its agents and their
 * relations, its title and last prompt, times, archive and fork state). Dropped: `custom` (free-form data of plugins
 * and tools of this machine), agent `labels` and `swarmItem`, and any key a later Kimi Code adds, which might hold
 * credentials or this machine's state. Kimi Code keeps no approvals, tasks or cron jobs in this file (they are wire
 * records and folders of their own, which capture leaves out). Kimi Code fills what is missing with its defaults.
 *
 * A restore into another folder sets the directory (`cwd`, or `workDir`) to the destination and every agent's
 * `homedir` to its folder under the restored session: Kimi Code refuses a session recorded in another directory, and
 * does not fix a subagent's home itself.
 */
import { isRecord } from '@blue-agent/contract/util/record.js';

const V2_KEYS = [
  'id',
  'version',
  'cwd',
  'title',
  'titleKind',
  'isCustomTitle',
  'lastPrompt',
  'createdAt',
  'updatedAt',
  'archived',
  'archivedAt',
  'forkedFrom',
  'lastTurnReason',
] as const;
const V1_KEYS = ['createdAt', 'updatedAt', 'title', 'isCustomTitle', 'lastPrompt', 'workDir'] as const;
const AGENT_KEYS = ['homedir', 'type', 'parentAgentId', 'forkedFrom'] as const;
/** Agent ids as Kimi Code names them (`main`, `agent-0`, ...): they become folder names. */
export const AGENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const scalar = (v: unknown) => v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';

/** The allow-listed state (for either schema); `agents` keeps only well-named agents and their known keys. */
export function sanitizeKimiCodeState(state: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!isRecord(state)) return out;
  for (const key of state.version === 2 ? V2_KEYS : V1_KEYS) {
    if (Object.hasOwn(state, key) && scalar(state[key])) out[key] = state[key];
  }
  if (isRecord(state.agents)) {
    const agents: Record<string, unknown> = {};
    for (const [id, agent] of Object.entries(state.agents)) {
      if (!AGENT_ID.test(id) || !isRecord(agent)) continue;
      const kept: Record<string, unknown> = {};
      for (const key of AGENT_KEYS) if (Object.hasOwn(agent, key) && scalar(agent[key])) kept[key] = agent[key];
      agents[id] = kept;
    }
    out.agents = agents;
  }
  return out;
}

/** The directory a state records (`cwd` for version 2, `workDir` before). */
export function stateDirectory(state: Record<string, unknown>): string | undefined {
  const value = state.version === 2 ? state.cwd : state.workDir;
  return typeof value === 'string' ? value : undefined;
}

/**
 * The state for a session restored in `destination`, its folder being `sessionDir`: the directory set, each agent's
 * home set to `<sessionDir>/agents/<id>`. A version 1 state without `workDir` (before 0.25) stays without.
 */
export function relocatedState(
  state: Record<string, unknown>,
  destination: string,
  sessionDir: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = { ...state };
  if (state.version === 2) out.cwd = destination;
  else if (Object.hasOwn(state, 'workDir')) out.workDir = destination;
  if (isRecord(state.agents)) {
    out.agents = Object.fromEntries(
      Object.entries(state.agents).map(([id, agent]) => [
        id,
        isRecord(agent) && Object.hasOwn(agent, 'homedir')
          ? { ...agent, homedir: `${sessionDir}/agents/${id}` }
          : agent,
      ]),
    );
  }
  return out;
}

export function encodeState(state: Record<string, unknown>): Buffer {
  return Buffer.from(`${JSON.stringify(state, null, 2)}\n`, 'utf8');
}
