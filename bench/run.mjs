// Runs every benchmark; each prints its ratio against an anchor measured in the same run.
import { run as reconcileNoop } from './reconcile-noop.mjs';

const results = [await reconcileNoop()];
process.exitCode = results.every(Boolean) ? 0 : 1;
