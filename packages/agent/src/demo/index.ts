/**
 * `blue-agent demo`: the whole loop on this machine, without a model API, in throwaway directories.
 *
 * Real: the reference Control API (in this process, on an ephemeral loopback port, its data in a temporary folder),
 * and, each as a child process of this very blue-agent with a scrubbed environment, `login`, `reconcile`, the
 * managed capture hook exactly as reconcile wrote it into the harness's hook file (run with `sh -c`, the SessionEnd
 * payload on stdin, as the harness runs it), the detached capture worker, `drain`, `sessions list` and
 * `resume --yes --no-launch`. Recorded: a session of the registry's demo harness (shipped in demo/, recorded from
 * the real CLI) and the harness's executable on PATH, a stand-in that only answers `--version` with the recorded
 * version. The adapter's demo facet says where each of these lives; this module names no harness.
 *
 * Every step is bounded in time and abortable (Ctrl-C); a failed step is a DemoStepError naming the step and the
 * cause's code. The temporary root is removed at the end unless `keep`.
 */
export {
  STEPS,
  type StepId,
  STEP_TIMEOUT_MS,
  type StepResult,
  type StepCause,
  DemoStepError,
  type DemoOptions,
  type DemoReport,
} from './steps.js';
export { short } from './child.js';
export { DEMO_USER, runDemo } from './run.js';
