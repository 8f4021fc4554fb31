/**
 * Loads undici on first use (most commands never touch the network). In dist/ the bundler turns the CommonJS package
 * into a chunk whose only export is `default`, while Node's own loader also gives the named exports: accept both.
 */
type Undici = typeof import('undici');

let loaded: Promise<Undici> | undefined;

export function loadUndici(): Promise<Undici> {
  loaded ??= import('undici').then((mod) => {
    const named = mod as Partial<Undici> & { default?: Undici };
    return typeof named.Agent === 'function' ? (named as Undici) : named.default!;
  });
  return loaded;
}
