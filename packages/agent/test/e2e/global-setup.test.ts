/**
 * The test run's global setup (test/global-setup.ts): every project of the root's run names it, and vitest calls
 * each project's in its one main process, so the builds and the harness installs must run once, not per project.
 * This worker stands in for that process.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import setup from '../../../../test/global-setup.js';
import { agentRoot, controlApiRoot } from '../../../../test/support/context.js';

it("does its work once per process: every project's call waits for the first", async () => {
  const first = setup();
  expect(setup()).toBe(first);
  await first;
  expect(existsSync(path.join(agentRoot, 'dist', 'main.js'))).toBe(true);
  expect(existsSync(path.join(controlApiRoot, 'dist', 'server.js'))).toBe(true);
});
