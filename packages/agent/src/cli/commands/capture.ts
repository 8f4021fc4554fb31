import { HARNESSES } from '../../harnesses/names.js';
import type { CommandDeclaration } from '../declaration.js';

export const capture: CommandDeclaration = {
  usage: 'capture',
  summary: 'the session-end hook: spool the ended session for upload (called by the harness, not by people)',
  options: [
    { flags: '--harness <name>', description: `the harness calling (${HARNESSES.join(', ')})`, required: true },
    {
      flags: '--profile <profile>',
      description: 'the compatibility profile the hook was installed for',
      required: true,
    },
  ],
  help: `
Reads the harness's lifecycle payload (JSON, at most 1 MiB) from stdin, writes a small intake record into the spool
and starts a detached worker that builds the bundle, then exits at once: the harness is never kept waiting.
A refused or failed capture is logged in the state directory's capture.log.`,
  run: async (ctx, opts: { harness: string; profile: string }) =>
    (await import('../capture.js')).captureCommand(ctx, opts),
};
