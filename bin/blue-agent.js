#!/usr/bin/env node
// Entry point: kept tiny so start-up cost stays in the commands that need it.
import module from 'node:module';

// Reuse V8's compiled code across runs: the capture hook and reconcile are short-lived processes.
module.enableCompileCache?.();
const { main } = await import('../dist/main.js');
process.exitCode = await main(process.argv.slice(2));
