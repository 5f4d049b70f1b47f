import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../../../test/harness';

/**
 * Every query example of docs/segments.md (a ```json block right after `<!-- example: name -->`)
 * runs through POST /tenant/segments/calculate and must be accepted: the guide cannot drift from
 * the language. An example is a query, or a whole request body with `query`; the ids of saved
 * segments it refers to are replaced by a segment saved here.
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
  const res = await svc.call('POST', '/tenant/segments', {
    body: { name: 'docs', query: { field: 'total_spend', op: 'gte', value: 0 } },
  });
  segmentId = res.body.data.id;
});
afterAll(async () => svc?.close());

describe('docs/segments.md examples', () => {
  it('has examples to check', () => {
    expect(examples.length).toBeGreaterThan(0);
  });

  it.each(examples.map((e) => [e.name, e.json] as const))(
    '%s is accepted by calculate',
    async (_name, json) => {
      const isBody = typeof json === 'object' && json !== null && 'query' in json;
      const body = withSegment(isBody ? json : { query: json }, segmentId);
      const res = await svc.call('POST', '/tenant/segments/calculate', { body });
      expect(res.status, res.text).toBe(200);
    },
  );
});
