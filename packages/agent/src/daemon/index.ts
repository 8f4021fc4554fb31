/**
 * `blue-agent run`: the long-running agent (daemon.ts) and what it can be told at start (options.ts). Its loops and
 * watches each have their own file (drains, sweeps, policy-push, schedule, watcher, session-watch), as have the steps
 * it runs in child processes (tasks.ts, task-process.ts) and the state it leaves for `status` (state.ts).
 */
export { Daemon } from './daemon.js';
export type { DaemonOptions } from './options.js';
