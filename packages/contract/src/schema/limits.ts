/** Sizes the agent and the Control API hold the documents they exchange to, beyond what the JSON Schemas can state. */

/**
 * `POST /client-status`: a report's body at most, in bytes: several times an agent's report of every harness it knows.
 * The agent shortens a report that would be longer (daemon/report.ts); the server refuses one (413).
 */
export const MAX_CLIENT_STATUS_BYTES = 16 * 1024;

/** A governance policy at most, from a file, the network or an administrator's form: a policy is a few hundred bytes.
 * */
export const MAX_POLICY_BYTES = 1024 * 1024;
