/**
 * `blue-agent sessions list|show|share|delete|store|export`: the captured sessions on the Control API, one file per
 * subcommand in sessions/. These modules do the I/O; the Control API calls are in src/control-api/sessions.ts and the
 * export rendering in src/sessions/export.ts.
 */
export { sessionLabel } from '../control-api/sessions.js';
export { sessionsExportCommand } from './sessions/export.js';
export { sessionsShareCommand } from './sessions/share.js';
export { sessionsDeleteCommand } from './sessions/delete.js';
export { sessionsShowCommand } from './sessions/show.js';
export { sessionsStoreCommand } from './sessions/store.js';
export {
  LIST_LIMIT_MAX,
  LIST_LIMIT_DEFAULT,
  type ListFlags,
  sessionsListCommand,
  sessionTable,
} from './sessions/list.js';
