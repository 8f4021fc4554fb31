/**
 * The one place pages are rendered (web/http.ts): whatever a page holds, its control and
 * bidirectional characters reach the browser escaped, in text and attributes alike, and no other module renders one.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { h } from 'preact';
import { describe, expect, it } from 'vitest';
import { pageHtml } from '../../src/web/http.js';
import { repoRoot } from '../../../../test/support/context.js';

const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe('pages as browsers get them', () => {
  it('show each control and bidirectional character escaped, in text and in attributes; keep lines and tabs', () => {
    const hostile = 'a\u202eb\u0007c\u009bd\u2066e\u200ff\u061cg';
    const html = pageHtml(
      h('html', null, [
        h('title', null, hostile),
        h('h1', { title: hostile, 'aria-label': hostile }, hostile),
        h('input', { value: hostile }),
        h('textarea', null, 'line one\r\nline\ttwo\rthree\n'),
      ]),
    );
    expect(RAW.exec(html)?.[0]).toBeUndefined();
    const shown = 'a\\u202eb\\u0007c\\u009bd\\u2066e\\u200ff\\u061cg';
    expect(html).toContain(`<title>${shown}</title>`);
    expect(html).toContain(`<h1 title="${shown}" aria-label="${shown}">${shown}</h1>`);
    expect(html).toContain(`<input value="${shown}"/>`);
    expect(html).toContain('<textarea>line one\nline\ttwo\nthree\n</textarea>');
    // Markup stays markup: what Preact escapes is escaped as before.
    expect(pageHtml(h('p', null, '<b>&amp;</b>'))).toBe('<!doctype html><p>&lt;b>&amp;amp;&lt;/b></p>');
  });

  it('are rendered by web/http.ts only, so no page can skip the rule', () => {
    const renderers: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const full = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(full);
        else if (/\.tsx?$/.test(entry.name) && /from 'preact-render-to-string'/.test(readFileSync(full, 'utf8')))
          renderers.push(path.relative(repoRoot, full));
      }
    };
    for (const pkg of readdirSync(path.join(repoRoot, 'packages'))) walk(path.join(repoRoot, 'packages', pkg, 'src'));
    expect(renderers).toEqual([path.join('packages', 'control-api', 'src', 'web', 'http.ts')]);
  });
});
