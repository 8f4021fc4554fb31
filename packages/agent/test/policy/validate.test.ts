import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BlueError } from '@blue-agent/contract/errors.js';
import {
  checkUploadOrigin,
  loadPolicyFile,
  parsePolicyText,
  unknownPolicyFields,
  validatePolicy,
} from '../../src/policy/index.js';
import { DocumentCache } from '@blue-agent/contract/schema/document-cache.js';
import { rejected, thrown } from '../../../../test/support/errors.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-policy-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const good = {
  revision: 7,
  contract_version: 1,
  ttl_seconds: 3600,
  required: true,
  allowed_harnesses: ['claude', 'codex'],
  harnesses: { claude: { version_requirement: '>=2.0.12 <3', allow_unverified_versions: false } },
  session_upload: { presign_url: 'https://control.example.com/session-uploads/presign' },
};

describe('validatePolicy', () => {
  it('accepts a complete policy', () => {
    expect(validatePolicy(good, 'policy.json')).toEqual(good);
  });

  it('names the field of a wrong type', () => {
    const error = thrown(() => validatePolicy({ ...good, ttl_seconds: 'soon' }, 'policy.json'));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.path).toBe('/ttl_seconds');
    expect(error.message).toContain('/ttl_seconds');
  });

  it(
    "tolerates the rest of Blue's GovernanceConfig and fields a later contract adds, and harness names it does " +
      'not know',
    () => {
      const full = {
        ...good,
        revision: '251e6087-98cf-4861-9668-f09f537d5e4d',
        contract_version: 3,
        required_capabilities: ['adapter_intervals', 'tenant_client_version_pin'],
        minimum_client_version: '0.1.0',
        required_client_version: '0.1.0',
        allowed_harnesses: ['claude', 'open-code'],
        harnesses: {
          claude: {
            version_requirement: '>=2.0.12 <3',
            managed_config: { model: 'x', approval_policy: 'never' },
            mcp: [{ name: 'docs', command: 'docs-mcp' }],
            package_overrides: { p: { enabled: false } },
          },
          'open-code': { managed_config: {} },
        },
        packages: [
          { id: 'p', version: '1.0.0', source_ref: 'https://x.example/p.tgz', sha256: 'a'.repeat(64), adapters: {} },
        ],
        gateway: { proxy_url: 'https://gw.example', token: 'none' },
        telemetry: { sink_url: 'https://t.example' },
        effective_verified_ceilings: {},
        added_in_a_later_contract: { x: 1 },
      };
      expect(validatePolicy(full, 'p.json')).toEqual(full);
      // An integer revision (older servers) still passes; anything else is refused.
      expect(validatePolicy({ revision: 7 }, 'p.json').revision).toBe(7);
      expect(thrown(() => validatePolicy({ revision: ['x'] }, 'p.json')).path).toBe('/revision');
    },
  );

  it('says session_upload is global when it appears under a harness, with its position', () => {
    const text = [
      'revision: 3',
      'harnesses:',
      '  codex:',
      '    version_requirement: ">=0.145.0"',
      '    session_upload:',
      '      presign_url: https://control.example.com/session-uploads/presign',
      '',
    ].join('\n');
    const error = thrown(() => parsePolicyText(text, 'policy.yaml', 'authored'));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.path).toBe('/harnesses/codex/session_upload');
    expect(error.message).toContain('/harnesses/codex/session_upload');
    expect(error.message).toMatch(/global/);
    expect(error.message).toMatch(/^policy\.yaml:5:5: /);
    expect(error.hint).toMatch(/top level/);
  });

  it('rejects a version_requirement that is not a semver range, naming the field and line', () => {
    const text =
      '{\n  "revision": 1,\n  "harnesses": {\n    "claude": { "version_requirement": ">=2.x.y lol" }\n  }\n}\n';
    const error = thrown(() => parsePolicyText(text, 'policy.json', 'authored'));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.path).toBe('/harnesses/claude/version_requirement');
    expect(error.message).toContain('not a valid semver range');
    expect(error.line).toBe(4);
  });

  it('rejects a bad presign_url', () => {
    const scheme = thrown(() =>
      validatePolicy({ revision: 1, session_upload: { presign_url: 'ftp://files.example.com/x' } }, 'p.json'),
    );
    expect(scheme.path).toBe('/session_upload/presign_url');
    const unparsable = thrown(() =>
      validatePolicy({ revision: 1, session_upload: { presign_url: 'https://exa mple.com/presign' } }, 'p.json'),
    );
    expect(unparsable.code).toBe('POLICY_INVALID');
    expect(unparsable.path).toBe('/session_upload/presign_url');
    const creds = thrown(() =>
      validatePolicy(
        { revision: 1, session_upload: { presign_url: 'https://u:p@control.example.com/presign' } },
        'p.json',
      ),
    );
    expect(creds.path).toBe('/session_upload/presign_url');
  });

  it('requires a revision', () => {
    const error = thrown(() => validatePolicy({ ttl_seconds: 60 }, 'p.json'));
    expect(error.message).toContain('revision');
  });
});

describe('checkUploadOrigin', () => {
  const policy = (presign_url: string) => ({ revision: 1, session_upload: { presign_url } });

  it('accepts the Control API origin, normalising case and default ports', () => {
    expect(
      checkUploadOrigin(policy('https://CONTROL.example.com:443/a/presign'), {
        controlUrl: 'https://control.example.com/api',
        file: 'f',
      }),
    ).toEqual([]);
  });

  it('refuses a foreign origin: a policy must not send transcripts elsewhere', () => {
    const error = thrown(() =>
      checkUploadOrigin(policy('https://evil.example.net/presign'), {
        controlUrl: 'https://control.example.com',
        file: 'f',
      }),
    );
    expect(error.code).toBe('POLICY_FOREIGN_ORIGIN');
    expect(error.path).toBe('/session_upload/presign_url');
    expect(error.message).toContain('https://evil.example.net');
    expect(error.hint).toContain('allowed_upload_origins');
  });

  it('refuses another port or scheme on the same host', () => {
    expect(() =>
      checkUploadOrigin(policy('http://control.example.com/presign'), {
        controlUrl: 'https://control.example.com',
        file: 'f',
      }),
    ).toThrow(/elsewhere/);
    expect(() =>
      checkUploadOrigin(policy('https://control.example.com:8443/presign'), {
        controlUrl: 'https://control.example.com',
        file: 'f',
      }),
    ).toThrow(/elsewhere/);
  });

  it('accepts an origin listed in allowed_upload_origins', () => {
    expect(
      checkUploadOrigin(policy('https://uploads.example.com/presign'), {
        controlUrl: 'https://control.example.com',
        allowedOrigins: ['https://uploads.example.com'],
        file: 'f',
      }),
    ).toEqual([]);
  });

  it('accepts but notes a presign_url when no origin is known to compare with', () => {
    const warnings = checkUploadOrigin(policy('https://uploads.example.com/presign'), { file: 'local.yaml' });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('not checked');
  });

  it('checks against allowed_upload_origins alone when no control URL is known', () => {
    expect(() =>
      checkUploadOrigin(policy('https://evil.example.net/presign'), {
        allowedOrigins: ['https://uploads.example.com'],
        file: 'f',
      }),
    ).toThrow(BlueError);
  });
});

describe('loadPolicyFile', () => {
  it('reads YAML', async () => {
    const file = path.join(dir, 'policy.yaml');
    await writeFile(file, '# org policy\nrevision: "2024-06-01.1"\nttl_seconds: 600\nallowed_harnesses: [claude]\n');
    expect(await loadPolicyFile(file)).toEqual({
      revision: '2024-06-01.1',
      ttl_seconds: 600,
      allowed_harnesses: ['claude'],
    });
  });

  it('reads JSON', async () => {
    const file = path.join(dir, 'policy.json');
    await writeFile(file, JSON.stringify(good, null, 2));
    expect(await loadPolicyFile(file)).toEqual(good);
  });

  it('reports a YAML syntax error with line and column', async () => {
    const file = path.join(dir, 'policy.yaml');
    await writeFile(file, 'revision: 1\nharnesses:\n  claude: {version_requirement: ">=2"\nttl_seconds: 5\n');
    const error = await rejected(loadPolicyFile(file));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.file).toBe(file);
    expect(error.line).toBeGreaterThanOrEqual(3);
    expect(error.column).toBeGreaterThanOrEqual(1);
    expect(error.message).toMatch(new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+:\\d+: `));
  });

  it('reports a schema error with the line of the field', async () => {
    const file = path.join(dir, 'policy.yaml');
    await writeFile(file, 'revision: 1\nrequired: "yes"\n');
    const error = await rejected(loadPolicyFile(file));
    expect(error.path).toBe('/required');
    expect(error.line).toBe(2);
  });

  it('rejects a duplicate key', async () => {
    const file = path.join(dir, 'policy.yaml');
    await writeFile(file, 'revision: 1\nrevision: 2\n');
    expect((await rejected(loadPolicyFile(file))).code).toBe('POLICY_INVALID');
  });

  it('says when the file does not exist', async () => {
    const error = await rejected(loadPolicyFile(path.join(dir, 'nope.yaml')));
    expect(error.code).toBe('POLICY_MISSING');
    expect(error.hint).toContain('--policy');
  });

  it('refuses a file larger than the cap', async () => {
    const file = path.join(dir, 'huge.yaml');
    await writeFile(file, `revision: 1\n# ${'x'.repeat(1024 * 1024)}\n`);
    const error = await rejected(loadPolicyFile(file));
    expect(error.code).toBe('POLICY_INVALID');
    expect(error.message).toContain('larger than');
  });
});

describe('a policy someone writes, and one fetched', () => {
  const typo = { revision: 1, sesion_upload: { presign_url: 'https://control.example.com/session-uploads/presign' } };

  it('refuses a key the schema does not name in a policy someone writes, and tolerates it in a fetched one', () => {
    const error = thrown(() => validatePolicy(typo, 'p.json', undefined, 'authored'));
    expect([error.code, error.path]).toEqual(['POLICY_INVALID', '/']);
    expect(error.message).toContain('has an unknown field "sesion_upload" (did you mean "session_upload"?)');
    expect(validatePolicy(typo, 'p.json')).toEqual(typo);
    expect(validatePolicy(typo, 'p.json', undefined, 'fetched')).toEqual(typo);
  });

  it('refuses a harness name a letter or two from a known one where it is written, and ignores other names', () => {
    const text = 'revision: 1\nallowed_harnesses:\n  - codex\n  - cladue\n';
    const listed = thrown(() => parsePolicyText(text, 'policy.yaml', 'authored'));
    expect([listed.path, listed.line, listed.column]).toEqual(['/allowed_harnesses/1', 4, 5]);
    expect(listed.message).toContain(
      'names the harness "cladue", which blue-agent does not know (did you mean "claude"?)',
    );
    const keyed = thrown(() =>
      parsePolicyText(
        'revision: 1\nharnesses:\n  codx: { version_requirement: ">=0.145.0" }\n',
        'policy.yaml',
        'authored',
      ),
    );
    expect([keyed.path, keyed.line, keyed.column]).toEqual(['/harnesses/codx', 3, 3]);
    expect(keyed.hint).toMatch(/^Write "codex"/);
    // Blue's registry may name harnesses blue-agent lacks: far from every known name, they are not typos.
    expect(
      parsePolicyText('revision: 1\nallowed_harnesses: [claude, cursor]\n', 'policy.yaml', 'authored')
        .allowed_harnesses,
    ).toEqual(['claude', 'cursor']);
    expect(parsePolicyText(text, 'policy.yaml', 'fetched').allowed_harnesses).toEqual(['codex', 'cladue']);
  });

  it('names the fields of a fetched revision this blue-agent does not know, at every level', () => {
    expect(
      unknownPolicyFields({
        ...good,
        added_later: 1,
        harnesses: { claude: { new_rule: true, managed_config: {} } },
        session_upload: { presign_url: good.session_upload.presign_url, zip: 'x' },
      }),
    ).toEqual(['added_later', 'harnesses.claude.new_rule', 'session_upload.zip']);
    expect(unknownPolicyFields({ ...good, packages: [], gateway: {}, telemetry: {} })).toEqual([]);
  });

  it(
    'a policy file is held to the written rules unless it is the copy of a fetched revision, whatever the ' +
      'document cache says',
    async () => {
      const file = path.join(dir, 'policy.yaml');
      await writeFile(file, 'revision: 1\nttl_second: 60\n');
      const cacheFile = path.join(dir, 'documents.json');
      const documents = await DocumentCache.open(cacheFile, true);
      expect(await loadPolicyFile(file, documents, 'fetched')).toEqual({ revision: 1, ttl_second: 60 });
      await documents.save();
      const error = await rejected(loadPolicyFile(file, await DocumentCache.open(cacheFile, true)));
      expect(error.message).toMatch(
        /policy\.yaml:2:1: invalid policy: \/ has an unknown field "ttl_second" \(did you mean "ttl_seconds"\?\)/,
      );
    },
  );
});
