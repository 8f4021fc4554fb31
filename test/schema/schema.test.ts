import { execFile } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BlueError } from '../../src/errors.js';
import { parsePolicyText } from '../../src/policy/index.js';
import { agentConfigSchema, loadDocument, policySchema } from '../../src/schema/index.js';
import { repoRoot } from '../support/context.js';
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
      for (const dir of ['profiles', 'schemas', 'scripts', 'src/schema/generated']) await cp(path.join(repoRoot, dir), path.join(copy, dir), { recursive: true });
      await symlink(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'));
      const file = path.join(copy, 'schemas', 'policy.schema.json');
      const schema = JSON.parse(await readFile(file, 'utf8'));
      schema.properties.ttl_seconds.description = 'Changed.';
      await writeFile(file, JSON.stringify(schema, null, 2));
      const result = await run(process.execPath, ['scripts/gen-schema.mjs', '--check'], { cwd: copy }).catch((e: { code: number; stderr: string }) => e);
      expect((result as { code: number }).code).toBe(1);
      expect((result as { stderr: string }).stderr).toContain('policy.ts');
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  }, 60_000);

  it('the harness-name and artifact-role enums follow the profile files: a new profile file makes the check fail until regenerated', async () => {
    const copy = await mkdtemp(path.join(tmpdir(), 'blue-agent-gen-'));
    try {
      for (const dir of ['profiles', 'schemas', 'scripts', 'src/schema/generated']) await cp(path.join(repoRoot, dir), path.join(copy, dir), { recursive: true });
      await symlink(path.join(repoRoot, 'node_modules'), path.join(copy, 'node_modules'));
      const kimi = await readFile(path.join(copy, 'profiles', 'kimi.yaml'), 'utf8');
      // A harness of its own brings a bundle role of its own.
      await writeFile(path.join(copy, 'profiles', 'zed.yaml'), kimi.replace(/^harness: kimi$/m, 'harness: zed').replace('role: kimi_state', 'role: zed_state'));
      const result = await run(process.execPath, ['scripts/gen-schema.mjs', '--check'], { cwd: copy }).catch((e: { code: number; stderr: string }) => e);
      expect((result as { code: number }).code).toBe(1);
      expect((result as { stderr: string }).stderr).toContain('harness-name.schema.json');
      await run(process.execPath, ['scripts/gen-schema.mjs'], { cwd: copy });
      expect(JSON.parse(await readFile(path.join(copy, 'schemas', 'harness-name.schema.json'), 'utf8')).enum).toEqual([...HARNESSES, 'zed'].sort());
      expect(await readFile(path.join(copy, 'src', 'schema', 'generated', 'harness-names.ts'), 'utf8')).toContain(`[${[...HARNESSES, 'zed'].sort().map((h) => `'${h}'`).join(', ')}]`);
      expect(await readFile(path.join(copy, 'src', 'schema', 'generated', 'validators.ts'), 'utf8')).toContain('"zed"');
      const roles = JSON.parse(await readFile(path.join(copy, 'schemas', 'artifact-role.schema.json'), 'utf8')).enum as string[];
      expect(roles).toContain('zed_state');
      expect(roles).toContain('kimi_state');
      expect(await readFile(path.join(copy, 'src', 'schema', 'generated', 'validators.ts'), 'utf8')).toContain('"zed_state"');
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
    expect(error.message).toBe('policy.yaml:4:26: invalid policy: /harnesses/claude/version_requirement must be string');
    expect([error.line, error.column, error.path]).toEqual([4, 26, '/harnesses/claude/version_requirement']);
  });

  it("tolerates what the policy schema does not name (Blue's GovernanceConfig); session_upload under a harness is the policy rules' to refuse", () => {
    const text = '{"revision": "r1", "packages": [], "harnesses": {"codex": {"managed_config": {"model": "m"}, "session_upload": {"presign_url": "https://x.example/p"}}}}';
    expect(loadDocument(policySchema, text, 'policy.json')).toMatchObject({ revision: 'r1' });
    expect(fail(() => parsePolicyText(text, 'policy.json')).message).toContain('session_upload is global');
  });

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
    const policy = loadDocument(policySchema, 'revision: 4\nsession_upload: { presign_url: "https://c.example/session-uploads/presign" }\n', 'p.yaml');
    expect(policy.session_upload?.presign_url).toBe('https://c.example/session-uploads/presign');
  });
});
