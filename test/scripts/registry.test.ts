/**
 * `npm run certify -- --latest`'s question to the npm registry, against a loopback registry: the dist-tags endpoint,
 * scoped names escaped as npm does, and a clear error for every answer that is not one exact version.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { escapedName, latestVersion, registryUrl } from '../../scripts/registry.mjs';

const answers = new Map<string, { status: number; body: string }>();
const asked: string[] = [];
let server: http.Server;
let registry: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    asked.push(req.url ?? '');
    const answer = answers.get(req.url ?? '');
    if (answer === undefined) {
      res.writeHead(404).end('{"error":"Not found"}');
      return;
    }
    if (answer.status === -1) return; // never answers
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  registry = `http://127.0.0.1:${(server.address() as AddressInfo).port}/npm/`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

describe('latestVersion', () => {
  it('reads the latest dist-tag, spelling a scoped name as npm does', async () => {
    answers.set('/npm/-/package/@openai%2fcodex/dist-tags', {
      status: 200,
      body: '{"latest":"0.172.0","alpha":"0.173.0-alpha.1"}',
    });
    answers.set('/npm/-/package/opencode-ai/dist-tags', { status: 200, body: '{"latest":"1.19.0"}' });
    expect(await latestVersion('@openai/codex', { registry })).toBe('0.172.0');
    expect(await latestVersion('opencode-ai', { registry })).toBe('1.19.0');
    expect(asked).toContain('/npm/-/package/@openai%2fcodex/dist-tags');
  });

  it('says which package and which registry when the answer is not one exact version', async () => {
    answers.set('/npm/-/package/a/dist-tags', { status: 200, body: '{"latest":"^1.0.0"}' });
    answers.set('/npm/-/package/b/dist-tags', { status: 200, body: '{"next":"1.0.0"}' });
    answers.set('/npm/-/package/c/dist-tags', { status: 200, body: '<html>' });
    answers.set('/npm/-/package/d/dist-tags', { status: 503, body: '' });
    answers.set('/npm/-/package/e/dist-tags', { status: 200, body: `{"latest":"1.0.0","x":"${'x'.repeat(70_000)}"}` });
    answers.set('/npm/-/package/f/dist-tags', { status: 200, body: 'null' });
    const origin = new URL(registry).origin;
    await expect(latestVersion('a', { registry })).rejects.toThrow(
      `the registry names no exact "latest" version of a on ${origin}`,
    );
    await expect(latestVersion('b', { registry })).rejects.toThrow('no exact "latest" version of b');
    await expect(latestVersion('c', { registry })).rejects.toThrow('dist-tags of c on');
    await expect(latestVersion('d', { registry })).rejects.toThrow('HTTP 503');
    await expect(latestVersion('e', { registry })).rejects.toThrow('larger than 65536 bytes');
    await expect(latestVersion('f', { registry })).rejects.toThrow('no exact "latest" version of f');
    await expect(latestVersion('missing', { registry })).rejects.toThrow('HTTP 404 (no such package)');
  });

  it('gives up on a registry that does not answer, within its bound', async () => {
    answers.set('/npm/-/package/slow/dist-tags', { status: -1, body: '' });
    await expect(latestVersion('slow', { registry, timeoutMs: 200 })).rejects.toThrow('no answer in 0.2 s');
  });

  it('refuses what is not a package name before asking', async () => {
    for (const name of ['', '../x', '@scope', 'a/b/c', 'A B'])
      expect(() => escapedName(name)).toThrow('is not an npm package name');
    await expect(latestVersion('../../etc', { registry })).rejects.toThrow('is not an npm package name');
  });
});

describe('registryUrl', () => {
  it("is npm's configured registry, with a trailing slash, else the public one", () => {
    expect(registryUrl({ npm_config_registry: 'http://127.0.0.1:4873' })).toBe('http://127.0.0.1:4873/');
    expect(registryUrl({ NPM_CONFIG_REGISTRY: 'https://mirror.example/npm/' })).toBe('https://mirror.example/npm/');
    expect(registryUrl({})).toBe('https://registry.npmjs.org/');
  });
});
