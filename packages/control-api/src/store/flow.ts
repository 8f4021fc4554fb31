/**
 * What the store does, written once for both databases: a flow is a generator that hands each repository call's result
 * out (`yield* step(call)`) and is given it back. A SQLite repository answers at once, and its driver runs the flow to
 * the end inside one synchronous transaction: a transaction that awaited would let another request's statements run
 * inside it, on the one connection. A PostgreSQL repository answers with promises, and its driver awaits each step on
 * the transaction's client.
 */
export type Flow<T> = Generator<unknown, T, unknown>;

/** A repository call's result: a value (SQLite) or a promise of it (PostgreSQL). */
export type Step<T> = T | Promise<T>;

/** The result of a repository call, inside a flow. */
export function* step<T>(call: Step<T>): Generator<Step<T>, T, unknown> {
  return (yield call) as T;
}

/** Runs a flow whose every step answers at once (SQLite), to the end. */
export function runSync<T>(flow: Flow<T>): T {
  let next = flow.next();
  while (next.done !== true) {
    if (next.value instanceof Promise) throw new Error('a synchronous flow was given a promise');
    next = flow.next(next.value);
  }
  return next.value;
}

/** Runs a flow, awaiting each step (PostgreSQL); a step's failure is thrown into the flow. */
export async function runAsync<T>(flow: Flow<T>): Promise<T> {
  let next = flow.next();
  while (next.done !== true) {
    let value: unknown;
    try {
      value = await next.value;
    } catch (error) {
      next = flow.throw(error);
      continue;
    }
    next = flow.next(value);
  }
  return next.value;
}

/** Where a topic's flows run: each in one transaction of the backend's, over the topic's repository. */
export interface Transactions<R> {
  run<T>(flow: (repo: R) => Flow<T>): Promise<T>;
}
