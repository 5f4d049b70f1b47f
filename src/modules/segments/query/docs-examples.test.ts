import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compileSegment } from './compile';
import { parseSegmentQuery } from './parse';
import { segmentReferences } from './references';
import type { SegmentQuery } from './types';

/**
 * Every worked example of docs/segments.md (a ```json block right after `<!-- example: name -->`)
 * must be a valid query that compiles: the guide cannot drift from the language. An example may
 * also be a whole calculate request body with `query`. (The HTTP test beside the service runs the
 * same examples through the API.)
 */
const DOC = join(import.meta.dirname, '../../../../docs/segments.md');
const EXAMPLE = /<!--\s*example:\s*([^>]*?)\s*-->\s*```json\s*\n([\s\S]*?)```/g;

const text = readFileSync(DOC, 'utf8');
const examples = [...text.matchAll(EXAMPLE)].map((m) => ({
  name: m[1]!,
  json: JSON.parse(m[2]!) as unknown,
}));
const asQuery = (json: unknown) =>
  typeof json === 'object' && json !== null && 'query' in json ? (json as { query: unknown }).query : json;

describe('docs/segments.md', () => {
  it('has a worked example for each kind of condition', () => {
    const all = JSON.stringify(examples.map((e) => e.json));
    for (const kind of ['"field"', '"attribute"', '"event"', '"order"', '"segment"', '"not"', '"or"']) {
      expect(all, kind).toContain(kind);
    }
    // Every marker is followed by a json block the extractor found.
    expect(examples.length).toBe(text.match(/<!--\s*example:/g)?.length);
  });

  it.each(examples.map((e) => [e.name, e.json] as const))('example %s parses and compiles', (_name, json) => {
    const r = parseSegmentQuery(asQuery(json));
    expect(r.ok ? [] : r.errors).toEqual([]);
    if (!r.ok) return;
    // Referenced saved segments stand in as a trivial query.
    const stand: SegmentQuery = { field: 'total_spend', op: 'gte', value: 0 };
    const segments = new Map(segmentReferences(r.query).map((id) => [id, stand]));
    const { sql, params } = compileSegment(r.query, { now: new Date(), segments, firstParam: 2 });
    expect(sql.length).toBeGreaterThan(0);
    expect(params.length).toBeGreaterThan(0);
  });
});
