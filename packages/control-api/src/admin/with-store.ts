/** The administration commands' database: opened for one command, closed after it. */
import { openStore, type ControlStore, type StoreOptions } from '../store/index.js';

/** Opens the database, runs `fn`, closes it. */
export async function withStore<T>(where: StoreOptions, fn: (store: ControlStore) => Promise<T>): Promise<T> {
  const store = await openStore(where);
  try {
    return await fn(store);
  } finally {
    await store.close();
  }
}
