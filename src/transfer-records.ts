/**
 * The records of an export file as `cdp export` reads them off the wire, and as tests read them:
 * NDJSON lines end with LF; CSV records (RFC 4180) end with CRLF outside quotes, and a quoted field
 * may hold line breaks. A record is complete once its terminator arrived; what follows is kept until
 * the rest of it comes (or the connection drops, and the export resumes after the last complete one).
 */
export type RecordFormat = 'ndjson' | 'csv';

export interface RecordSplitter {
  /** The records completed by this chunk, each with its terminator. */
  push(chunk: string): string[];
  /** What was received after the last complete record. */
  pending(): string;
}

export function createRecordSplitter(format: RecordFormat): RecordSplitter {
  let buf = '';
  // CSV: how far `buf` was scanned, and whether that point is inside quotes.
  let scanned = 0;
  let quoted = false;
  return {
    pending: () => buf,
    push(chunk) {
      buf += chunk;
      const out: string[] = [];
      let start = 0;
      if (format === 'ndjson') {
        for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n', start)) {
          out.push(buf.slice(start, nl + 1));
          start = nl + 1;
        }
      } else {
        let i = scanned;
        while (i < buf.length) {
          if (quoted) {
            const q = buf.indexOf('"', i);
            if (q === -1) {
              i = buf.length;
              break;
            }
            // A doubled quote is a quote inside the field: it toggles twice, so the state holds.
            quoted = false;
            i = q + 1;
            continue;
          }
          const q = buf.indexOf('"', i);
          const nl = buf.indexOf('\n', i);
          if (nl !== -1 && (q === -1 || nl < q)) {
            out.push(buf.slice(start, nl + 1));
            start = nl + 1;
            i = nl + 1;
          } else if (q !== -1) {
            quoted = true;
            i = q + 1;
          } else {
            i = buf.length;
          }
        }
        scanned = i - start;
      }
      if (start > 0) buf = buf.slice(start);
      return out;
    },
  };
}

/**
 * The first field of a complete record: the record's id, which `after` takes (an NDJSON record's
 * first key, a CSV record's first column). Null when the record has none (a CSV header has one:
 * the caller knows to skip it).
 */
export function firstField(record: string, format: RecordFormat): string | null {
  if (format === 'ndjson') {
    const m = /^\{"[^"]*":("(?:[^"\\]|\\.)*")/.exec(record);
    return m ? (JSON.parse(m[1]!) as string) : null;
  }
  if (record.startsWith('"')) {
    let out = '';
    let i = 1;
    for (;;) {
      const q = record.indexOf('"', i);
      if (q === -1) return null;
      out += record.slice(i, q);
      if (record[q + 1] === '"') {
        out += '"';
        i = q + 2;
      } else return out;
    }
  }
  const end = record.search(/[,\r\n]/);
  return end === -1 ? record : record.slice(0, end);
}

/** Every field of one complete CSV record (RFC 4180), for tests and checks. */
export function parseCsvRecord(record: string): string[] {
  const fields: string[] = [];
  let i = 0;
  const text = record.replace(/\r?\n$/, '');
  for (;;) {
    if (text[i] === '"') {
      let out = '';
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q === -1) throw new Error('unterminated quoted field');
        out += text.slice(i, q);
        if (text[q + 1] === '"') {
          out += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      fields.push(out);
    } else {
      const comma = text.indexOf(',', i);
      fields.push(text.slice(i, comma === -1 ? text.length : comma));
      i = comma === -1 ? text.length : comma;
    }
    if (i >= text.length) return fields;
    if (text[i] !== ',') throw new Error(`expected a comma at ${i}`);
    i++;
  }
}
