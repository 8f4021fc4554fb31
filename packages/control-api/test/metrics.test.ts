/**
 * `GET /metrics` on both databases: Prometheus' text format without a token, requests counted by route template (never
 * a raw path: the label set stays bounded whatever clients send), latencies, upload bytes, the database backend and
 * pool, the process, and the background garbage collection.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKENDS, startTestServer, type TestServer } from '../../../test/support/control-server.js';

const RESUMABLE = {
  artifact_format: 'blue-session-bundle-v1',
  compatibility_profile: 'claude-v2_0_12',
  resumable: true,
};

/** The value of one series of the exposition, or undefined when it is absent. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe.each(BACKENDS)('GET /metrics (%s)', (backend) => {
  let t: TestServer;
  afterEach(async () => {
    await t?.close();
  });

  const scrape = async () => {
    const response = await fetch(`${t.url}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    return response.text();
  };

  it('counts requests by route template and status, with latencies and upload bytes, and needs no token', async () => {
    t = await startTestServer({ backend });
    const bytes = Buffer.from('a bundle of 26 bytes here.');
    const done = await t.upload(t.alice, bytes, { session_id: 'measured', ...RESUMABLE });
    expect(done.status).toBe(200);
    expect((await t.call('GET', `/session-uploads/${done.sessionId}`, t.alice.token)).status).toBe(200);
    expect((await t.call('GET', '/session-uploads', undefined)).status).toBe(401);
    expect((await t.call('GET', '/no/such/route/a1b2c3', undefined)).status).toBe(404);
    // The log line of a request is written once it has closed: give the last one a moment.
    await sleep(50);

    const text = await scrape();
    expect(
      value(text, 'blue_control_http_requests_total{method="POST",route="/session-uploads/presign",status="200"}'),
    ).toBe(1);
    expect(
      value(
        text,
        'blue_control_http_requests_total{method="POST",route="/session-uploads/{id}/complete",status="200"}',
      ),
    ).toBe(1);
    expect(
      value(text, 'blue_control_http_requests_total{method="GET",route="/session-uploads/{id}",status="200"}'),
    ).toBe(1);
    expect(value(text, 'blue_control_http_requests_total{method="GET",route="/session-uploads",status="401"}')).toBe(1);
    expect(value(text, 'blue_control_http_requests_total{method="PUT",route="blob",status="200"}')).toBe(1);
    expect(value(text, 'blue_control_http_requests_total{method="GET",route="unmatched",status="404"}')).toBe(1);
    // No raw path or id ever becomes a label.
    expect(text).not.toContain('a1b2c3');
    expect(text).not.toContain(done.sessionId);
    expect(
      value(text, 'blue_control_http_request_duration_seconds_count{method="POST",route="/session-uploads/presign"}'),
    ).toBe(1);
    expect(
      value(
        text,
        'blue_control_http_request_duration_seconds_bucket' +
          '{le="+Inf",method="POST",route="/session-uploads/{id}/complete"}',
      ),
    ).toBe(1);
    expect(value(text, 'blue_control_upload_bytes_total')).toBe(bytes.length);
    expect(value(text, 'blue_control_uploads_completed_total')).toBe(1);
    expect(value(text, `blue_control_database_info{backend="${backend}"}`)).toBe(1);
    expect(value(text, 'blue_control_process_cpu_user_seconds_total')).toBeGreaterThan(0);
    if (backend === 'postgres')
      expect(value(text, 'blue_control_database_pool_connections{state="idle"}')).toBeGreaterThanOrEqual(1);
    else expect(text).not.toContain('blue_control_database_pool_connections{');
    // The scrape itself is counted once it is answered.
    expect(value(await scrape(), 'blue_control_http_requests_total{method="GET",route="/metrics",status="200"}')).toBe(
      1,
    );
  });

  it('collects garbage in the background and counts it', async () => {
    t = await startTestServer({ backend, retentionDays: 1, gc: { intervalMs: 100, firstMs: 100 } });
    const done = await t.upload(t.alice, Buffer.from('old bytes'), { session_id: 'expiring', ...RESUMABLE });
    const file = path.join(t.blobDir, 'sessions', `${done.uploadId}.tar.gz`);
    expect(existsSync(file)).toBe(true);
    t.clock.advance(2 * 86_400_000);
    for (let i = 0; i < 100 && existsSync(file); i++) await sleep(50);
    expect(existsSync(file)).toBe(false);
    // The object goes during the run; the run is counted when it ends (after the sign-in records are purged too), and
    // runs before the clock moved may have been counted already.
    let text = await scrape();
    for (let i = 0; i < 100 && value(text, 'blue_control_gc_deleted_objects_total') !== 1; i++) {
      await sleep(50);
      text = await scrape();
    }
    expect(value(text, 'blue_control_gc_runs_total{outcome="ok"}')).toBeGreaterThanOrEqual(1);
    expect(value(text, 'blue_control_gc_deleted_objects_total')).toBe(1);
    // The session is still listed by its owner's detail, its artifact expired.
    const detail = await t.call('GET', `/session-uploads/${done.sessionId}`, t.alice.token);
    expect(detail.body.artifacts[0]).toMatchObject({ expired: true });
  });
});
