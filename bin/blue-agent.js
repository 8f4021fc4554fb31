#!/usr/bin/env node
// Entry point: kept tiny so start-up cost stays in the commands that need it.
import { main } from '../dist/cli/main.js';

process.exitCode = await main(process.argv.slice(2));
