import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dropSchema, freshSchemaName } from '../../../test/harness';
import { loadConfig } from '../../config';
import { createLogger } from '../../platform/logger';
import { createRuntime, type Runtime } from '../../runtime';
import { webhookPolicy } from './policy';
import { type Receiver, startReceiver, verifyServiceSignature } from './webhooks.test-kit';

/**
 * A delivery whose receiver keeps failing outlives the service: the service stops in the middle of
 * the retry schedule, starts again on the same database, and the delivery goes on from its recorded
 * attempts until the receiver takes it (contract §9: retries survive restarts).
 */
webhookPolicy.backoff = { baseMs: 50, capMs: 200 };
webhookPolicy.fanoutEvery = 'every 1s';

const adminKey = `cdp_sk_${randomBytes(32).toString('base64url')}`;
const pgUrl = process.env.DATABASE_URL ?? null;
const schema = pgUrl ? freshSchemaName() : null;
const dataDir = pgUrl ? null : mkdtempSync(join(tmpdir(), 'cdp-webhook-restart-'));
const config = loadConfig({
  LOG_LEVEL: 'silent',
  CDP_INITIAL_ADMIN_KEY: adminKey,
  CDP_ALLOW_PRIVATE_WEBHOOKS: '1',
  ...(pgUrl ? { DATABASE_URL: pgUrl, DATABASE_SCHEMA: schema! } : { DATA_DIR: dataDir! }),
});

let rx: Receiver;
let rt: Runtime | null = null;
beforeAll(async () => {
  rx = await startReceiver();
});
afterAll(async () => {
  await rt?.stop();
  await rx?.close();
  if (pgUrl && schema) await dropSchema(pgUrl, schema);
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function call(method: 'GET' | 'POST', url: string, body?: unknown) {
  const res = await rt!.app!.inject({
    method,
    url,
    headers: { 'x-api-key': adminKey, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { payload: JSON.stringify(body) } : {}),
  });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}

describe('a delivery in the middle of its retry schedule when the service restarts', () => {
  it('goes on after the restart from its recorded attempts, and is delivered once the receiver answers', async () => {
    rx.script(
      '/restart',
      Array.from({ length: 1000 }, () => ({ status: 503 })),
    );
    rt = await createRuntime(config, createLogger('silent'));
    const hook = await call('POST', '/tenant/webhooks', {
      url: `${rx.url}/restart`,
      events: ['profile.created'],
    });
    expect(hook.status).toBe(200);
    const sent = await call('POST', '/api/ingest', {
      event_type: 'identify',
      event_name: 'Signed in',
      identity: `${randomUUID()}@shop.test`,
    });
    expect(sent.status).toBe(202);
    await rx.waitFor('/restart', 2, 30_000);
    await rt.stop();
    rt = null;
    const failedBefore = rx.received.filter((r) => r.path === '/restart').length;

    rx.script('/restart', []); // from now on the receiver answers 200
    rt = await createRuntime(config, createLogger('silent'));
    const got = await rx.waitFor('/restart', failedBefore + 1, 30_000);
    const last = got[got.length - 1]!;
    expect(verifyServiceSignature(hook.body.data.secret, last)).toBe(true);
    expect(JSON.parse(last.body).type).toBe('profile.created');

    for (let i = 0; ; i++) {
      const page = await call('GET', `/tenant/webhooks/${hook.body.data.id}/deliveries`);
      const d = page.body.data[0];
      if (d?.status === 'delivered') {
        expect(d.attempts).toBeGreaterThanOrEqual(failedBefore + 1);
        break;
      }
      if (i > 200) throw new Error(`not delivered after the restart: ${JSON.stringify(d)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    // One delivery for the one fact: the restart made no second one.
    expect((await call('GET', `/tenant/webhooks/${hook.body.data.id}/deliveries`)).body.data).toHaveLength(1);
  }, 90_000);
});
