/** The lock file as the certification edits it: a version that passed joins its harness's list, nothing else moves. */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { addLockedVersion, readLock } from '../../scripts/install-harnesses.mjs';

const LOCK = `{
  "alpha": { "package": "@org/alpha", "versions": ["1.2.0", "1.10.0"] },
  "beta": {
    "package": "beta-cli",
    "versions": ["0.5.0"],
    "runtime_deps": { "folder": "deps", "packages": ["beta-sdk@<={version}"] }
  }
}
`;

let dir: string;
let file: string;
beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-lock-'));
  file = path.join(dir, 'harness-versions.lock.json');
  await writeFile(file, LOCK);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('addLockedVersion', () => {
  it('adds the version in order, keeping every other key and byte of the file', async () => {
    addLockedVersion(file, 'beta', '0.4.1');
    expect(await readFile(file, 'utf8')).toBe(LOCK.replace('"versions": ["0.5.0"]', '"versions": ["0.4.1", "0.5.0"]'));
    addLockedVersion(file, 'alpha', '1.9.3');
    expect(readLock(file).alpha!.versions).toEqual(['1.2.0', '1.9.3', '1.10.0']);
    expect(readLock(file).beta!.runtime_deps).toEqual({ folder: 'deps', packages: ['beta-sdk@<={version}'] });
  });

  it('changes nothing for a version already locked, and refuses a harness the file does not have', async () => {
    addLockedVersion(file, 'alpha', '1.10.0');
    expect(await readFile(file, 'utf8')).toBe(LOCK);
    expect(() => addLockedVersion(file, 'gamma', '1.0.0')).toThrow('"gamma" is not in the lock file');
  });
});
