/** The Sessions dashboard: the list, and one session's page with its forms. */
export { sessionsPage } from './list.js';
export { sessionDelete, sessionDownload, sessionPage } from './session.js';
export { sessionSharing } from './sharing.js';
