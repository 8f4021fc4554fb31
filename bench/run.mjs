// Runs every benchmark; each prints its ratio against an anchor measured in the same run.
import { run as reconcileNoop } from './reconcile-noop.mjs';
import { run as bundle } from './bundle.mjs';

const results = [await reconcileNoop(), await bundle()];
results.push(await (await import('./capture.mjs')).run());
process.exitCode = results.every(Boolean) ? 0 : 1;
