import { afterEach, describe, expect, it } from 'vitest';
import { type FrontDoor, openFrontDoor } from './front-door';

let door: FrontDoor | null = null;
afterEach(async () => {
  await door?.close();
  door = null;
});

const open = async () => {
  door = await openFrontDoor({ host: '127.0.0.1', port: 0, https: null, bodyTimeoutMs: 60_000 });
  return door;
};

describe('the port while the service starts', () => {
  it('answers /health 200 at once, and /ready 503 saying what the start is doing', async () => {
    const d = await open();
    expect(await (await fetch(`${d.url}/health`)).json()).toEqual({ status: 'ok' });

    d.setPhase('migrating', 'migrating the database: 3 of 24');
    const ready = await fetch(`${d.url}/ready`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('1');
    expect(await ready.json()).toMatchObject({
      status: 'error',
      error_code: 'UNAVAILABLE',
      message: 'starting: migrating the database: 3 of 24',
      details: [{ path: 'phase', message: 'migrating' }],
    });
  });

  it('refuses every other request with 503 UNAVAILABLE in the envelope, without reading its body', async () => {
    const d = await open();
    const res = await fetch(`${d.url}/api/ingest`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'cdp_sk_whatever' },
      body: JSON.stringify({ event_type: 'track', event_name: 'Early' }),
    });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('1');
    expect(res.headers.get('connection')).toBe('close');
    expect(await res.json()).toMatchObject({
      error_code: 'UNAVAILABLE',
      message: 'the service is starting (opening storage); retry',
    });
  });

  it('hands every request to the app once it is open, on the same listening socket', async () => {
    const d = await open();
    const before = await fetch(`${d.url}/anything`);
    expect(before.status).toBe(503);
    d.open((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('app');
    });
    const after = await fetch(`${d.url}/anything`);
    expect(after.status).toBe(200);
    expect(await after.text()).toBe('app');
  });

  it('fails to open on a port already taken, leaving nothing listening', async () => {
    const d = await open();
    const port = Number(new URL(d.url).port);
    await expect(
      openFrontDoor({ host: '127.0.0.1', port, https: null, bodyTimeoutMs: 60_000 }),
    ).rejects.toMatchObject({ code: 'EADDRINUSE' });
  });
});
