import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ADAPTERS, adapterForHookFormat, demoHarness } from '../../src/harnesses/index.js';
import { HARNESS_DISPLAY_NAMES, HARNESSES } from '../../src/harnesses/names.js';
import { TRANSCRIPT_READERS } from '@blue-agent/contract/harnesses/index.js';
import { loadProfiles } from '@blue-agent/contract/profiles/index.js';
import { checkHookFormat } from '../../src/reconcile/plan.js';
import { FIXTURE_CERTIFIED } from '@blue-agent/contract/schema/generated/harness-names.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { lockedHarnesses, RIGS } from '../../../../test/support/rigs.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SCHEMAS = path.resolve(ROOT, '..', 'contract', 'schemas');
const CONTRACT_HARNESSES = path.resolve(ROOT, '..', 'contract', 'src', 'harnesses');
const LOCK = path.resolve(ROOT, '..', '..', 'harness-versions.lock.json');

describe('the harness registry', () => {
  it('agrees with the generated names, the shared schema enum, the profiles and the lock file', async () => {
    expect(Object.keys(ADAPTERS)).toEqual([...HARNESSES]);
    const schema = JSON.parse(await readFile(path.join(SCHEMAS, 'harness-name.schema.json'), 'utf8')) as {
      enum: string[];
    };
    expect(schema.enum).toEqual([...HARNESSES]);
    const profiles = await loadProfiles(path.join(ROOT, 'profiles'));
    expect([...profiles.keys()].sort()).toEqual([...HARNESSES]);
    const lock = JSON.parse(await readFile(LOCK, 'utf8')) as Record<string, unknown>;
    for (const name of Object.keys(lock)) expect(HARNESSES).toContain(name);
    for (const [name, adapter] of Object.entries(ADAPTERS)) {
      const loaded = profiles.get(adapter.name)!;
      expect(adapter.name).toBe(name);
      expect(adapter.displayName).toBe(loaded.doc.display_name);
      expect(HARNESS_DISPLAY_NAMES[adapter.name]).toBe(loaded.doc.display_name);
      for (const interval of loaded.doc.intervals)
        if (interval.capture !== undefined) expect(interval.capture.hook.format).toBe(adapter.hookFormat);
      expect(adapterForHookFormat(adapter.hookFormat)).toBe(adapter);
      expect(typeof adapter.transcript.userTurn).toBe('function');
    }
  });

  it('gives each adapter the contract reader of its harness; the contract has one folder per harness', async () => {
    expect(Object.keys(TRANSCRIPT_READERS)).toEqual([...HARNESSES]);
    for (const [name, adapter] of Object.entries(ADAPTERS))
      expect(adapter.transcript, name).toBe(TRANSCRIPT_READERS[name as keyof typeof TRANSCRIPT_READERS]);
    const folders = (await readdir(CONTRACT_HARNESSES, { withFileTypes: true }))
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.sort()).toEqual([...HARNESSES].sort());
  });

  it('every harness folder keeps each role in the file named after it', async () => {
    const roles = ['index.ts', 'plan.ts', 'session.ts', 'restore.ts'];
    // The transcript reader is the contract's (both packages read bundles with it), in the harness's folder there.
    const contractRoles = ['transcript.ts'];
    for (const adapter of Object.values(ADAPTERS)) {
      const files = await readdir(path.join(ROOT, 'src', 'harnesses', adapter.name));
      for (const role of roles) expect(files, `${adapter.name}: ${role}`).toContain(role);
      expect(files, `${adapter.name}: transcript.ts is the contract's`).not.toContain('transcript.ts');
      const contractFiles = await readdir(path.join(CONTRACT_HARNESSES, adapter.name));
      for (const role of contractRoles) expect(contractFiles, `contract ${adapter.name}: ${role}`).toContain(role);
      // The session listing is optional: a harness that lists its sessions does it in listing.ts.
      expect(files.includes('listing.ts'), `${adapter.name}: listing.ts`).toBe(adapter.listSessions !== undefined);
      // A planner's helpers are named after it (plan-<part>.ts), never the other way round.
      expect(
        files.filter((f) => /.-plan\.ts$/.test(f)),
        adapter.name,
      ).toEqual([]);
    }
  });

  it('every schema that speaks of harnesses references the one shared definition, listing no names', async () => {
    for (const file of ['agent-config', 'bundle-manifest', 'profile']) {
      const text = await readFile(path.join(SCHEMAS, `${file}.schema.json`), 'utf8');
      expect(text, file).toContain('"$ref": "harness-name.schema.json"');
      for (const h of HARNESSES) expect(text, file).not.toContain(`"${h}"`);
    }
    // What a policy names, other clients report or the server lists (Blue's harness names included) is any bounded
    // name, never a list: names this blue-agent does not know are ignored. A presign names a provider (a session
    // record's may be any): the server holds a bundle's to the registry's names (test/control-plane/api-bad-input).
    for (const file of [
      'policy',
      'control-client-status',
      'control-captured-session',
      'harness-metadata',
      'control-presign',
    ]) {
      const text = await readFile(path.join(SCHEMAS, `${file}.schema.json`), 'utf8');
      for (const h of HARNESSES) expect(text, file).not.toContain(`"${h}"`);
    }
  });

  it(
    'has one test rig per harness: a CLI rig exactly for the locked ones, a certification run exactly for those ' +
      'certified on fixtures',
    async () => {
      expect(Object.keys(RIGS)).toEqual([...HARNESSES]);
      const locked = lockedHarnesses();
      const profiles = await loadProfiles(path.join(ROOT, 'profiles'));
      for (const [name, rig] of Object.entries(RIGS)) {
        expect(rig.name).toBe(name);
        expect(rig.cli !== undefined, name).toBe(locked.includes(rig.name));
        expect(rig.certifyOnFixtures !== undefined, name).toBe(FIXTURE_CERTIFIED.includes(rig.name));
        // The fixture's profile is one of the harness's shipped intervals.
        expect(
          profiles.get(rig.name)!.doc.intervals.map((i) => i.profile),
          name,
        ).toContain(rig.fixture.profile);
      }
    },
  );

  it('has a harness for the demo', () => {
    expect(demoHarness().demo.binary).not.toBe('');
  });
});

describe("the profile's capture.hook.format", () => {
  const interval = (format: string): Interval =>
    ({
      profile: 'x-v1_0_0',
      introduced: '1.0.0',
      verified_before: '1.0.0',
      lifecycle: 'supported',
      operations: [],
      capture: { event: 'SessionEnd', hook: { file: 'f', format, timeout_seconds: 5 } },
    }) as Interval;

  it("picks the planner: a format another harness's planner writes is refused with the profile and field", () => {
    const [first, second] = Object.values(ADAPTERS);
    expect(() => checkHookFormat(first!, interval(first!.hookFormat))).not.toThrow();
    expect(() => checkHookFormat(first!, interval(second!.hookFormat))).toThrow(
      expect.objectContaining({ code: 'PROFILE_INVALID', path: '/capture/hook/format' }),
    );
    expect(() => checkHookFormat(first!, interval('unknown-format'))).toThrow(
      /capture\.hook\.format is "unknown-format"/,
    );
  });
});
