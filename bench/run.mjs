// Runs every benchmark; each prints its ratio against an anchor measured in the same run.
import { run as bundle } from './bundle.mjs';
import { run as capture } from './capture.mjs';
import { run as reconcileNoop } from './reconcile-noop.mjs';

const results = [await reconcileNoop(), await capture(), await bundle()];
process.exitCode = results.every(Boolean) ? 0 : 1;
