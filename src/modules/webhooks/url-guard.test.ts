import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { checkDestination, isBlockedAddress } from './url-guard';

describe('the webhook address guard', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '::1',
    '::',
    'fe80::1',
    'fd00:ec2::254',
    'fc00::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '64:ff9b::a00:1',
  ])('blocks %s', (address) => {
    expect(isBlockedAddress(address)).toBe(true);
  });

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8'])(
    'lets %s through',
    (address) => {
      expect(isBlockedAddress(address)).toBe(false);
    },
  );

  it.each([
    'http://93.184.215.14/hook',
    'https://127.0.0.1/hook',
    'https://[::1]/hook',
    'https://169.254.169.254/latest/meta-data',
    'https://[::ffff:192.168.0.1]/hook',
    'https://localhost/hook',
    'https://user:pw@93.184.215.14/hook',
    'not a url',
  ])('refuses %s without the private-webhooks setting', async (url) => {
    await expect(checkDestination(url, false)).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  // Each of these reached 127.0.0.1 or another inside address and was accepted at creation before.
  it.each([
    ['IPv4-compatible, dotted', 'https://[::127.0.0.1]/hook'],
    ['IPv4-compatible, hex', 'https://[::7f00:1]/hook'],
    ['6to4 of 127.0.0.1', 'https://[2002:7f00:1::]/hook'],
    ['IPv4-translated (SIIT) of 127.0.0.1', 'https://[::ffff:0:7f00:1]/hook'],
    ['Teredo', 'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook'],
    ['local-use NAT64 of 127.0.0.1', 'https://[64:ff9b:1::7f00:1]/hook'],
    ['discard-only', 'https://[100::1]/hook'],
  ])('refuses a host literal in the %s form', async (_form, url) => {
    await expect(checkDestination(url, false)).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('names the setting that allows private destinations when it refuses one', async () => {
    for (const url of ['https://10.0.0.5/hook', 'http://93.184.215.14/hook', 'https://localhost/hook']) {
      const err = await checkDestination(url, false).catch((e: Error) => e);
      expect(err, url).toBeInstanceOf(Error);
      expect((err as Error).message, url).toContain('CDP_ALLOW_PRIVATE_WEBHOOKS');
    }
  });

  it('accepts https on a public address, and http or loopback only with the setting', async () => {
    await expect(checkDestination('https://93.184.215.14/hook', false)).resolves.toBeUndefined();
    await expect(checkDestination('http://127.0.0.1:9/hook', true)).resolves.toBeUndefined();
    await expect(checkDestination('ftp://127.0.0.1/hook', true)).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
  });
});

describe('creating a webhook on a service without CDP_ALLOW_PRIVATE_WEBHOOKS', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('refuses a private destination with 400 and accepts a public https one', async () => {
    for (const url of ['http://127.0.0.1:8080/hook', 'https://10.0.0.5/hook', 'https://[fe80::1]/hook']) {
      const res = await svc.call('POST', '/tenant/webhooks', { body: { url, events: ['profile.created'] } });
      expect(res.status, url).toBe(400);
      expect(res.body.error_code).toBe('VALIDATION_ERROR');
    }
    const ok = await svc.call('POST', '/tenant/webhooks', {
      body: { url: 'https://93.184.215.14/hook', events: ['order.completed'] },
    });
    expect(ok.status, ok.text).toBe(200);
    const patch = await svc.call('PATCH', `/tenant/webhooks/${ok.body.data.id}`, {
      body: { url: 'https://192.168.0.10/hook' },
    });
    expect(patch.status).toBe(400);
  });
});
