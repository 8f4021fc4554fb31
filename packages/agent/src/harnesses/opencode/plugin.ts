/**
 * The OpenCode plugin that is the managed capture hook. OpenCode has no session-end hook, so the plugin watches the
 * event bus: when a top-level session goes idle (a run finished) and stays idle for a few seconds, it starts
 * `blue-agent capture` detached, with a one-line JSON payload on stdin.
 *
 * OpenCode imports every `*.js`/`*.ts` in `<config>/plugin/` (and `plugins/` in newer versions) and calls every export
 * of the module as a plugin, so the file exports exactly one function. The plugin's event handler is called without
 * being awaited and a throw would reach OpenCode's own listener, so every path is guarded and returns at once.
 */
import type { ManagedHook } from '../types.js';

/** First line of every plugin file blue-agent writes; recognising a file as ours starts here. */
export const PLUGIN_HEADER = '// @blue-agent-managed opencode-session-upload';

const ARGV_LINE = /^const CAPTURE_ARGV = (.*);\r?$/m;

export interface PluginTimings {
  /** How long a session must stay idle before capture starts; a newer idle of the same session restarts it. */
  debounceMs: number;
  /** Upper bound on asking OpenCode whether an unknown session is a child session. */
  lookupTimeoutMs: number;
}

export const DEFAULT_TIMINGS: PluginTimings = { debounceMs: 3000, lookupTimeoutMs: 2000 };

/** The plugin source for `hook`: plain ESM JavaScript, no dependencies, byte-for-byte deterministic. */
export function renderPlugin(hook: ManagedHook, timings: PluginTimings = DEFAULT_TIMINGS): string {
  const timeoutMs = Math.max(1, Math.ceil(hook.timeoutSeconds)) * 1000;
  return (
    `${PLUGIN_HEADER}
// blue-agent installed this OpenCode plugin to upload finished sessions (${hook.profile}).
// \`blue-agent reconcile\` rewrites or deletes this file; local edits are overwritten.
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const CAPTURE_ARGV = ${JSON.stringify(hook.argv)};
const CAPTURE_TIMEOUT_MS = ${timeoutMs};
const DEBOUNCE_MS = ${Math.max(0, Math.round(timings.debounceMs))};
const LOOKUP_TIMEOUT_MS = ${Math.max(1, Math.round(timings.lookupTimeoutMs))};
const MAX_TRACKED_SESSIONS = 1000;

// One process-wide exit hook: captures still waiting for their debounce are started before OpenCode exits.
const flushers = new Set();
let exitHooked = false;

function hookExit() {
  if (exitHooked) return;
  exitHooked = true;
  try {
    process.once("exit", () => {
      for (const flush of flushers) {
        try {
          flush();
        } catch {}
      }
    });
  } catch {}
}

// The payload goes through a file the child reads as its stdin, never through a pipe: OpenCode may exit right after a
// capture starts (\`opencode run\` ends as its session goes idle), and a write to a pipe that is still queued when the
// process exits is lost (seen with OpenCode 1.2.1 at exit, and now and then with 1.18 just before it). A pipe is the
// fallback when no file can be made.
function payloadFile(payload) {
  let dir;
  try {
    dir = mkdtempSync(join(tmpdir(), "blue-agent-capture-"));
    const file = join(dir, "payload.json");
    writeFileSync(file, payload, { mode: 0o600 });
    return openSync(file, "r");
  } catch {
    return undefined;
  } finally {
    // The open descriptor keeps the data readable; the name is not needed any more.
    try {
      if (dir) rmSync(dir, { recursive: true, force: true });
    } catch {}
  }
}

function startCapture(sessionID, cwd) {
  try {
    const payload = JSON.stringify({ session_id: sessionID, cwd, hook_event_name: "session.idle", ` +
    `reason: "idle" }) + "\\n";
    const fd = payloadFile(payload);
    const options = { detached: true, stdio: [fd === undefined ? "pipe" : fd, "ignore", "ignore"], windowsHide: true };
    if (typeof cwd === "string" && cwd !== "" && existsSync(cwd)) options.cwd = cwd;
    let child;
    try {
      child = spawn(CAPTURE_ARGV[0], CAPTURE_ARGV.slice(1), options);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
    child.on("error", () => {});
    if (fd === undefined && child.stdin) {
      child.stdin.on("error", () => {});
      child.stdin.end(payload);
    }
    // The kill timer is unref'd: it bounds the capture without keeping OpenCode alive.
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {}
    }, CAPTURE_TIMEOUT_MS);
    if (typeof timer.unref === "function") timer.unref();
    child.once("exit", () => clearTimeout(timer));
    child.unref();
  } catch {}
}

function createHooks(input) {
  const fallbackDirectory = typeof input.directory === "string" && input.directory !== "" ` +
    `? input.directory : process.cwd();
  const client = input.client;
  const sessions = new Map();
  const pending = new Map();

  const remember = (info) => {
    if (!info || typeof info.id !== "string") return;
    sessions.delete(info.id);
    sessions.set(info.id, {
      child: typeof info.parentID === "string" && info.parentID !== "",
      directory: typeof info.directory === "string" && info.directory !== "" ? info.directory : undefined,
    });
    while (sessions.size > MAX_TRACKED_SESSIONS) sessions.delete(sessions.keys().next().value);
  };

  // Asks OpenCode about a session the plugin has not seen created (it started before the plugin loaded).
  const lookup = (id) =>
    new Promise((resolve) => {
      const known = sessions.get(id);
      if (known) return resolve(known);
      const api = client && client.session;
      if (!api || typeof api.get !== "function") return resolve(undefined);
      const timer = setTimeout(() => resolve(undefined), LOOKUP_TIMEOUT_MS);
      if (typeof timer.unref === "function") timer.unref();
      Promise.resolve()
        .then(() => api.get({ path: { id } }))
        .then(
          (result) => {
            const info = result && typeof result === "object" && "data" in result ? result.data : result;
            if (info && info.id === id) remember(info);
          },
          () => {},
        )
        .then(() => {
          clearTimeout(timer);
          resolve(sessions.get(id));
        });
    });

  const fire = (id, mayLookup) => {
    pending.delete(id);
    const start = (known) => {
      if (known && known.child) return;
      startCapture(id, (known && known.directory) || fallbackDirectory);
    };
    if (!mayLookup) return start(sessions.get(id));
    lookup(id).then(start, () => start(undefined));
  };

  const schedule = (id) => {
    const known = sessions.get(id);
    if (known && known.child) return;
    const previous = pending.get(id);
    if (previous) clearTimeout(previous);
    const timer = setTimeout(() => {
      try {
        fire(id, true);
      } catch {}
    }, DEBOUNCE_MS);
    if (typeof timer.unref === "function") timer.unref();
    pending.set(id, timer);
    hookExit();
  };

  const cancel = (id) => {
    const timer = pending.get(id);
    if (timer) clearTimeout(timer);
    pending.delete(id);
  };

  const flush = () => {
    for (const [id, timer] of [...pending]) {
      clearTimeout(timer);
      fire(id, false);
    }
  };
  flushers.add(flush);

  return {
    event: async (arg) => {
      try {
        const event = arg && arg.event;
        const type = event && event.type;
        const properties = (event && event.properties) || {};
        if (type === "session.created" || type === "session.updated") {
          remember(properties.info);
        } else if (type === "session.deleted") {
          const id = properties.info && properties.info.id;
          if (typeof id === "string") {
            cancel(id);
            sessions.delete(id);
          }
        } else if (type === "session.idle" && typeof properties.sessionID === "string") {
          schedule(properties.sessionID);
        }
      } catch {}
    },
    dispose: async () => {
      try {
        flush();
        flushers.delete(flush);
      } catch {}
    },
  };
}

export const BlueAgentSessionUpload = async (input) => {
  try {
    return createHooks(input || {});
  } catch {
    return {};
  }
};
`
  );
}

/** True when `text` begins with the managed header (a byte-order mark and CRLF tolerated). */
export function hasPluginHeader(text: string): boolean {
  const first = text
    .replace(/^\uFEFF/, '')
    .split('\n', 1)[0]!
    .replace(/\r$/, '');
  return first === PLUGIN_HEADER || first.startsWith(`${PLUGIN_HEADER} `);
}

/** The argument vector embedded in a plugin file, or undefined when there is none that reads as a string array. */
export function embeddedArgv(text: string): string[] | undefined {
  const match = ARGV_LINE.exec(text);
  if (match === null) return undefined;
  try {
    const value: unknown = JSON.parse(match[1]!);
    if (Array.isArray(value) && value.every((word) => typeof word === 'string')) return value as string[];
  } catch {
    // Not JSON: not a file this agent wrote.
  }
  return undefined;
}
