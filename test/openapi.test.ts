import SwaggerParser from '@apidevtools/swagger-parser';
import { afterAll, describe, expect, it } from 'vitest';
import { API_VERSION } from '../src/app';
import { startTestService } from './harness';

/**
 * The OpenAPI 3.1 document (`GET /openapi.json`) is built from the route schemas; this checks it is
 * valid and complete: every route of the app, with its security and its answers.
 */
const svc = await startTestService();
afterAll(async () => svc.close());

const fetched = await svc.call('GET', '/openapi.json', { key: null });
// biome-ignore lint/suspicious/noExplicitAny: an OpenAPI document is inspected field by field
const doc: any = fetched.body;

/**
 * Hidden on purpose: the document itself, the CORS preflight twins of the ingest routes, and the
 * CLI's own way into a service on the embedded database (auth `local`: no client can call it).
 */
const HIDDEN_ON_PURPOSE = (r: { url: string; preflight: boolean; auth: string }) =>
  r.url === '/openapi.json' || r.preflight || r.auth === 'local';

const documented = svc.app.routeList.filter((r) => !HIDDEN_ON_PURPOSE(r));
const openapiPath = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
const operationOf = (r: { method: string; url: string }) =>
  doc.paths?.[openapiPath(r.url)]?.[r.method.toLowerCase()];

describe('GET /openapi.json', () => {
  it('is served without a key, as JSON', () => {
    expect(fetched.status).toBe(200);
    expect(String(fetched.headers['content-type'])).toMatch(/^application\/json/);
  });

  it('is a valid OpenAPI 3.1 document carrying the API version', async () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.version).toBe(API_VERSION);
    // validate() dereferences in place; give it a copy so later tests see the $refs.
    await expect(SwaggerParser.validate(structuredClone(doc))).resolves.toBeTruthy();
  });

  it('hides no route except the document itself and CORS preflights', () => {
    expect(svc.app.routeList.filter((r) => r.hidden && !HIDDEN_ON_PURPOSE(r))).toEqual([]);
  });

  it.each(documented.map((r) => [`${r.method} ${r.url}`, r] as const))('documents %s', (_name, route) => {
    const op = operationOf(route);
    expect(op, 'operation missing from the document').toBeDefined();
    expect(op.summary ?? op.description, 'a summary').toBeTruthy();

    const expected =
      route.auth === 'public'
        ? []
        : route.auth === 'operator'
          ? [{ operatorToken: [] }]
          : route.auth === 'ingest'
            ? [{ apiKey: [] }, { basicAuth: [] }]
            : [{ apiKey: [] }];
    expect(op.security).toEqual(expected);

    const success = Object.keys(op.responses).filter((code) => /^2/.test(code));
    expect(success.length, 'a success response').toBeGreaterThan(0);
    for (const code of success) {
      const r = op.responses[code];
      // 204 has no body; a stream (server-sent events, an export file) declares its media type instead of JSON.
      if (code !== '204')
        expect(
          r.content?.['application/json']?.schema ??
            r.content?.['text/event-stream']?.schema ??
            r.content?.['application/x-ndjson']?.schema,
          `schema of ${code}`,
        ).toBeDefined();
    }

    for (const p of route.params) {
      expect(op.parameters?.some((x: { in: string; name: string }) => x.in === 'path' && x.name === p)).toBe(
        true,
      );
    }
  });

  it.each(documented.filter((r) => r.auth !== 'public').map((r) => [`${r.method} ${r.url}`, r] as const))(
    'points the error answers of %s at the one ErrorEnvelope schema',
    (_name, route) => {
      const op = operationOf(route);
      const errors = route.auth === 'operator' ? ['401', '404'] : ['401', '403', '429'];
      for (const code of [...errors, '5XX']) {
        expect(op.responses[code]?.content?.['application/json']?.schema, code).toEqual({
          $ref: '#/components/schemas/ErrorEnvelope',
        });
      }
    },
  );

  it('describes the error envelope with every code the service uses', () => {
    const env = doc.components.schemas.ErrorEnvelope;
    expect(env.required).toEqual(expect.arrayContaining(['status', 'error_code', 'message', 'timestamp']));
    const codes = JSON.stringify(env.properties.error_code);
    for (const code of [
      'VALIDATION_ERROR',
      'INVALID_CURSOR',
      'RATE_LIMITED',
      'UNAVAILABLE',
      'METHOD_NOT_ALLOWED',
    ])
      expect(codes).toContain(code);
  });

  it('declares the ways to authenticate: X-API-Key, Basic auth for ingest, the operator token', () => {
    expect(doc.components.securitySchemes.apiKey).toEqual({
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
    });
    expect(doc.components.securitySchemes.operatorToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.components.securitySchemes.basicAuth).toMatchObject({ type: 'http', scheme: 'basic' });
  });

  it("documents writeKey, Segment's third way, as a field of each ingested event", () => {
    const body = operationOf({ method: 'POST', url: '/api/ingest' }).requestBody;
    expect(JSON.stringify(body)).toContain('writeKey');
  });
});

describe('GET /docs', () => {
  it('serves the reference page as HTML without a key', async () => {
    let res = await svc.call('GET', '/docs', { key: null });
    if (res.status >= 300 && res.status < 400)
      res = await svc.call('GET', String(res.headers.location), { key: null });
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toMatch(/^text\/html/);
    expect(res.text).toMatch(/<html/i);
  });

  it('points the page at this service’s own document', async () => {
    const res = await svc.call('GET', '/docs/json', { key: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe(doc.openapi);
  });
});
