import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';
import { loadDemoDataset } from '../demo/demo.service';
import { waitRescored } from '../intelligence/intelligence.test-kit';
import { waitProcessed } from '../processing/processing.test-kit';

/** Enough customers for every example to find some (the full demo has 3,000). */
const DEMO_CUSTOMERS = 500;

/**
 * Every query example of docs/segments.md (a ```json block right after `<!-- example: name -->`)
 * runs through POST /tenant/segments/calculate on the demo workspace, and must be accepted and find
 * members there: the guide cannot drift from the language, nor from the data a newcomer has to try
 * it on. An example is a query, or a whole request body with `query`; the ids of saved segments it
 * refers to are replaced by a segment saved here.
 */
const DOC = join(import.meta.dirname, '../../../docs/segments.md');
const EXAMPLE = /<!--\s*example:\s*([^>]*?)\s*-->\s*```json\s*\n([\s\S]*?)```/g;

function docExamples(text: string): Array<{ name: string; json: unknown }> {
  return [...text.matchAll(EXAMPLE)].map((m) => ({ name: m[1]!, json: JSON.parse(m[2]!) }));
}

/** The example with every `{"segment": id}` pointed at `id`. */
function withSegment(json: unknown, id: string): unknown {
  if (Array.isArray(json)) return json.map((x) => withSegment(x, id));
  if (typeof json !== 'object' || json === null) return json;
  return Object.fromEntries(
    Object.entries(json).map(([k, v]) => [
      k,
      k === 'segment' && typeof v === 'string' ? id : withSegment(v, id),
    ]),
  );
}

const examples = docExamples(readFileSync(DOC, 'utf8'));

let svc: TestService;
let segmentId: string;
beforeAll(async () => {
  svc = await startTestService();
  // The demo as `cdp demo` loads it (fewer customers), processed and scored.
  await loadDemoDataset(svc.rt.deps.db, svc.ws.id, { seed: 1, customers: DEMO_CUSTOMERS, now: new Date() });
  await waitProcessed(svc.rt.deps.db, 120_000);
  await waitRescored(svc.rt.deps.db, 120_000);
  const res = await svc.call('POST', '/tenant/segments', {
    body: { name: 'docs', query: { field: 'total_spend', op: 'gte', value: 0 } },
  });
  segmentId = res.body.data.id;
}, 240_000);
afterAll(async () => svc?.close());

describe('docs/segments.md examples', () => {
  it('has examples to check', () => {
    expect(examples.length).toBeGreaterThan(0);
  });

  it.each(examples.map((e) => [e.name, e.json] as const))(
    '%s is accepted by calculate and finds members in the demo workspace',
    async (_name, json) => {
      const isBody = typeof json === 'object' && json !== null && 'query' in json;
      const body = withSegment(isBody ? json : { query: json }, segmentId);
      const res = await svc.call('POST', '/tenant/segments/calculate', { body });
      expect(res.status, res.text).toBe(200);
      expect(res.body.data.count, 'members in the demo workspace').toBeGreaterThan(0);
    },
  );
});
