/**
 * The Control API is a package of its own (@blue-agent/control-api), which `control-plane` and `demo` import when
 * they run, from its dist/: blue-agent installed alone has no server in it. Without the package, that import's failure
 * becomes a BlueError that says how to add it.
 */
import { BlueError } from '@blue-agent/contract/errors.js';

/** The error as it was, or, when it says the Control API's package (or its build) is missing, the BlueError. */
export function controlApiMissing(error: unknown): unknown {
  const failure = error as { code?: unknown; message?: unknown } | null | undefined;
  if (failure?.code !== 'ERR_MODULE_NOT_FOUND' || typeof failure.message !== 'string') return error;
  if (failure.message.includes("'@blue-agent/control-api'")) {
    return new BlueError(
      'CONTROL_API_NOT_INSTALLED',
      'the Control API is not installed: it is the @blue-agent/control-api package, beside blue-agent',
      {
        hint:
          'Install it with `npm install -g @blue-agent/control-api` (or run blue-agent from a checkout, which ' +
          'has it).',
        cause: error,
      },
    );
  }
  if (/[\\/]control-api[\\/]dist[\\/]/.test(failure.message)) {
    return new BlueError('CONTROL_API_NOT_INSTALLED', 'the Control API package is not built', {
      hint: 'Run `npm run build` in the checkout (the `blue-agent` launcher does it when the build is missing).',
      cause: error,
    });
  }
  return error;
}
