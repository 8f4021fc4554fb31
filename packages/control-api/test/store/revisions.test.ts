/** A governance revision as both databases keep it. */
import { describe, expect, it } from 'vitest';
import { etagOf, newRevision, toPolicyRevision } from '../../src/store/revisions.js';

describe('newRevision', () => {
  it('serves the body with a fresh id, tagged by the ETag of what it serves, and keeps the text as published', () => {
    const { published, served } = newRevision({ ttl_seconds: 60 }, 5, 'ttl_seconds: 60 # a minute\n');
    expect(published).toEqual({
      revision: published.revision,
      body: { ttl_seconds: 60, revision: published.revision },
      text: 'ttl_seconds: 60 # a minute\n',
      etag: etagOf(served),
      created_at: 5,
    });
    expect(JSON.parse(served)).toEqual(published.body);
    expect(published.etag).toMatch(/^"[\w-]{32}"$/);
    const again = newRevision({ ttl_seconds: 60 }, 5, undefined);
    expect(again.published.revision).not.toBe(published.revision);
    expect(again.published.etag).not.toBe(published.etag);
    expect(again.published.text).toBeNull();
  });

  it('reads a stored row back as it was published', () => {
    const { published, served } = newRevision({ ttl_seconds: 60 }, 5, undefined);
    expect(
      toPolicyRevision({
        revision: published.revision,
        body: served,
        etag: published.etag,
        created_at: 5,
        published_text: null,
      }),
    ).toEqual(published);
  });
});
