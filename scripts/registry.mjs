// The npm registry's answer to "what is the newest version of this package", for `npm run certify -- --latest`.
// Asks the dist-tags endpoint (a few bytes) rather than the whole packument (megabytes for a CLI with many releases),
// on the registry npm itself is configured with.
import semver from 'semver';

const DEFAULT_REGISTRY = 'https://registry.npmjs.org/';
const TIMEOUT_MS = 30_000;
const MAX_BYTES = 64 * 1024;

/** The registry npm uses: `npm run` passes it as npm_config_registry; the public registry otherwise. */
export function registryUrl(env = process.env) {
  const value = env.npm_config_registry || env.NPM_CONFIG_REGISTRY || DEFAULT_REGISTRY;
  return value.endsWith('/') ? value : `${value}/`;
}

/** `@scope/name` → `@scope%2fname`, as npm spells a package in registry paths. */
export function escapedName(pkg) {
  if (!/^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/.test(pkg))
    throw new Error(`"${pkg}" is not an npm package name`);
  return pkg.replace('/', '%2f');
}

/**
 * The version the `latest` dist-tag of `pkg` names. Throws an Error saying which package, which registry and what went
 * wrong (no credentials are ever part of the registry URL printed: only its origin).
 */
export async function latestVersion(pkg, { registry = registryUrl(), fetchImpl = fetch, timeoutMs = TIMEOUT_MS } = {}) {
  const url = new URL(`-/package/${escapedName(pkg)}/dist-tags`, registry);
  const where = `${pkg} on ${url.origin}`;
  let response;
  try {
    response = await fetchImpl(url, {
      headers: { accept: 'application/json' },
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'follow',
    });
  } catch (error) {
    throw new Error(
      `could not ask for the newest version of ${where}: ` +
        `${error.name === 'TimeoutError' ? `no answer in ${timeoutMs / 1000} s` : error.message}`,
    );
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new Error(
      `could not ask for the newest version of ${where}: HTTP ${response.status}` +
        `${response.status === 404 ? ' (no such package)' : ''}`,
    );
  }
  const text = await readCapped(response, MAX_BYTES);
  if (text === undefined) throw new Error(`the registry's dist-tags of ${where} are larger than ${MAX_BYTES} bytes`);
  let tags;
  try {
    tags = JSON.parse(text);
  } catch {
    throw new Error(`the registry's dist-tags of ${where} are not JSON`);
  }
  const latest = tags !== null && typeof tags === 'object' ? tags.latest : undefined;
  if (typeof latest !== 'string' || semver.valid(latest) === null)
    throw new Error(`the registry names no exact "latest" version of ${where}`);
  return latest;
}

async function readCapped(response, max) {
  const reader = response.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel();
      return undefined;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
