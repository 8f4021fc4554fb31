import { defaultClientConditions, defaultServerConditions } from 'vite';
import { configDefaults, defineConfig, type ViteUserConfig } from 'vitest/config';

const root = import.meta.dirname;

/**
 * What every package's test run shares. Packages import each other's TypeScript sources through the 'source' export
 * condition, as the type-check and the builds do. The global setups: the builds and the harness CLIs
 * (test/global-setup.ts); one throwaway PostgreSQL cluster for the Control API's tests (freshDatabase()). Every
 * project names both, so that each package's config runs alone; in the root's run they do their work once.
 */
export function packageConfig(name: string, test: NonNullable<ViteUserConfig['test']> = {}): ViteUserConfig {
  return defineConfig({
    resolve: { conditions: ['source', ...defaultClientConditions] },
    // Not 'module': a dependency's ES build for bundlers (the AWS SDK's dist-es) imports paths without extensions,
    // which Node.js, loading it, cannot resolve.
    ssr: { resolve: { conditions: ['source', ...defaultServerConditions.filter((c) => c !== 'module')] } },
    test: {
      name,
      include: ['test/**/*.test.ts'],
      exclude: [...configDefaults.exclude],
      globalSetup: [`${root}/test/global-setup.ts`, `${root}/test/support/postgres-global-setup.ts`],
      // A bound on a hung test, not a measure of speed: on one loaded core a test takes several times as long.
      testTimeout: 120_000,
      hookTimeout: 120_000,
      pool: 'forks',
      maxWorkers: 2,
      ...test,
    },
  });
}
