/**
 * `blue-agent capture --harness H --profile P`: the managed session-end hook. Prints nothing on success and one line
 * on stderr when the capture is refused or fails (details in capture.log); exits 0 or 1.
 */
import type { Readable } from 'node:stream';
import type { Context } from '../context.js';
import { EXIT_FAILURE, EXIT_OK } from '@blue-agent/contract/errors.js';
import { runCaptureHook, type CaptureArgs, type HookOptions } from '../capture/hook.js';

export async function captureCommand(
  ctx: Context,
  args: CaptureArgs,
  stdin: Readable = process.stdin,
  options: Omit<HookOptions, 'stdin'> = {},
): Promise<number> {
  const outcome = await runCaptureHook(ctx, args, { ...options, stdin });
  if (outcome.ok) return EXIT_OK;
  ctx.stderr.write(
    `blue-agent capture: ${outcome.code === 'CAPTURE_REFUSED' ? 'refused' : `failed [${outcome.code}]`}: ` +
      `${outcome.message}\n`,
  );
  return EXIT_FAILURE;
}
