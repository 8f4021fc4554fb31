/** Who may see a captured session, as both databases answer it. */
import { describe, expect, it } from 'vitest';
import { mayView } from '../../src/store/sharing.js';

const ada = { id: 'u-ada', is_admin: false };
const bob = { id: 'u-bob', is_admin: false };
const root = { id: 'u-root', is_admin: true };

describe('mayView', () => {
  it('lets the owner and administrators see a session, verified or not, whatever its sharing', () => {
    for (const sharing_mode of ['private', 'workspace', 'selected'] as const) {
      for (const current_artifact_id of [null, 'art-1']) {
        const session = { owner_id: ada.id, current_artifact_id, sharing_mode };
        expect([mayView(session, ada), mayView(session, root)]).toEqual([true, true]);
      }
    }
  });

  it('shows others a session only once it has a verified artifact: all (workspace), those it names, or none', () => {
    expect(mayView({ owner_id: ada.id, current_artifact_id: null, sharing_mode: 'workspace' }, bob)).toBe(false);
    expect(mayView({ owner_id: ada.id, current_artifact_id: null, sharing_mode: 'selected' }, bob)).toBe(false);
    expect(mayView({ owner_id: ada.id, current_artifact_id: 'art-1', sharing_mode: 'workspace' }, bob)).toBe(true);
    expect(mayView({ owner_id: ada.id, current_artifact_id: 'art-1', sharing_mode: 'selected' }, bob)).toBe(
      'if-granted',
    );
    expect(mayView({ owner_id: ada.id, current_artifact_id: 'art-1', sharing_mode: 'private' }, bob)).toBe(false);
  });
});
