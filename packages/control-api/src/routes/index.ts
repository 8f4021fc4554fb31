/** The Control API's routes: the table the server registers, one file per resource beside it. */
export { ROUTES } from './table.js';
export type { Route } from './route.js';
