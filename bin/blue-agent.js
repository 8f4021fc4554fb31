#!/usr/bin/env node
// Entry point: kept tiny so start-up cost stays in the commands that need it. The Node.js version is checked before
// anything else loads (this file avoids syntax an old Node.js cannot parse, so that the check gets to run).
import module from 'module';
import { checkNodeVersion } from './node-version.js';

if (checkNodeVersion(process)) {
  // Reuse V8's compiled code across runs: the capture hook and reconcile are short-lived processes.
  if (typeof module.enableCompileCache === 'function') module.enableCompileCache();
  import('../dist/main.js')
    .then(function (loaded) {
      return loaded.main(process.argv.slice(2));
    })
    .then(function (code) {
      process.exitCode = code;
    });
}
