/**
 * Who may see a captured session, once for both backends: its owner and administrators always; anyone else only once
 * it has a verified artifact (as in listings), everyone when it is shared with the workspace, and, when shared by
 * name, the people it names (a grant, which the backend looks up).
 */
import type { CapturedSession, User } from './types.js';

export function mayView(
  session: Pick<CapturedSession, 'owner_id' | 'current_artifact_id' | 'sharing_mode'>,
  viewer: Pick<User, 'id' | 'is_admin'>,
): boolean | 'if-granted' {
  if (viewer.is_admin || session.owner_id === viewer.id) return true;
  if (session.current_artifact_id === null) return false;
  if (session.sharing_mode === 'workspace') return true;
  return session.sharing_mode === 'selected' ? 'if-granted' : false;
}
