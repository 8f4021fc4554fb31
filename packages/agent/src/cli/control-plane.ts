/**
 * `blue-agent control-plane ...`: run the reference Control API and administer it: its data directory, and its
 * database (SQLite in the data directory, or PostgreSQL with --database-url / BLUE_CONTROL_DATABASE_URL).
 */
export { parseListen, serveCommand } from './control-plane/serve.js';
export { gcCommand, reindexCommand } from './control-plane/maintenance.js';
export {
  usersAddCommand,
  usersLinkCommand,
  usersListCommand,
  tokensAddCommand,
  tokensListCommand,
  tokensRevokeCommand,
  policyPublishCommand,
  policyShowCommand,
} from './control-plane/admin.js';
export {
  type DataOptions,
  type BlobOptions,
  type ServeOptions,
  dataDir,
  databaseUrl,
  operator,
} from './control-plane/data.js';
