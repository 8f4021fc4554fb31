// Runs every benchmark; each prints its ratio against an anchor measured in the same run (startup.mjs: what each
// start-up measure saves, with and without it).
import { run as bundle } from './bundle.mjs';
import { run as capture } from './capture.mjs';
import { run as controlUploads } from './control-uploads.mjs';
import { run as drain } from './drain.mjs';
import { run as drainConcurrent } from './drain-concurrent.mjs';
import { run as reconcileLarge } from './reconcile-large.mjs';
import { run as reconcileNoop } from './reconcile-noop.mjs';
import { run as runIdle } from './run-idle.mjs';
import { run as search } from './search.mjs';
import { run as startup } from './startup.mjs';
import { run as upload } from './upload.mjs';

const results = [
  await reconcileNoop(),
  await capture(),
  await bundle(),
  await drain(),
  await drainConcurrent(),
  await upload(),
  await runIdle(),
  await reconcileLarge(),
  await controlUploads(),
  await search(),
  await startup(),
];
process.exitCode = results.every(Boolean) ? 0 : 1;
