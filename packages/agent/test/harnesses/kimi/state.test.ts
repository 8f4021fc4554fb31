/**
 * Kimi Code's state.json: the allow-list for both schemas (what resume needs is kept; plugin data, agent labels and
 * keys a later version adds are dropped), and the state relocated for a restore in another folder.
 */
import { describe, expect, it } from 'vitest';
import {
  encodeState,
  relocatedState,
  sanitizeKimiCodeState,
  stateDirectory,
} from '../../../src/harnesses/kimi/state.js';

const V2 = {
  id: 'session_1',
  version: 2,
  cwd: '/src/proj',
  createdAt: 1796184211813,
  updatedAt: 1796184212099,
  archived: false,
  title: 'Fix it',
  titleKind: 'replaceable',
  isCustomTitle: false,
  lastPrompt: 'Fix it',
  lastTurnReason: 'completed',
  forkedFrom: 'session_0',
  custom: { plugin: { token: 'secret' } },
  apiKey: 'sk-later-version',
  agents: {
    main: { homedir: '/home/a/.kimi-code/sessions/wd_proj_0/session_1/agents/main', type: 'main', labels: { x: 'y' } },
    'agent-0': {
      homedir: '/home/a/.kimi-code/sessions/wd_proj_0/session_1/agents/agent-0',
      type: 'sub',
      parentAgentId: 'main',
      swarmItem: { a: 1 },
    },
    '../evil': { homedir: '/etc', type: 'sub' },
    odd: 'not an object',
  },
};

describe('Kimi Code state.json allow-list', () => {
  it('keeps what resume needs of a version 2 state, and drops custom data, labels, unknown keys and odd agents', () => {
    expect(sanitizeKimiCodeState(V2)).toEqual({
      id: 'session_1',
      version: 2,
      cwd: '/src/proj',
      createdAt: 1796184211813,
      updatedAt: 1796184212099,
      archived: false,
      title: 'Fix it',
      titleKind: 'replaceable',
      isCustomTitle: false,
      lastPrompt: 'Fix it',
      lastTurnReason: 'completed',
      forkedFrom: 'session_0',
      agents: {
        main: { homedir: V2.agents.main.homedir, type: 'main' },
        'agent-0': { homedir: V2.agents['agent-0'].homedir, type: 'sub', parentAgentId: 'main' },
      },
    });
  });

  it('keeps a version 1 state by its own keys (workDir, not cwd), and values that are not scalars go', () => {
    const v1 = {
      createdAt: '2026-12-02T03:00:00Z',
      updatedAt: '2026-12-02T03:01:00Z',
      title: 't',
      isCustomTitle: false,
      lastPrompt: 'p',
      workDir: '/src/proj',
      cwd: '/not/v1',
      id: 'x',
      custom: {},
      agents: { main: { homedir: '/h', type: 'main', parentAgentId: null } },
    };
    expect(sanitizeKimiCodeState(v1)).toEqual({
      createdAt: v1.createdAt,
      updatedAt: v1.updatedAt,
      title: 't',
      isCustomTitle: false,
      lastPrompt: 'p',
      workDir: '/src/proj',
      agents: { main: { homedir: '/h', type: 'main', parentAgentId: null } },
    });
    expect(sanitizeKimiCodeState({ version: 2, title: { nested: true }, cwd: ['/a'], agents: [] })).toEqual({
      version: 2,
    });
    for (const junk of [null, 'state', 5, []]) expect(sanitizeKimiCodeState(junk)).toEqual({});
  });

  it('relocates the directory and each agent home (Kimi Code fixes only the main one), and names the directory', () => {
    const state = sanitizeKimiCodeState(V2);
    expect(stateDirectory(state)).toBe('/src/proj');
    const moved = relocatedState(state, '/dest', '/home/b/.kimi-code/sessions/wd_dest_1/session_1');
    expect(moved.cwd).toBe('/dest');
    expect(moved.agents).toEqual({
      main: { homedir: '/home/b/.kimi-code/sessions/wd_dest_1/session_1/agents/main', type: 'main' },
      'agent-0': {
        homedir: '/home/b/.kimi-code/sessions/wd_dest_1/session_1/agents/agent-0',
        type: 'sub',
        parentAgentId: 'main',
      },
    });
    expect(state.cwd).toBe('/src/proj');

    expect(relocatedState({ workDir: '/a', agents: { main: { type: 'main' } } }, '/d', '/s')).toEqual({
      workDir: '/d',
      agents: { main: { type: 'main' } },
    });
    // Before 0.25, a version 1 state has no workDir, and gets none.
    expect(relocatedState({ title: 't' }, '/d', '/s')).toEqual({ title: 't' });
    expect(stateDirectory({ title: 't' })).toBeUndefined();
  });

  it('is written as Kimi Code reads it: JSON, one final line break', () => {
    expect(encodeState({ id: 'x', version: 2 }).toString()).toBe('{\n  "id": "x",\n  "version": 2\n}\n');
  });
});
