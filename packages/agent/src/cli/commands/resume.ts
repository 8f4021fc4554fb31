import type { CommandDeclaration } from '../declaration.js';

export const resume: CommandDeclaration = {
  usage: 'resume [id]',
  summary: "pick one of your (or shared) sessions, restore it into this machine's native layout and resume it",
  options: [
    { flags: '--dest <dir>', description: 'restore for this existing directory instead of asking' },
    {
      flags: '--yes',
      description:
        'answer yes to the final prompt (for scripts); a repository mismatch is never accepted by --yes: confirm ' +
        'it at a terminal',
    },
    { flags: '--no-launch', description: 'restore, then print the resume command instead of running it' },
    {
      flags: '--json',
      description: 'print the result as JSON; needs an id, never asks; without --yes only the plan, nothing written',
    },
  ],
  help: `
Steps: pick the session (or name it by its id or an 8+ character prefix), choose the directory to resume in,
download it through a fresh short-lived URL, verify it, check that this machine can resume it (the harness is
installed, its version is allowed for the session's profile, the directory is the same repository, no different
local copy of the session), ask before writing (default No), restore every file at once or none, and run the
harness's own resume there. Cancelling at any question, or any failure before the restore, changes nothing.

Examples:
  blue-agent resume                                   # pick from a list, on a terminal
  blue-agent resume 3f2a91c0 --dest ~/src/shop        # by id prefix, into that directory
  blue-agent resume 3f2a91c0 --dest . --yes --no-launch   # scripts: restore, print the command`,
  run: async (ctx, id: string | undefined, opts: { dest?: string; yes?: boolean; launch?: boolean; json?: boolean }) =>
    (await import('../resume.js')).resumeCommand(ctx, id, opts),
};
