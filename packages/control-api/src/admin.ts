/**
 * Administration of a Control API: users, tokens and sign-in links, policy revisions, retention, search entries. These
 * open the same database as the running servers (SQLite in the data directory, WAL + busy timeout making that safe; or
 * PostgreSQL), so they work while it serves. Only `users add` (and `serve`) create a data directory; the others refuse
 * one that does not exist or holds no control.db. The face of admin/, which the `control-plane` commands import.
 */
export { addUser, listUsers } from './admin/users.js';
export {
  addToken,
  listTokens,
  makeSignInLink,
  revokeToken,
  SIGN_IN_LINK_TTL_MS,
  signInLinkUrl,
} from './admin/tokens.js';
export { checkPolicyText, publishedText, publishPolicy, showPolicy, type Published } from './admin/policy.js';
export {
  ADMIN_TOKEN_FILE,
  defaultPolicy,
  FIRST_ADMIN_EMAIL,
  firstStart,
  presignOriginWarning,
  type FirstStart,
} from './admin/first-start.js';
export { collectGarbage, collectWith, type GarbageCollected } from './admin/gc.js';
export { reindex, type ReindexResult } from './admin/reindex.js';
