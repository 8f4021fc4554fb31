// Types for scripts/registry.mjs.
export function registryUrl(env?: NodeJS.ProcessEnv): string;
export function escapedName(pkg: string): string;
export function latestVersion(
  pkg: string,
  options?: { registry?: string; fetchImpl?: typeof fetch; timeoutMs?: number },
): Promise<string>;
