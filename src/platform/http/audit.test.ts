import { describe, expect, it } from 'vitest';
import { changedFields, checkDeclaration } from './audit';

describe('changedFields', () => {
  it('keeps only the fields that moved, nested ones too', () => {
    expect(
      changedFields(
        { a: 1, b: { c: 2, d: 3 }, e: [1], f: 'same' },
        { a: 1, b: { c: 2, d: 4 }, e: [1, 2], f: 'same', g: true },
      ),
    ).toEqual({ before: { b: { d: 3 }, e: [1], g: null }, after: { b: { d: 4 }, e: [1, 2], g: true } });
  });

  it('answers both whole when they are not objects', () => {
    expect(changedFields(null, { a: 1 })).toEqual({ before: null, after: { a: 1 } });
  });
});

describe('checkDeclaration', () => {
  it.each([
    [{ action: 'apikey.create', target: 'api_key' }],
    [{ action: 'webhook.rotate_secret', target: 'webhook', id: 'param.id' }],
    [{ action: 'model.fit', target: 'model_fit', id: 'answer.fit_id' }],
    [{ action: 'settings.update', target: 'workspace', id: 'workspace' }],
    [{ action: 'suppression.lift', target: 'suppression', id: 'none' }],
    [{ exempt: 'ingest: the event log records it' }],
  ] as const)('accepts %j', (d) => {
    expect(() => checkDeclaration('POST /x', d)).not.toThrow();
  });

  it.each([
    [{ action: 'create', target: 'api_key' }, /dotted name/],
    [{ action: 'ApiKey.Create', target: 'api_key' }, /dotted name/],
    [{ action: 'apikey.create', target: 'API key' }, /snake_case/],
    [{ action: 'apikey.create', target: 'api_key', id: 'query.id' }, /audit id/],
    [{ exempt: '' }, /must say why/],
  ] as const)('refuses %j at start', (d, message) => {
    expect(() => checkDeclaration('POST /x', d as never)).toThrow(message);
  });
});
