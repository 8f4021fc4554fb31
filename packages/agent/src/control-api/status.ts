/** `POST /client-status`: what this machine applied (body per schemas/control-client-status.schema.json). */
import type { Context } from '../context.js';
import type { ClientStatusReport } from '@blue-agent/contract/schema/generated/control-client-status.js';
import { controlClient } from './settings.js';

export const CLIENT_STATUS_ROUTE = 'client-status';

/** Sends one report to the configured Control API; throws what `ControlClient.requestJson` throws. */
export async function sendClientStatus(ctx: Context, body: ClientStatusReport, timeoutMs: number): Promise<void> {
  const client = await controlClient(ctx, { timeoutMs });
  try {
    await client.requestJson('POST', client.routeUrl(CLIENT_STATUS_ROUTE), body);
  } finally {
    await client.close();
  }
}
