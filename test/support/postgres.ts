/**
 * A throwaway PostgreSQL cluster for tests: the Control API's PostgreSQL backend is tested against a real server,
 * never a mock. `startPostgres()` finds the server binaries (Debian's /usr/lib/postgresql/<major>/bin, or `initdb` and
 * `postgres` on PATH; the highest major ≥ 13 wins), runs `initdb` into a fresh temporary directory and starts
 * `postgres` on 127.0.0.1 with a free port, its unix socket in that directory, and fsync and full_page_writes off since
 * the data lives as long as the test run. synchronous_commit stays on: with fsync off a commit costs a write(), not a
 * flush (no measurable difference over 3000 commits), and a commit then survives `kill()`, as on a real server.
 *
 * - Authentication is scram-sha-256 with a random password that travels in the URL, as the product's URLs do.
 * - PostgreSQL refuses to run as root: as root, initdb and postgres run as `nobody` (spawn's uid/gid, which also drops
 *   the supplementary groups), and the temporary directory is given to that user.
 * - Nothing depends on the machine's time zone or locale: TZ=UTC and LC_ALL=C for both, initdb --locale=C -E UTF8.
 * - Every process of the cluster is gone when `stop()`, `kill()` or the Node.js process's exit is through.
 * Test workers get a database of the run's shared cluster from test/support/postgres-db.ts.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { chown, mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import pg from 'pg';

const MIN_MAJOR = 13;
const DEBIAN_ROOT = '/usr/lib/postgresql';
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 30_000;
const SUPERUSER = 'postgres';
/** Room for ~200 concurrent connections from the tests, plus the reserved ones. */
const MAX_CONNECTIONS = 300;

export interface PgBinaries {
  /** The directory holding `initdb` and `postgres`. */
  dir: string;
  major: number;
  /** As `postgres --version` prints it: `15.14`. */
  version: string;
}

export interface PgCluster {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/postgres`: the superuser on the maintenance database. */
  url: string;
  port: number;
  /** The cluster's data directory (inside the temporary directory `stop()` removes). */
  dataDir: string;
  /** The server's version (`15.14`) and major. */
  version: string;
  major: number;
  /** Creates an empty database (a unique name unless given) and returns its URL. */
  createDatabase(name?: string): Promise<string>;
  /** Shuts the server down (fast: open connections are cut) and removes its directory. Idempotent. */
  stop(): Promise<void>;
  /**
   * Shuts the server down (unless it is down already, after `kill()`) and starts it again on the same port and data;
   * resolves once it accepts connections. Open connections are cut; clients reconnect.
   */
  restart(): Promise<void>;
  /**
   * A crash: SIGKILL to every server process (the postmaster then exits, restart_after_crash=off); the data stays for
   * `restart()`, which recovers from the WAL: every committed transaction is still there.
   */
  kill(): Promise<void>;
  /** The postmaster's pid and those of all its descendants, while it runs (empty when down). */
  processIds(): number[];
}

const execFileAsync = promisify(execFile);

/** The environment of initdb and postgres: nothing inherited but PATH, so no PG* variable or locale leaks in. */
function serverEnv(): Record<string, string> {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin', TZ: 'UTC', LC_ALL: 'C', LANG: 'C' };
}

/** `postgres --version` of `dir`, or undefined when it does not run. */
function versionOf(dir: string): { major: number; version: string } | undefined {
  try {
    const out = execFileSync(path.join(dir, 'postgres'), ['--version'], {
      encoding: 'utf8',
      env: serverEnv(),
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 10_000,
    });
    const m = /\(PostgreSQL\)\s+(\d+)(?:\.(\d+))?/.exec(out);
    return m === null ? undefined : { major: Number(m[1]), version: m[2] === undefined ? m[1]! : `${m[1]}.${m[2]}` };
  } catch {
    return undefined;
  }
}

const hasServer = (dir: string): boolean =>
  existsSync(path.join(dir, 'initdb')) && existsSync(path.join(dir, 'postgres'));

/** Every directory that holds both `initdb` and `postgres`, symlinks resolved, without duplicates. */
function candidateDirs(): string[] {
  const dirs: string[] = [];
  if (existsSync(DEBIAN_ROOT))
    for (const major of readdirSync(DEBIAN_ROOT)) dirs.push(path.join(DEBIAN_ROOT, major, 'bin'));
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (dir === '' || !existsSync(path.join(dir, 'initdb'))) continue;
    // A PATH entry may hold symlinks into the real bin directory (/usr/local/bin/initdb -> /usr/lib/postgresql/15/bin).
    dirs.push(path.dirname(realpathSync(path.join(dir, 'initdb'))));
  }
  return [...new Set(dirs.filter(hasServer).map((d) => realpathSync(d)))];
}

/** The server binaries of the highest PostgreSQL major ≥ 13 on this machine, or undefined. */
export function findPostgresBinaries(): PgBinaries | undefined {
  let best: PgBinaries | undefined;
  for (const dir of candidateDirs()) {
    const v = versionOf(dir);
    if (v !== undefined && v.major >= MIN_MAJOR && (best === undefined || v.major > best.major)) best = { dir, ...v };
  }
  return best;
}

/** The uid and gid to run the server as: ours, or `nobody`'s when we are root. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    for (const line of readFileSync('/etc/passwd', 'utf8').split('\n')) {
      const [name, , uid, gid] = line.split(':');
      if (name === 'nobody' && uid !== undefined && gid !== undefined) return { uid: Number(uid), gid: Number(gid) };
    }
  } catch {
    // No /etc/passwd: the conventional ids below.
  }
  return { uid: 65534, gid: 65534 };
}

/** A port nobody listens on at the moment (the server may still lose it to a race: start() retries). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The pids of `pid`'s descendants (/proc on Linux, `ps` elsewhere). Zombies count as gone. */
function descendantsOf(pid: number): number[] {
  const children = new Map<number, number[]>();
  const add = (child: number, parent: number) => children.set(parent, [...(children.get(parent) ?? []), child]);
  if (existsSync('/proc/self/stat')) {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses, so parse after the last ')'.
        const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
        const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        if (state !== 'Z') add(Number(entry), Number(ppid));
      } catch {
        // Gone meanwhile.
      }
    }
  } else {
    const out = execFileSync('ps', ['-A', '-o', 'pid=', '-o', 'ppid=', '-o', 'stat='], { encoding: 'utf8' });
    for (const line of out.split('\n')) {
      const [child, parent, stat] = line.trim().split(/\s+/);
      if (child !== undefined && parent !== undefined && !stat?.startsWith('Z')) add(Number(child), Number(parent));
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** Whether `pid` still runs (a zombie does not). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return !existsSync('/proc/self/stat');
  }
}

function signal(pids: readonly number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // Already gone.
    }
  }
}

/** Waits until none of `pids` runs; SIGKILLs what is left after `ms`. */
async function waitGone(pids: readonly number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (pids.some(alive)) {
    if (Date.now() > deadline) signal(pids.filter(alive), 'SIGKILL');
    await sleep(20);
  }
}

const quoteIdent = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** Creates an empty database `name` (a unique one unless given) on the server of `adminUrl`; returns its URL. */
export async function createDatabaseAt(
  adminUrl: string,
  name = `test_${randomBytes(12).toString('hex')}`,
): Promise<string> {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name))
    throw new Error(
      `createDatabase: ${JSON.stringify(name)} is not a plain lowercase SQL name of at most 63 characters`,
    );
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${quoteIdent(name)}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Starts a throwaway cluster; throws, with the server log's tail, when none can be started. */
export interface StartOptions {
  /**
   * Keep fsync and full-page writes on, as a production server has them (the benchmarks, which measure what a
   * deployment would see); tests leave them off.
   */
  durable?: boolean;
}

export async function startPostgres(options: StartOptions = {}): Promise<PgCluster> {
  const bin = findPostgresBinaries();
  if (bin === undefined) {
    throw new Error(
      `no PostgreSQL server binaries (initdb and postgres, version ${MIN_MAJOR} or newer) in ${DEBIAN_ROOT}/*/bin ` +
        `or on PATH: ` +
        ("install Debian's postgresql package (apt-get install postgresql) or put a PostgreSQL server's bin " +
          'directory on PATH'),
    );
  }
  const user = serverUser();
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-pg-'));
  const dataDir = path.join(dir, 'data');
  const logFile = path.join(dir, 'postgres.log');
  const password = randomBytes(18).toString('base64url');
  const spawnAs = user === undefined ? {} : { uid: user.uid, gid: user.gid };
  const giveAway = async (p: string) => {
    if (user !== undefined) await chown(p, user.uid, user.gid);
  };

  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let port = 0;
  let stopped = false;

  const logTail = (lines = 30): string => {
    try {
      return readFileSync(logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
    } catch {
      return '(no server log)';
    }
  };
  const url = (): string => `postgres://${SUPERUSER}:${password}@127.0.0.1:${port}/postgres`;
  const processIds = (): number[] =>
    child?.pid === undefined || child.exitCode !== null || child.signalCode !== null
      ? []
      : [child.pid, ...descendantsOf(child.pid)];

  /**
   * At exit without `stop()` (a crashed or interrupted run): an immediate shutdown, waited for synchronously (the
   * postmaster reaps its backends, so no zombie is left to an init that may not reap), then the directory goes.
   */
  const onExit = () => {
    const pids = processIds();
    signal(pids.slice(0, 1), 'SIGQUIT');
    const deadline = Date.now() + 5_000;
    while (pids.some(alive) && Date.now() < deadline) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
    signal(pids.filter(alive), 'SIGKILL');
    rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  };

  try {
    await giveAway(dir);
    const pwfile = path.join(dir, 'pwfile');
    await writeFile(pwfile, `${password}\n`, { mode: 0o600 });
    await giveAway(pwfile);
    try {
      await execFileAsync(
        path.join(bin.dir, 'initdb'),
        [
          '-D',
          dataDir,
          '-U',
          SUPERUSER,
          `--pwfile=${pwfile}`,
          '--auth=scram-sha-256',
          '--locale=C',
          '--encoding=UTF8',
          '--no-sync',
        ],
        { cwd: dir, env: serverEnv(), timeout: 120_000, ...spawnAs },
      );
    } catch (error) {
      const e = error as { stderr?: string; message: string };
      throw new Error(
        `initdb (${bin.dir}) failed${user === undefined ? '' : ` as uid ${user.uid}`}: ` +
          `${(e.stderr ?? '').trim() || e.message}`,
      );
    } finally {
      await unlink(pwfile);
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }

  /** Starts postgres on `port`; resolves once a client can run a query. Throws 'port taken' on a bind conflict. */
  const launch = async (): Promise<void> => {
    const fd = openSync(logFile, 'a', 0o600);
    let proc: ChildProcess;
    try {
      // prettier-ignore
      const args = [
        '-D',
        dataDir,
        '-p',
        String(port),
        '-h',
        '127.0.0.1',
        '-k',
        dir,
        ...(options.durable === true ? [] : ['-c', 'fsync=off', '-c', 'full_page_writes=off']),
        '-c',
        'wal_level=minimal',
        '-c',
        'max_wal_senders=0',
        '-c',
        `max_connections=${MAX_CONNECTIONS}`,
        '-c',
        'huge_pages=off',
        '-c',
        'jit=off',
        // A crashed backend takes the cluster down (and fails the tests loudly) rather than being restarted.
        '-c',
        'restart_after_crash=off',
        '-c',
        'timezone=UTC',
        '-c',
        'log_timezone=UTC',
        '-c',
        'lc_messages=C',
        '-c',
        'unix_socket_permissions=0700',
      ];
      proc = spawn(path.join(bin.dir, 'postgres'), args, {
        cwd: dir,
        env: serverEnv(),
        stdio: ['ignore', fd, fd],
        ...spawnAs,
      });
    } finally {
      closeSync(fd);
    }
    child = proc;
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    let spawnError: Error | undefined;
    exited = new Promise((resolve) => {
      proc.once('error', (e) => {
        spawnError = e;
        exit ??= { code: null, signal: null };
        resolve();
      });
      proc.once('exit', (code, sig) => {
        exit = { code, signal: sig };
        resolve();
      });
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      if (exit !== undefined) {
        const tail = logTail();
        if (/could not bind|Address already in use/.test(tail.split('\n').slice(-5).join('\n')))
          throw new Error('port taken');
        throw new Error(
          `postgres exited during start-up (${spawnError?.message ?? `code ${exit.code}, signal ${exit.signal}`}); ` +
            `server log:\n${tail}`,
        );
      }
      if (Date.now() > deadline) {
        signal([proc.pid!, ...descendantsOf(proc.pid!)], 'SIGKILL');
        await exited;
        throw new Error(
          `postgres did not accept connections on 127.0.0.1:${port} within ${READY_TIMEOUT_MS / 1000} s; server ` +
            `log:\n${logTail()}`,
        );
      }
      const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 2_000 });
      client.on('error', () => {});
      try {
        await client.connect();
        await client.query('SELECT 1');
        await client.end();
        return;
      } catch {
        await client.end().catch(() => {});
        await sleep(25);
      }
    }
  };

  /** Fast shutdown; waits until the postmaster and every backend are gone. */
  const shutDown = async (): Promise<void> => {
    const pids = processIds();
    if (pids.length === 0) return;
    signal(pids.slice(0, 1), 'SIGINT');
    const timedOut = await Promise.race([exited.then(() => false), sleep(STOP_TIMEOUT_MS, true, { ref: false })]);
    if (timedOut) signal(processIds(), 'SIGKILL');
    await exited;
    await waitGone(pids, 5_000);
  };

  try {
    // A free port may be taken between looking and binding: try a few.
    for (let attempt = 1; ; attempt++) {
      port = await freePort();
      try {
        await launch();
        break;
      } catch (error) {
        if ((error as Error).message !== 'port taken' || attempt >= 5) throw error;
      }
    }
  } catch (error) {
    await shutDown();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  process.on('exit', onExit);

  let busy: Promise<void> = Promise.resolve();
  /** One lifecycle operation at a time. */
  const serial = (op: () => Promise<void>): Promise<void> => {
    const next = busy.then(op, op);
    busy = next.catch(() => {});
    return next;
  };

  return {
    url: url(),
    port,
    dataDir,
    version: bin.version,
    major: bin.major,
    createDatabase: (name?: string) => createDatabaseAt(url(), name),
    processIds,
    stop: () =>
      serial(async () => {
        if (stopped) return;
        stopped = true;
        await shutDown();
        process.off('exit', onExit);
        await rm(dir, { recursive: true, force: true });
      }),
    restart: () =>
      serial(async () => {
        if (stopped) throw new Error('restart: the cluster was stopped');
        await shutDown();
        try {
          await launch();
        } catch (error) {
          const message = (error as Error).message;
          throw new Error(
            message === 'port taken'
              ? `restart: port ${port} is taken by another process now; server log:\n${logTail()}`
              : message,
          );
        }
      }),
    kill: () =>
      serial(async () => {
        const pids = processIds();
        if (pids.length === 0) return;
        // Every backend dies at once; the postmaster reaps them and, with restart_after_crash=off, exits without a
        // shutdown checkpoint. (SIGKILLing the postmaster itself would leave its children to init, and some inits,
        // in containers, never reap them: zombies.)
        signal(pids.slice(1), 'SIGKILL');
        const timedOut = await Promise.race([exited.then(() => false), sleep(10_000, true, { ref: false })]);
        if (timedOut) signal(processIds(), 'SIGKILL');
        await exited;
        await waitGone(pids, 5_000);
      }),
  };
}
