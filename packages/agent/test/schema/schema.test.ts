import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import { parsePolicyText } from '../../src/policy/index.js';
import {
  agentConfigSchema,
  authoredPolicySchema,
  loadDocument,
  policySchema,
  profileSchema,
} from '@blue-agent/contract/schema/index.js';
import { agentRoot, repoRoot } from '../../../../test/support/context.js';
import { HARNESSES } from '../../src/harnesses/names.js';

const run = promisify(execFile);

describe('generated types and validators', () => {
  it('are up to date with schemas/', async () => {
    const { stdout } = await run(process.execPath, ['scripts/gen-schema.mjs', '--check'], { cwd: repoRoot });
    expect(stdout).toContain('up to date');
  });

  it('the check fails when a schema changes without regenerating', async () => {
    const copy = await mkdtemp(path.join(tmpdir(), 'blue-agent-gen-'));
    try {
      for (const dir of [
        'packages/agent/profiles',
        'packages/contract/schemas',
        'scripts',
        'packages/contract/src/schema/generated',
      ])
        await cp(path.join(repoRoot, dir), path.join(copy, dir), { recursive: true });
      await symlink(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'));
      const file = path.join(copy, 'packages', 'contract', 'schemas', 'policy.schema.json');
      const schema = JSON.parse(await readFile(file, 'utf8'));
      schema.properties.ttl_seconds.description = 'Changed.';
      await writeFile(file, JSON.stringify(schema, null, 2));
      const result = await run(process.execPath, ['scripts/gen-schema.mjs', '--check'], { cwd: copy }).catch(
        (e: { code: number; stderr: string }) => e,
      );
      expect((result as { code: number }).code).toBe(1);
      expect((result as { stderr: string }).stderr).toContain('policy.ts');
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  }, 60_000);

  it('the harness-name and artifact-role enums follow the profile files: a new profile file makes the check fail ' +
    'until regenerated', async () => {
    const copy = await mkdtemp(path.join(tmpdir(), 'blue-agent-gen-'));
    try {
      for (const dir of [
        'packages/agent/profiles',
        'packages/contract/schemas',
        'scripts',
        'packages/contract/src/schema/generated',
      ])
        await cp(path.join(repoRoot, dir), path.join(copy, dir), { recursive: true });
      await symlink(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'));
      const kimi = await readFile(path.join(copy, 'packages', 'agent', 'profiles', 'kimi.yaml'), 'utf8');
      // A harness of its own brings a bundle role of its own.
      await writeFile(
        path.join(copy, 'packages', 'agent', 'profiles', 'zed.yaml'),
        kimi.replace(/^harness: kimi$/m, 'harness: zed').replace('role: kimi_state', 'role: zed_state'),
      );
      const result = await run(process.execPath, ['scripts/gen-schema.mjs', '--check'], { cwd: copy }).catch(
        (e: { code: number; stderr: string }) => e,
      );
      expect((result as { code: number }).code).toBe(1);
      expect((result as { stderr: string }).stderr).toContain('harness-name.schema.json');
      await run(process.execPath, ['scripts/gen-schema.mjs'], { cwd: copy });
      expect(
        JSON.parse(
          await readFile(path.join(copy, 'packages', 'contract', 'schemas', 'harness-name.schema.json'), 'utf8'),
        ).enum,
      ).toEqual([...HARNESSES, 'zed'].sort());
      expect(
        await readFile(
          path.join(copy, 'packages', 'contract', 'src', 'schema', 'generated', 'harness-names.ts'),
          'utf8',
        ),
      ).toContain(
        `[${[...HARNESSES, 'zed']
          .sort()
          .map((h) => `'${h}'`)
          .join(', ')}]`,
      );
      expect(
        await readFile(path.join(copy, 'packages', 'contract', 'src', 'schema', 'generated', 'validators.ts'), 'utf8'),
      ).toContain('"zed"');
      const roles = JSON.parse(
        await readFile(path.join(copy, 'packages', 'contract', 'schemas', 'artifact-role.schema.json'), 'utf8'),
      ).enum as string[];
      expect(roles).toContain('zed_state');
      expect(roles).toContain('kimi_state');
      expect(
        await readFile(path.join(copy, 'packages', 'contract', 'src', 'schema', 'generated', 'validators.ts'), 'utf8'),
      ).toContain('"zed_state"');
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('document validation', () => {
  const fail = (fn: () => unknown): BlueError => {
    try {
      fn();
    } catch (error) {
      if (error instanceof BlueError) return error;
      throw error;
    }
    throw new Error('expected a BlueError');
  };

  it('names file, JSON path, expectation, line and column for YAML', () => {
    const text = 'revision: 3\nharnesses:\n  claude:\n    version_requirement: 5\n';
    const error = fail(() => loadDocument(policySchema, text, 'policy.yaml'));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toBe(
      'policy.yaml:4:26: invalid policy: /harnesses/claude/version_requirement must be string',
    );
    expect([error.line, error.column, error.path]).toEqual([4, 26, '/harnesses/claude/version_requirement']);
  });

  it(
    "tolerates what the policy schema does not name (Blue's GovernanceConfig); session_upload under a harness is " +
      "the policy rules' to refuse",
    () => {
      const text =
        '{"revision": "r1", "packages": [], "harnesses": {"codex": {"managed_config": {"model": "m"}, ' +
        '"session_upload": {"presign_url": "https://x.example/p"}}}}';
      expect(loadDocument(policySchema, text, 'policy.json')).toMatchObject({ revision: 'r1' });
      expect(fail(() => parsePolicyText(text, 'policy.json', 'authored')).message).toContain(
        'session_upload is global',
      );
    },
  );

  it('reports YAML syntax errors with their position', () => {
    const error = fail(() => loadDocument(agentConfigSchema, 'control_url: "https://x\nother: [', 'config.yaml'));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.line).toBeGreaterThanOrEqual(1);
    expect(error.message).toMatch(/^config\.yaml:\d+:\d+: /);
  });

  it('rejects duplicate keys', () => {
    const error = fail(() => loadDocument(policySchema, 'revision: 1\nrevision: 2\n', 'p.yaml'));
    expect(error.message).toMatch(/^p\.yaml:2:1: .*twice/i);
  });

  it('accepts a valid policy', () => {
    const policy = loadDocument(
      policySchema,
      'revision: 4\nsession_upload: { presign_url: "https://c.example/session-uploads/presign" }\n',
      'p.yaml',
    );
    expect(policy.session_upload?.presign_url).toBe('https://c.example/session-uploads/presign');
  });
});

describe('unknown keys', () => {
  const fail = (fn: () => unknown): BlueError => {
    try {
      fn();
    } catch (error) {
      if (error instanceof BlueError) return error;
      throw error;
    }
    throw new Error('expected a BlueError');
  };
  const presign = 'https://control.example.com/session-uploads/presign';

  it('a policy someone writes: refused at every level, at the key itself, with the nearest known key', () => {
    const cases: [text: string, line: number, column: number, message: string][] = [
      [
        `revision: 1\nsesion_upload:\n  presign_url: ${presign}\n`,
        2,
        1,
        '/ has an unknown field "sesion_upload" (did you mean "session_upload"?)',
      ],
      [
        'revision: 1\nharnesses:\n  claude:\n    version_requirment: ">=2"\n',
        4,
        5,
        '/harnesses/claude has an unknown field "version_requirment" (did you mean "version_requirement"?)',
      ],
      [
        `revision: 1\nsession_upload:\n  presign_url: ${presign}\n  idle_capture_minute: 30\n`,
        4,
        3,
        '/session_upload has an unknown field "idle_capture_minute" (did you mean "idle_capture_minutes"?)',
      ],
      // The missing presign_url is explained by the key that was meant for it.
      [
        `revision: 1\nsession_upload:\n  presign_ur: ${presign}\n`,
        3,
        3,
        '/session_upload has an unknown field "presign_ur" (did you mean "presign_url"?)',
      ],
      [
        `revision: 1\nsession_upload:\n  presign_url: ${presign}\n  redact: secret\n`,
        4,
        11,
        '/session_upload/redact must be one of "none", "secrets" (did you mean "secrets"?)',
      ],
    ];
    for (const [text, line, column, message] of cases) {
      const error = fail(() => loadDocument(authoredPolicySchema, text, 'policy.yaml'));
      expect([error.code, error.line, error.column], text).toEqual(['POLICY_INVALID', line, column]);
      expect(error.message, text).toContain(`policy.yaml:${line}:${column}: invalid policy: ${message}`);
    }
    expect(
      fail(() =>
        loadDocument(authoredPolicySchema, `revision: 1\nsesion_upload:\n  presign_url: ${presign}\n`, 'policy.yaml'),
      ).hint,
    ).toBe('Rename "sesion_upload" to "session_upload" in policy.yaml.');
    // Far from every known key: no guess, the keys that are known instead.
    expect(fail(() => loadDocument(authoredPolicySchema, 'revision: 1\nnotes: hello\n', 'policy.yaml')).hint).toMatch(
      /^Remove "notes" from the top level in policy\.yaml; the keys there are revision, .*session_upload/,
    );
  });

  it('reports the problem that comes first in the text, and how many more there are', () => {
    const text =
      `revision: 1\nttl_second: 60\nharnesses:\n  claude: { version_requirment: ">=2" ` +
      `}\nsesion_upload:\n  presign_url: ${presign}\n`;
    const error = fail(() => loadDocument(authoredPolicySchema, text, 'policy.yaml'));
    expect(error.message).toBe(
      'policy.yaml:2:1: invalid policy: / has an unknown field "ttl_second" (did you mean "ttl_seconds"?) (and 2 ' +
        'more problems)',
    );
  });

  it("accepts the fields of Blue's contract blue-agent does not act on, at the top level and under a harness", () => {
    const text = [
      'revision: 1',
      'packages: [{ id: p, version: 1.0.0, source_ref: "https://x.example/p.tgz", sha256: "' + 'a'.repeat(64) + '" }]',
      'gateway: { type: litellm }',
      'telemetry: { sink_url: "https://t.example" }',
      'harnesses:',
      '  claude: { managed_config: { model: m, any_key: 1 }, mcp: [{ name: docs }], package_overrides: { p: { ' +
        'enabled: false } } }',
      '',
    ].join('\n');
    expect(loadDocument(authoredPolicySchema, text, 'policy.yaml')).toMatchObject({
      revision: 1,
      gateway: { type: 'litellm' },
    });
  });

  it('a fetched policy keeps tolerating fields a newer server adds', () => {
    expect(
      loadDocument(
        policySchema,
        'revision: 1\nadded_later: { x: 1 }\nharnesses:\n  claude: { added_later: true }\n',
        'p.yaml',
      ),
    ).toMatchObject({ added_later: { x: 1 } });
  });

  it('the agent config and profiles suggest the key meant too, harness names included', async () => {
    const config = fail(() =>
      loadDocument(agentConfigSchema, 'control_url: https://control.example.com\ncontrol_ur1: typo\n', 'config.yaml'),
    );
    expect(config.message).toBe(
      'config.yaml:2:1: invalid agent config: / has an unknown field "control_ur1" (did you mean "control_url"?)',
    );
    const harness = fail(() =>
      loadDocument(agentConfigSchema, 'harnesses:\n  cladue: { binary: /usr/bin/claude }\n', 'config.yaml'),
    );
    expect(harness.message).toBe(
      'config.yaml:2:3: invalid agent config: /harnesses has an unknown key "cladue" (did you mean "claude"?)',
    );
    const claude = await readFile(path.join(agentRoot, 'profiles', 'claude.yaml'), 'utf8');
    const profile = fail(() =>
      loadDocument(profileSchema, claude.replace(/^display_name:/m, 'display_nam:'), 'claude.yaml'),
    );
    expect(profile.message).toMatch(
      new RegExp(
        String.raw`^claude\.yaml:3:1: invalid compatibility profile: \/ has an unknown field "display_nam" ` +
          String.raw`\(did you mean "display_name"\?\)$`,
      ),
    );
  });
});
