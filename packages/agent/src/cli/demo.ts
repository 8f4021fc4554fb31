/**
 * `blue-agent demo [--json] [--keep] [--port N]`: the whole loop in throwaway directories (src/demo/). This module
 * prints the steps as they end, and turns Ctrl-C into a clean stop: the running step is ended, the temporary
 * directories are removed (unless --keep), and the exit code is 130 (143 for SIGTERM). A second signal exits at once.
 */
import type { Context } from '../context.js';
import { DemoStepError, short, type DemoReport, type StepResult } from '../demo/index.js';
import { escapeControls } from '@blue-agent/contract/util/terminal-text.js';

export interface DemoCommandOptions {
  json?: boolean;
  keep?: boolean;
  port?: number;
}

export async function demoCommand(ctx: Context, opts: DemoCommandOptions): Promise<number> {
  const { runDemo } = await import('../demo/index.js');
  const json = opts.json === true;
  const abort = new AbortController();
  const onSignal = (signal: NodeJS.Signals): void => {
    if (abort.signal.aborted) process.exit(signal === 'SIGTERM' ? 143 : 130);
    abort.abort(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  const out = (line: string) => void ctx.stdout.write(`${escapeControls(line)}\n`);
  let root = '';
  const started = performance.now();
  try {
    const report = await runDemo(ctx, {
      keep: opts.keep === true,
      ...(opts.port === undefined ? {} : { port: opts.port }),
      signal: abort.signal,
      onStart: ({ root: dir, asset }) => {
        root = dir;
        if (json) return;
        out('blue-agent demo: capture, upload and restore of a session, on this machine, without a model API.');
        out(
          `  Everything happens under DEMO=${dir}, in throwaway HOMEs (A captures, B restores); your own HOME, ` +
            `configs and harness variables are not read or written.`,
        );
        out(
          '  real:     the reference Control API (in this process, on loopback) and the blue-agent commands it ' +
            'runs: login, reconcile,',
        );
        out(
          '            the managed capture hook as reconcile wrote it, the capture worker, drain, sessions list, ' +
            'resume',
        );
        out(
          `  recorded: a ${asset.displayName} ${asset.version} session recorded offline from the real CLI (shipped ` +
            `with blue-agent), and a stand-in`,
        );
        out(
          `            \`${asset.binary}\` on PATH that only answers --version; no model is called and no real ` +
            `${asset.displayName} runs`,
        );
      },
      onStep: (step) => {
        if (!json) printStep(out, root, step);
      },
    });
    if (json) ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else printEnd(out, report, performance.now() - started);
    return 0;
  } catch (error) {
    const report = (error as { report?: DemoReport }).report;
    if (json && error instanceof DemoStepError && report !== undefined) {
      ctx.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return error.exitCode;
    }
    if (!json && report !== undefined)
      out(report.kept ? `Kept DEMO=${report.root} for inspection.` : `Removed DEMO=${report.root}.`);
    throw error;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

const WIDTH = Math.max(
  ...['control-api', 'reconcile', 'capture', 'restore', 'session', 'harness', 'drain', 'login', 'list'].map(
    (s) => s.length,
  ),
);

function printStep(out: (line: string) => void, root: string, step: StepResult): void {
  const head = `${String(step.n).padStart(2)}. ${step.id.padEnd(WIDTH)}  `;
  out(
    step.ok
      ? `${head}${short(root, step.summary)} (${step.ms} ms)`
      : `${head}FAILED ${short(root, step.summary)} (after ${step.ms} ms)`,
  );
  for (const note of step.notes) out(`${' '.repeat(head.length)}${short(root, note)}`);
}

function printEnd(out: (line: string) => void, report: DemoReport, ms: number): void {
  out(`Done: ${report.steps.length} steps in ${(ms / 1000).toFixed(1)} s.`);
  if (!report.kept) {
    out(`Removed DEMO=${report.root} (pass --keep to look at it afterwards).`);
    return;
  }
  const port = report.control_url === null ? '' : new URL(report.control_url).port;
  out(`Kept DEMO=${report.root}:`);
  out(`  HOME A (captured): $DEMO/a/home   HOME B (restored): $DEMO/b/home   Control API data: $DEMO/control`);
  out(
    '  The Control API has stopped; to look at it again: ' +
      `blue-agent control-plane serve --data ${report.root}/control --listen 127.0.0.1:${port}`,
  );
  out(`  Remove it when done: rm -rf ${report.root}`);
}
