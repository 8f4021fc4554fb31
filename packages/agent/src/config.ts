/**
 * The agent's own configuration (config.yaml). The Control API settings derived from it and the environment are
 * control-api/settings.ts.
 */
import path from 'node:path';
import type { Context } from './context.js';
import type { AgentConfig } from '@blue-agent/contract/schema/index.js';
import { readTextIfExists } from '@blue-agent/contract/util/fs.js';

export type { AgentConfig } from '@blue-agent/contract/schema/index.js';

export interface LoadedAgentConfig {
  config: AgentConfig;
  file: string;
  exists: boolean;
}

/** Reads and validates `ctx.paths.configFile`; a missing or empty file is an empty config. */
export async function loadAgentConfig(ctx: Context): Promise<LoadedAgentConfig> {
  const file = ctx.paths.configFile;
  const text = await readTextIfExists(file);
  if (text === null) return { config: {}, file, exists: false };
  // The YAML parser and the validators load only when there is a file to read.
  const { agentConfigSchema, parseYamlText, validateDocument } = await import('@blue-agent/contract/schema/index.js');
  const parsed = parseYamlText(text, file, 'CONFIG_PARSE');
  // A file holding only comments is a config with nothing set, not a type error.
  if (parsed.data === null || parsed.data === undefined) return { config: {}, file, exists: true };
  const config = validateDocument(agentConfigSchema, parsed.data, file, parsed);
  return { config, file, exists: true };
}

/** A path from config.yaml: `~/` is the home directory, a relative path is relative to the config file's folder. */
export function resolveConfigPath(ctx: Context, value: string): string {
  if (value === '~') return ctx.paths.home;
  if (value.startsWith('~/')) return path.join(ctx.paths.home, value.slice(2));
  return path.resolve(path.dirname(ctx.paths.configFile), value);
}
