import type { CommandDeclaration } from '../declaration.js';

export const drain: CommandDeclaration = {
  usage: 'drain',
  summary: 'process the spool now: build bundles for waiting captures, then upload the built ones',
  options: [
    { flags: '--once', description: 'one pass over what is waiting now, even if more captures arrive meanwhile' },
    { flags: '--json', description: 'print what was done as JSON' },
    { flags: '--quiet', description: 'print nothing (for the detached worker)' },
    {
      flags: '--discard',
      description:
        'when the governance policy disables session upload, delete the built bundles instead of keeping them',
    },
    {
      flags: '--linger',
      description:
        'follow the captures that wait for their harness to exit until it has (12 h at most), building each then ' +
        '(what the capture hook starts; one such drain at a time, which the others leave their captures to)',
    },
  ],
  help: `
Builds a bundle for every waiting capture, then uploads every built bundle that is due to the Control API
(control_url or BLUE_AGENT_CONTROL_URL, with the token from blue-agent login or BLUE_AGENT_TOKEN). An uploaded
bundle is removed from the spool once the Control API has verified it; a failed upload is retried by a later
drain (see \`blue-agent spool list\` for attempts and the last error).

Before uploading, the current governance policy is checked. When it has no session_upload block, session
upload is disabled: nothing is uploaded and the built bundles are KEPT in the spool, so they can still be
uploaded if upload is enabled again. With --discard they are deleted instead (they cannot be recovered).
With no Control API configured, nothing is uploaded and the bundles stay in the spool.

Without --once, a drain makes another pass when captures arrived while it ran (at most 5 passes), so the
last capture of a burst does not wait for the next drain. Records waiting for a later retry are left for a later
drain either way: a drain never sleeps through a back-off. A capture whose harness fires its hook after every turn
(its profile says wait_for_exit) is built once that harness process has exited; until then it is listed as deferred,
which is not a failure. A record another drain is building or uploading is listed as held, with that drain's pid.

Exit codes: 0 everything went through; 1 a record failed, is to be retried or left waiting, or the drain stopped
early; 75 nothing failed, but another drain held records: run it again later to learn their outcome.`,
  run: async (ctx, opts: { once?: boolean; json?: boolean; quiet?: boolean; discard?: boolean; linger?: boolean }) =>
    (await import('../drain.js')).drainCommand(ctx, opts),
};
