/** A full disk or an exhausted quota, told apart from other errors and reported as SPOOL_FULL. */
import { BlueError } from '@blue-agent/contract/errors.js';
import { errno } from './fs.js';

/** True for the errors a full disk or an exhausted quota gives. */
export function isDiskFull(error: unknown): boolean {
  const code = errno(error);
  return code === 'ENOSPC' || code === 'EDQUOT' || (error instanceof BlueError && error.code === 'SPOOL_FULL');
}

export function fullDiskError(error: unknown, where: string): BlueError | undefined {
  if (!isDiskFull(error) || error instanceof BlueError) return undefined;
  return new BlueError('SPOOL_FULL', `no space left on the disk that holds ${where} (${errno(error)})`, {
    file: where,
    hint: 'Free some disk space; captures already in the spool are kept and built later.',
    cause: error,
  });
}

export function mapFull(where: string): (error: unknown) => never {
  return (error) => {
    throw fullDiskError(error, where) ?? error;
  };
}

export function ignoreExists(where: string): (error: unknown) => void {
  return (error) => {
    if (errno(error) === 'EEXIST') return;
    throw fullDiskError(error, where) ?? error;
  };
}
