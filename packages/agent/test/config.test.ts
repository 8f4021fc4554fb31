import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../src/config.js';
import { makeTestHome, type TestHome } from '../../../test/support/context.js';
import { rejected } from '../../../test/support/errors.js';

let t: TestHome;
beforeEach(async () => {
  t = await makeTestHome();
});
afterEach(async () => {
  await t.cleanup();
});

async function writeConfig(text: string): Promise<string> {
  const file = t.ctx.paths.configFile;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, text);
  return file;
}

describe('loadAgentConfig', () => {
  it('treats a missing file as an empty config', async () => {
    const loaded = await loadAgentConfig(t.ctx);
    expect(loaded).toEqual({ config: {}, file: t.ctx.paths.configFile, exists: false });
  });

  it('treats a file holding only comments as an empty config', async () => {
    await writeConfig('# nothing yet\n');
    expect(await loadAgentConfig(t.ctx)).toMatchObject({ config: {}, exists: true });
  });

  it('reads a valid YAML config', async () => {
    await writeConfig(
      'control_url: https://control.example.com/blue\nallowed_upload_origins:\n  - https://uploads.example.com\n',
    );
    const loaded = await loadAgentConfig(t.ctx);
    expect(loaded.exists).toBe(true);
    expect(loaded.config).toEqual({
      control_url: 'https://control.example.com/blue',
      allowed_upload_origins: ['https://uploads.example.com'],
    });
  });

  it('names the file, JSON path and line of a schema error', async () => {
    const file = await writeConfig('control_url: https://control.example.com\ncontrol_ur1: typo\n');
    const error = await rejected(loadAgentConfig(t.ctx));
    expect(error.code).toBe('CONFIG_INVALID');
    expect(error.message).toContain(file);
    expect(error.message).toContain('control_ur1');
    expect(error.path).toBe('/');
    expect(error.line).toBeGreaterThanOrEqual(1);
  });

  it('reports a YAML syntax error with line and column', async () => {
    await writeConfig('control_url: https://control.example.com\nharnesses: [claude\n');
    const error = await rejected(loadAgentConfig(t.ctx));
    expect(error.code).toBe('CONFIG_PARSE');
    expect(error.line).toBeGreaterThanOrEqual(2);
    expect(error.column).toBeGreaterThanOrEqual(1);
    expect(error.message).toMatch(/config\.yaml:\d+:\d+: /);
  });
});
