/**
 * Test-only loader for the CDNOW fixtures (fixtures/cdnow/README.md). Reads files; nothing in the
 * product imports it.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Transaction } from './summaries';

export const CDNOW_DIR = join(import.meta.dirname, 'fixtures', 'cdnow');
export const CALIBRATION_END = '1997-09-30T00:00:00Z';
export const HOLDOUT_END = '1998-06-30T00:00:00Z';

export function readCdnowFile(name: string): string {
  return readFileSync(join(CDNOW_DIR, name), 'latin1');
}

export function hashCdnowFile(name: string): string {
  return createHash('sha256')
    .update(readFileSync(join(CDNOW_DIR, name)))
    .digest('hex');
}

function toIsoDate(yyyymmdd: string): string {
  return `${yyyymmdd.slice(0, 4)}-${yyyymmdd.slice(4, 6)}-${yyyymmdd.slice(6, 8)}T00:00:00Z`;
}

/**
 * Transactions by customer. The sample has no header and 5 columns (master id, sample id, date, CDs,
 * dollars; keyed by the sample id, as the summary CSV is); the master has a header and 4 columns.
 */
export function parseCdnow(text: string, kind: 'sample' | 'master'): Map<number, Transaction[]> {
  const out = new Map<number, Transaction[]>();
  for (const line of text.split(/\r?\n/)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4 || !/^\d+$/.test(f[0]!)) continue; // blank line or the master's header
    const [id, date, dollars] = kind === 'sample' ? [f[1]!, f[2]!, f[4]!] : [f[0]!, f[1]!, f[3]!];
    const key = Number(id);
    const list = out.get(key) ?? [];
    list.push({ at: toIsoDate(date), amount: Number(dollars) });
    out.set(key, list);
  }
  return out;
}

export interface PublishedSummary {
  id: number;
  x: number;
  tx: number;
  T: number;
  zbar: number;
}

export function parseSummaryCsv(text: string): PublishedSummary[] {
  return text
    .split(/\r?\n/)
    .slice(1)
    .filter((l) => l.trim() !== '')
    .map((l) => {
      const [id, x, tx, T, zbar] = l.split(',').map(Number);
      return { id: id!, x: x!, tx: tx!, T: T!, zbar: zbar! };
    });
}
