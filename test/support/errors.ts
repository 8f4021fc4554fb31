/**
 * Catching the BlueError a call is expected to throw, so a test can go on to check its code, message and position.
 */
import { expect } from 'vitest';
import { BlueError } from '../../packages/contract/src/errors.js';

/** Runs `fn`, expects it to throw a BlueError, and returns that error. */
export function thrown(fn: () => unknown): BlueError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(BlueError);
    return error as BlueError;
  }
  throw new Error('expected a BlueError');
}

/** Awaits `work` (a promise, or a function run first), expects it to reject with a BlueError, and returns that error.
 * */
export async function rejected(work: Promise<unknown> | (() => unknown)): Promise<BlueError> {
  try {
    await (typeof work === 'function' ? work() : work);
  } catch (error) {
    expect(error).toBeInstanceOf(BlueError);
    return error as BlueError;
  }
  throw new Error('expected a BlueError');
}
