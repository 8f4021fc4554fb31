/**
 * The policy rules beyond the schema, each with its exact message, field and position, and how a policy file that
 * cannot be read is reported.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LineCounter, parseDocument } from 'yaml';
import { checkUploadOrigin, loadPolicyFile } from '../../src/policy/file.js';
import { parsePolicyText, validatePolicy, type TextSource } from '@blue-agent/contract/policy/validate.js';
import { MAX_POLICY_BYTES } from '@blue-agent/contract/schema/limits.js';
import { originOf } from '@blue-agent/contract/util/url.js';
import type { GovernancePolicy } from '@blue-agent/contract/schema/index.js';
import { rejected, thrown } from '../../../../test/support/errors.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-policy-rules-'));
});
afterAll(async () => rm(dir, { recursive: true, force: true }));

/** A YAML text as the position source of data that may differ from it. */
function sourceOf(text: string): TextSource {
  const lines = new LineCounter();
  return { doc: parseDocument(text, { lineCounter: lines }), lines };
}

describe('validatePolicy: data that is not a mapping', () => {
  for (const [name, data] of [
    ['null (an empty file)', null],
    ['a list', []],
    ['a string', 'revision: 1'],
    ['a number', 7],
  ] as const) {
    it(`refuses ${name} as POLICY_INVALID`, () => {
      const error = thrown(() => validatePolicy(data, 'p.yaml'));
      expect([error.code, error.path, error.message]).toEqual([
        'POLICY_INVALID',
        '/',
        'p.yaml: invalid policy: / must be object',
      ]);
    });
  }

  it('refuses an empty or comment-only policy text as POLICY_INVALID', () => {
    for (const text of ['', '# nothing here\n'])
      expect(thrown(() => parsePolicyText(text, 'p.yaml', 'authored')).code).toBe('POLICY_INVALID');
  });
});

describe('validatePolicy: version_requirement', () => {
  it('accepts a harness rule without a version_requirement', () => {
    const policy = { revision: 1, harnesses: { claude: { allow_unverified_versions: true } } };
    expect(validatePolicy(policy, 'p.yaml')).toEqual(policy);
  });

  it('names the field, the range, the position and a fix', () => {
    const text = 'revision: 1\nharnesses:\n  codex:\n    version_requirement: ">=2.0 <<3"\n';
    const error = thrown(() => parsePolicyText(text, 'p.yaml', 'authored'));
    expect(error.message).toBe(
      'p.yaml:4:5: invalid policy: /harnesses/codex/version_requirement is not a valid semver range: ">=2.0 <<3"',
    );
    expect([error.code, error.file, error.path, error.line, error.column]).toEqual([
      'POLICY_INVALID',
      'p.yaml',
      '/harnesses/codex/version_requirement',
      4,
      5,
    ]);
    expect(error.hint).toBe(
      'Use a range such as ">=2.0.12 <3" or "^0.145.0" for /harnesses/codex/version_requirement.',
    );
  });
});

describe('validatePolicy: presign_url', () => {
  const withUrl = (url: string) => `revision: 1\nsession_upload:\n  presign_url: "${url}"\n`;
  for (const url of [
    'https://user@control.example/presign',
    'https://:secret@control.example/presign',
    'https://user:secret@control.example/presign',
  ]) {
    it(`refuses credentials in the URL (${url.replace(/\/presign$/, '')})`, () => {
      const error = thrown(() => parsePolicyText(withUrl(url), 'p.yaml', 'authored'));
      expect(error.message).toBe(
        'p.yaml:3:3: invalid policy: /session_upload/presign_url must be an absolute http(s) URL without credentials',
      );
      expect([error.code, error.file, error.path, error.line, error.column]).toEqual([
        'POLICY_INVALID',
        'p.yaml',
        '/session_upload/presign_url',
        3,
        3,
      ]);
      expect(error.hint).toBe(
        'Set presign_url to the Control API presign route, e.g. https://control.example.com/session-uploads/presign.',
      );
    });
  }

  for (const url of ['ftp://control.example/presign', 'control.example/presign', 'file:///etc/passwd']) {
    it(`refuses a URL that is not absolute http(s): ${url}`, () => {
      expect(thrown(() => parsePolicyText(withUrl(url), 'p.yaml', 'authored')).path).toBe(
        '/session_upload/presign_url',
      );
    });
  }

  it('accepts plain http and https URLs', () => {
    for (const url of ['http://127.0.0.1:8080/presign', 'https://control.example/presign']) {
      expect(parsePolicyText(withUrl(url), 'p.yaml', 'authored').session_upload?.presign_url).toBe(url);
    }
  });
});

describe('validatePolicy: positions', () => {
  const bad = { revision: 1, harnesses: { claude: { version_requirement: 'nope' } } };

  it('reports a field missing from the text at its parent key', () => {
    const error = thrown(() => validatePolicy(bad, 'p.yaml', sourceOf('revision: 1\nharnesses:\n  claude: {}\n')));
    expect([error.line, error.column]).toEqual([3, 3]);
    expect(error.message).toMatch(/^p\.yaml:3:3: invalid policy: /);
  });

  it('looks past a parent that is not a mapping', () => {
    const error = thrown(() => validatePolicy(bad, 'p.yaml', sourceOf('revision: 1\nharnesses: 5\n')));
    expect([error.line, error.column]).toEqual([2, 1]);
  });

  it('falls back to the start of the document, then to no position at all', () => {
    const atRoot = thrown(() => validatePolicy(bad, 'p.yaml', sourceOf('\n\n- a list\n')));
    expect([atRoot.line, atRoot.column]).toEqual([3, 1]);
    const nowhere = thrown(() => validatePolicy(bad, 'p.yaml', sourceOf('')));
    expect([nowhere.line, nowhere.column]).toEqual([undefined, undefined]);
    expect(nowhere.message).toMatch(/^p\.yaml: invalid policy: /);
  });
});

describe('loadPolicyFile: files that cannot be read', () => {
  it('an unreadable path is POLICY_INVALID with the reason, not POLICY_MISSING', async () => {
    const plain = path.join(dir, 'plain.txt');
    await writeFile(plain, 'x');
    const file = path.join(plain, 'policy.yaml');
    const error = await rejected(loadPolicyFile(file));
    expect([error.code, error.file, error.hint]).toEqual([
      'POLICY_INVALID',
      file,
      'Check the file and its permissions.',
    ]);
    expect(error.message).toBe(`cannot read the policy file ${file}: ENOTDIR`);
  });

  it('a missing file is POLICY_MISSING', async () => {
    const file = path.join(dir, 'missing.yaml');
    const error = await rejected(loadPolicyFile(file));
    expect([error.code, error.file, error.message]).toEqual([
      'POLICY_MISSING',
      file,
      `the policy file ${file} does not exist`,
    ]);
  });

  it('a folder is not a policy file', async () => {
    const folder = path.join(dir, 'folder.yaml');
    await mkdir(folder);
    const error = await rejected(loadPolicyFile(folder));
    expect([error.code, error.file, error.message]).toEqual([
      'POLICY_INVALID',
      folder,
      `the policy file ${folder} is not a regular file`,
    ]);
  });

  it('accepts a file of exactly the cap and refuses one byte more, with a hint', async () => {
    const head = 'revision: 1\n# ';
    const atCap = path.join(dir, 'at-cap.yaml');
    await writeFile(atCap, `${head}${'x'.repeat(MAX_POLICY_BYTES - head.length - 1)}\n`);
    expect((await loadPolicyFile(atCap)).revision).toBe(1);
    const over = path.join(dir, 'over-cap.yaml');
    await writeFile(over, `${head}${'x'.repeat(MAX_POLICY_BYTES - head.length)}\n`);
    const error = await rejected(loadPolicyFile(over));
    expect([error.code, error.file, error.message]).toEqual([
      'POLICY_INVALID',
      over,
      `the policy file ${over} is larger than ${MAX_POLICY_BYTES} bytes`,
    ]);
    expect(error.hint).toBe('A policy is a small YAML or JSON document; check that the path names the right file.');
  });
});

describe('checkUploadOrigin', () => {
  const policy = (presign_url?: string): GovernancePolicy => ({
    revision: 3,
    ...(presign_url === undefined ? {} : { session_upload: { presign_url } }),
  });

  it('has nothing to check without a session_upload block', () => {
    expect(checkUploadOrigin(policy(), { file: 'p.yaml' })).toEqual([]);
  });

  it('treats a control URL that is not http(s) as no origin at all', () => {
    expect(
      checkUploadOrigin(policy('https://control.example/presign'), {
        file: 'p.yaml',
        controlUrl: 'not a url',
        allowedOrigins: ['ftp://x'],
      }),
    ).toEqual([
      'p.yaml: session_upload.presign_url https://control.example is not checked against a Control API origin (no ' +
        'control URL configured)',
    ]);
  });

  it('names every allowed origin when it refuses one', () => {
    const error = thrown(() =>
      checkUploadOrigin(policy('https://evil.example/presign'), {
        file: 'p.yaml',
        controlUrl: 'https://control.example/api',
        allowedOrigins: ['https://uploads.example:8443/'],
      }),
    );
    expect(error.code).toBe('POLICY_FOREIGN_ORIGIN');
    expect(error.message).toBe(
      "p.yaml: /session_upload/presign_url points at https://evil.example, which is neither the Control API's " +
        'origin nor an allowed upload origin (https://control.example, https://uploads.example:8443); a policy ' +
        'must not be able to send transcripts elsewhere',
    );
    expect(error.hint).toBe(
      "If https://evil.example is really your organisation's upload service, add it to allowed_upload_origins in " +
        'the agent config.',
    );
    expect([error.file, error.path]).toEqual(['p.yaml', '/session_upload/presign_url']);
  });

  it('refuses a presign_url that is not http(s), quoting it whole', () => {
    const error = thrown(() =>
      checkUploadOrigin(policy('ftp://control.example/presign'), {
        file: 'p.yaml',
        controlUrl: 'https://control.example',
      }),
    );
    expect(error.code).toBe('POLICY_FOREIGN_ORIGIN');
    expect(error.message).toContain('points at ftp://control.example/presign, which is neither');
    expect(error.hint).toBe(
      "If that origin is really your organisation's upload service, add it to allowed_upload_origins in the agent " +
        'config.',
    );
  });
});

describe('originOf', () => {
  it('is the lower-cased origin without a default port for http(s), and empty for anything else', () => {
    expect(originOf('HTTPS://Control.Example:443/a?b')).toBe('https://control.example');
    expect(originOf('http://127.0.0.1:8080/')).toBe('http://127.0.0.1:8080');
    for (const value of ['ftp://control.example', 'file:///etc', 'control.example', ''])
      expect(originOf(value)).toBe('');
  });
});
