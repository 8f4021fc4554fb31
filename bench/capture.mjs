// The capture hook as the harness runs it (a real process, the payload on stdin): the sh hook reconcile installs
// (`sh bin/blue-agent-hook NODE ENTRY capture ...`) with a 1 KiB and with a 100 MiB transcript, beside bare Node
// start-up (`node -e 0`, same stdin) measured in the same run. Targets: each at most 0.5x bare Node (the harness only
// needs the payload handed over safely and the drain started), and the two within 10% of each other (the hook does no
// work that grows with the session). Then the same while a drain builds a backlog of 100 MiB sessions: the hook must
// stay at 0.5x of a Node start-up made under the same load. `node ENTRY capture` (the hook without sh) is shown too.
//
// Every capture starts the detached drain, which then admits and builds (or refuses) a bundle. It is not part of what
// the harness waits for, so it is not timed; but it must not steal CPU from the next timed run either, so after every
// capture the bench waits, untimed, until that capture's drain has finished with it and exited.
import { spawn, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { median } from './lib.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = path.join(root, 'packages', 'agent', 'bin', 'blue-agent.js');
const shHook = path.join(root, 'packages', 'agent', 'bin', 'blue-agent-hook');
const MiB = 1024 * 1024;
const PROFILE = 'claude-v2_0_12';
const TARGET = 0.5;

export async function run({ rounds = 8, runs = 2, loadRounds = 10 } = {}) {
  const dir = await mkdtemp(path.join(tmpdir(), 'blue-agent-bench-capture-'));
  try {
    const home = path.join(dir, 'home');
    const stateDir = path.join(home, '.local', 'state', 'blue-agent');
    const cwd = path.join(dir, 'project');
    const projects = path.join(home, '.claude', 'projects', cwd.replace(/[^A-Za-z0-9]/g, '-'));
    await mkdir(projects, { recursive: true });
    await mkdir(cwd, { recursive: true });
    const small = await transcript(projects, '11111111-1111-4111-8111-111111111111', 1024);
    const large = await transcript(projects, '22222222-2222-4222-8222-222222222222', 100 * MiB);
    const env = {
      ...process.env,
      HOME: home,
      CLAUDE_CONFIG_DIR: path.join(home, '.claude'),
      XDG_CONFIG_HOME: path.join(home, '.config'),
      XDG_STATE_HOME: path.join(home, '.local', 'state'),
      BLUE_AGENT_HOME: stateDir,
      BLUE_AGENT_CONFIG: path.join(home, '.config', 'blue-agent', 'config.yaml'),
    };
    const args = ['capture', '--harness', 'claude', '--profile', PROFILE];
    const hook = ['/bin/sh', shHook, process.execPath, entry, ...args];
    const nodeHook = [process.execPath, entry, ...args];
    const anchor = [process.execPath, '-e', '0'];
    const payload = (t) => {
      const fields = { session_id: t.id, transcript_path: t.file, cwd, hook_event_name: 'SessionEnd', reason: 'other' };
      return `${JSON.stringify(fields)}\n`;
    };

    const once = async (argv, input, waitForDrain) => {
      const before = waitForDrain ? spooledCount(stateDir) : 0;
      const start = process.hrtime.bigint();
      const result = spawnSync(argv[0], argv.slice(1), { env, cwd, input, stdio: ['pipe', 'ignore', 'pipe'] });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (result.status !== 0) throw new Error(`${argv.join(' ')} exited ${result.status}: ${result.stderr}`);
      if (waitForDrain) await drainDone(stateDir, before);
      return ms;
    };

    // Warm-up: the first capture validates the profiles into the document cache, as reconcile would have.
    await once(hook, payload(small), true);
    await once(hook, payload(large), true);
    await once(nodeHook, payload(small), true);
    await once(anchor, payload(small), false);
    const times = { node: [], small: [], large: [], nodeHook: [] };
    // Interleaved, and the order of the two transcripts alternates, so machine noise hits all three alike.
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < runs; i++) {
        times.node.push(await once(anchor, payload(small), false));
        const order = (r + i) % 2 === 0 ? ['small', 'large'] : ['large', 'small'];
        for (const which of order)
          times[which].push(await once(hook, payload(which === 'small' ? small : large), true));
      }
      times.nodeHook.push(await once(nodeHook, payload(small), true));
    }
    const nodeMs = median(times.node);
    const smallMs = median(times.small);
    const largeMs = median(times.large);
    const ratios = {
      small: smallMs / nodeMs,
      large: largeMs / nodeMs,
      spread: Math.max(smallMs, largeMs) / Math.min(smallMs, largeMs),
    };
    const pass = ratios.small <= TARGET && ratios.large <= TARGET && ratios.spread <= 1.1;
    console.log(
      `capture hook (sh): 1 KiB transcript ${smallMs.toFixed(1)} ms (${ratios.small.toFixed(2)}x), 100 MiB ` +
        `transcript ${largeMs.toFixed(1)} ms ` +
        (`(${ratios.large.toFixed(2)}x) vs node -e 0 ${nodeMs.toFixed(1)} ms (target <= ${TARGET}x); 100 MiB / 1 ` +
          `KiB ${ratios.spread.toFixed(2)} `) +
        (`(target <= 1.10) ${pass ? 'PASS' : 'FAIL'}; \`node ENTRY capture\` for comparison: ` +
          `${median(times.nodeHook).toFixed(1)} ms (${(median(times.nodeHook) / nodeMs).toFixed(2)}x)`),
    );

    // Under load: a drain builds a backlog of 100 MiB captures (handed over by hooks that started no drain of their
    // own) while the hook and the anchor are timed, interleaved. The timed hooks start no drain either (the running
    // drain admits their captures): what is timed is the hook's own work, under a drain's competition for the CPU.
    const quietHook = ['/bin/sh', shHook, '/bin/true', entry, ...args];
    for (let i = 0; i < 8; i++) await once(quietHook, payload(large), false);
    const drainer = spawn(process.execPath, [entry, 'drain', '--quiet'], { env, cwd, stdio: 'ignore' });
    const exited = new Promise((resolve) => drainer.on('exit', resolve));
    let drainRunning = true;
    exited.then(() => (drainRunning = false));
    await sleep(300);
    const loaded = { node: [], hook: [] };
    for (let r = 0; r < loadRounds && drainRunning; r++) {
      loaded.node.push(await once(anchor, payload(small), false));
      loaded.hook.push(await once(quietHook, payload(large), false));
    }
    const stillRunning = drainRunning;
    await exited;
    if (!stillRunning || loaded.hook.length < 3)
      console.log(
        'capture hook while a drain runs: the drain ended before enough runs were timed (it was faster than expected)',
      );
    const loadedNode = median(loaded.node);
    const loadedHook = median(loaded.hook);
    const loadedPass = loaded.hook.length >= 3 && loadedHook / loadedNode <= TARGET;
    console.log(
      `capture hook (sh) while a drain builds 100 MiB sessions: ${loadedHook.toFixed(1)} ms vs node -e 0 ` +
        `${loadedNode.toFixed(1)} ms under the same load ` +
        (`-> ${(loadedHook / loadedNode).toFixed(2)}x (target <= ${TARGET}x, ${loaded.hook.length} runs) ` +
          `${loadedPass ? 'PASS' : 'FAIL'}`),
    );
    return pass && loadedPass;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A Claude-like JSONL transcript of about `bytes` bytes. */
async function transcript(dir, id, bytes) {
  const file = path.join(dir, `${id}.jsonl`);
  const message = { role: 'user', content: 'x'.repeat(900) };
  const line = `${JSON.stringify({ type: 'user', sessionId: id, message })}\n`;
  const block = Buffer.from(line.repeat(Math.max(1, Math.floor(MiB / line.length))));
  const handle = await open(file, 'w');
  try {
    if (bytes <= block.length) await handle.write(block.subarray(0, bytes));
    else
      for (let written = 0; written < bytes; written += block.length)
        await handle.write(block.subarray(0, Math.min(block.length, bytes - written)));
    // On disk before timing starts: writeback of 100 MiB must not slow the hook's own fsyncs.
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { id, file };
}

function logLines(stateDir) {
  try {
    return readFileSync(path.join(stateDir, 'capture.log'), 'utf8')
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line));
  } catch {
    return [];
  }
}

function spooledCount(stateDir) {
  return logLines(stateDir).filter((line) => line.event === 'spooled').length;
}

/**
 * Waits until the drain the hook started has admitted the capture (a new `spooled` line), dealt with it and exited
 * (at most 60 s). capture.log names the record and, in the drain's own lines about it, the drain's pid.
 */
async function drainDone(stateDir, spooledBefore) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const lines = logLines(stateDir);
    const spooled = lines.filter((line) => line.event === 'spooled');
    if (spooled.length > spooledBefore) {
      const record = spooled.at(-1).record;
      const done = lines.find(
        (line) => line.record === record && ['built', 'unchanged', 'build_failed', 'retry'].includes(line.event),
      );
      const inbox = readdirSync(path.join(stateDir, 'spool', 'inbox')).filter((name) => name.endsWith('.hook'));
      if (done !== undefined && !running(done.pid) && inbox.length === 0) break;
    }
    if (Date.now() > deadline) throw new Error('the drain the capture hook started did not finish within 60 s');
    await sleep(10);
  }
}

/** True while the process runs; on Linux an exited process that nobody has reaped yet (a zombie) does not count. */
function running(pid) {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if (error.code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^[ZX]/.test(stat.slice(stat.lastIndexOf(')') + 2));
  } catch {
    return true;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) process.exitCode = (await run()) ? 0 : 1;
