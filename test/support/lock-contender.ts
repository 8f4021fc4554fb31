/**
 * A separate process contending for one per-file lock, for the takeover race test. Arguments: locks dir, key, the
 * boot time of its world, the stale owner's pid, timeout ms. It says `ready`, waits for `go` on stdin, then tries the
 * lock: `won` (and holds it until `release` arrives on stdin) or `timeout`.
 *
 * Its world is injected like the tests' own: the stale owner's pid is gone (or, with a recorded start, another
 * process now), every other pid runs.
 */
import { createInterface } from 'node:readline';
import { BlueError } from '../../packages/contract/src/errors.js';
import { withLock } from '../../packages/agent/src/lock/lock.js';
import type { LockWorld } from '../../packages/agent/src/lock/liveness.js';

const [locksDir, key, bootAt, stalePid, timeout] = process.argv.slice(2) as [string, string, string, string, string];
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const next = async () => String((await lines.next()).value ?? '');

const world: LockWorld = {
  host: 'this-host',
  pid: process.pid,
  bootAt: Number(bootAt),
  probe: (pid) => (pid === Number(stalePid) ? 'gone' : 'alive'),
  procStart: () => undefined,
  startedAt: () => undefined,
};
process.stdout.write('ready\n');
if ((await next()) !== 'go') process.exit(2);
try {
  await withLock(
    locksDir,
    key,
    async () => {
      process.stdout.write('won\n');
      await next();
    },
    { world, timeoutMs: Number(timeout) },
  );
} catch (error) {
  if (!(error instanceof BlueError && error.code === 'LOCK_TIMEOUT')) throw error;
  process.stdout.write('timeout\n');
}
process.exit(0);
