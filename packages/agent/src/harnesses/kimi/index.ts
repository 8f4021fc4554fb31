/**
 * Kimi: Kimi Code (npm @moonshot-ai/kimi-code, bin `kimi`, home `$KIMI_CODE_HOME` or `~/.kimi-code`), and, for the
 * sessions captured before it, the Python kimi-cli it succeeds (profile kimi-v1_28_0, share dir `$KIMI_SHARE_DIR` or
 * `~/.kimi`; legacy/). Both keep the managed hook as one `[[hooks]]` table in their config.toml (./plan.ts).
 *
 * That table in kimi-cli's config goes when Kimi Code is the `kimi` installed. Kimi Code's migration copies kimi-cli's
 * hooks only into a config that has none, so while it is pending with hooks of the user's to copy, the capture hook
 * waits for it (refuseBeforeMigration).
 */
import { access } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'smol-toml';
import type { Context } from '../../context.js';
import { BlueError } from '@blue-agent/contract/errors.js';
import type { Interval } from '@blue-agent/contract/schema/index.js';
import { readBytesIfExists } from '@blue-agent/contract/util/fs.js';
import { decodeLossless } from '@blue-agent/contract/util/lossless.js';
import { HARNESS_DISPLAY_NAMES } from '../names.js';
import type { HarnessAdapter } from '../types.js';
import { isManagedEntry, planKimiHook } from './plan.js';
import { kimiTranscriptReader } from '@blue-agent/contract/harnesses/kimi/transcript.js';

const CONFIG_FILE = 'config.toml';
const LEGACY_CONFIG_FILE = 'config.json';

/** The profile of the Python kimi-cli: its sessions live in its share dir, in its own layout. */
const KIMI_CLI_PROFILE = 'kimi-v1_28_0';

/** Kimi Code's migration markers: in kimi-cli's share dir once migrated, in Kimi Code's home once skipped. */
const MIGRATED_MARKER = '.migrated-to-kimi-code';
const SKIP_MIGRATION_MARKER = '.skip-migration-from-kimi-cli';

function absolute(value: string | undefined): string | undefined {
  return value !== undefined && value !== '' && path.isAbsolute(value) ? value : undefined;
}

/** Kimi Code's home. */
function codeHome(ctx: Context): string {
  return absolute(ctx.env.KIMI_CODE_HOME) ?? path.join(ctx.paths.home, '.kimi-code');
}

/** kimi-cli's share dir. */
function shareDir(ctx: Context): string {
  return absolute(ctx.env.KIMI_SHARE_DIR) ?? path.join(ctx.paths.home, '.kimi');
}

const isKimiCli = (interval: Interval) => interval.profile === KIMI_CLI_PROFILE;

// Session code (capture, listing, restore) loads when first used: reconcile plans hooks without it.
export const kimi: HarnessAdapter = {
  name: 'kimi',
  displayName: HARNESS_DISPLAY_NAMES.kimi,
  environment: ['KIMI_CODE_HOME', 'KIMI_SHARE_DIR'],
  hookFormat: 'kimi-config-toml',
  transcript: kimiTranscriptReader,

  configRoot: codeHome,

  async hookFile(ctx: Context, interval: Interval): Promise<string> {
    if (!isKimiCli(interval)) {
      const file = path.join(codeHome(ctx), CONFIG_FILE);
      await refuseBeforeMigration(ctx, file);
      return file;
    }
    const root = shareDir(ctx);
    const file = path.join(root, CONFIG_FILE);
    // kimi-cli converts a legacy config.json only while config.toml is absent; creating config.toml first would make
    // it skip the conversion and silently drop the user's settings.
    if (!(await exists(file)) && (await exists(path.join(root, LEGACY_CONFIG_FILE)))) {
      throw new BlueError(
        'NATIVE_CONFIG_CONFLICT',
        `kimi-cli still has a legacy ${LEGACY_CONFIG_FILE} and no ${CONFIG_FILE}; adding the capture hook now ` +
          `would stop it from migrating ${LEGACY_CONFIG_FILE}`,
        {
          file: path.join(root, LEGACY_CONFIG_FILE),
          hint:
            `Run \`kimi\` once so it converts ${LEGACY_CONFIG_FILE} to ${CONFIG_FILE}, then run \`blue-agent ` +
            `reconcile\` again.`,
        },
      );
    }
    return file;
  },

  knownHookFiles(ctx: Context): string[] {
    return [path.join(codeHome(ctx), CONFIG_FILE), path.join(shareDir(ctx), CONFIG_FILE)];
  },

  planHook: planKimiHook,

  async collectSession(ctx, input) {
    if (isKimiCli(input.interval))
      return (await import('./legacy/session.js')).collectKimiSession(ctx, input, shareDir(ctx));
    return (await import('./session.js')).collectKimiCodeSession(ctx, input, codeHome(ctx));
  },

  async planRestore(ctx, input) {
    if (isKimiCli(input.interval))
      return (await import('./legacy/restore.js')).planKimiRestore(ctx, input, shareDir(ctx));
    return (await import('./restore.js')).planKimiCodeRestore(ctx, input, codeHome(ctx));
  },
};

/**
 * Kimi Code offers to migrate kimi-cli's config.toml (`kimi migrate`, or a screen at its first start) until it has
 * (a marker in the share dir naming this home) or was told to skip it (a marker in its home). Its migration copies
 * kimi-cli's `[[hooks]]` only into a config without hooks: a capture hook added to Kimi Code's config first would have
 * the user's kimi-cli hooks dropped. So while such a migration is pending, and the config has no hook of the user's
 * yet, the hook waits for it.
 */
async function refuseBeforeMigration(ctx: Context, file: string): Promise<void> {
  const source = shareDir(ctx);
  const sourceConfig = path.join(source, CONFIG_FILE);
  const userHooks = (text: string | undefined): number => {
    if (text === undefined) return 0;
    try {
      const hooks = (parse(text) as { hooks?: unknown }).hooks;
      return Array.isArray(hooks) ? hooks.filter((h) => !isManagedEntry(h)).length : 0;
    } catch {
      return 0;
    }
  };
  const readText = async (at: string) => {
    try {
      const bytes = await readBytesIfExists(at);
      return bytes === null ? undefined : decodeLossless(bytes);
    } catch {
      return undefined;
    }
  };
  const pending = userHooks(await readText(sourceConfig));
  if (pending === 0 || (await exists(path.join(codeHome(ctx), SKIP_MIGRATION_MARKER)))) return;
  const marker = await readText(path.join(source, MIGRATED_MARKER));
  if (marker !== undefined) {
    let targets: string[] = [];
    try {
      const data = JSON.parse(marker) as { target_paths?: unknown; target_path?: unknown };
      targets = [...(Array.isArray(data.target_paths) ? data.target_paths : []), data.target_path].filter(
        (p): p is string => typeof p === 'string',
      );
    } catch {
      return;
    }
    if (targets.length === 0 || targets.some((p) => path.resolve(p) === path.resolve(codeHome(ctx)))) return;
  }
  if (userHooks(await readText(file)) > 0) return;
  throw new BlueError(
    'NATIVE_CONFIG_CONFLICT',
    `kimi-cli's config holds ${pending} hook${pending === 1 ? '' : 's'} that Kimi Code has not migrated yet; with ` +
      `the capture hook in ${file} first, its migration would drop ${pending === 1 ? 'it' : 'them'}`,
    {
      file: sourceConfig,
      hint:
        'Let Kimi Code migrate first: run `kimi migrate --run` (or start `kimi` and migrate, or skip the ' +
        'migration), then run `blue-agent reconcile` again.',
    },
  );
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch {
    return false;
  }
}
