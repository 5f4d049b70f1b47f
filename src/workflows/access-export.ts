import { Readable } from 'node:stream';
import type { Db } from '../platform/db';
import type { DataSubject, PersonalDataRegistry } from '../platform/personal-data';

/**
 * GET /tenant/profiles/{id}/export (docs/profiles.md, "Access and portability export"): everything
 * held about one person, as one JSON document, written as it is read. Every section of every
 * registered owner (src/personal-data.ts) is in it, so a table registered for erasure is exported
 * too. Each section reads its rows in pages and the document is a stream that waits for the client
 * (Readable.from pulls the next chunk only when the socket has taken the last), so memory stays
 * bounded whatever the history.
 */

/** Sections written as one object rather than a list (the profile itself). */
const SINGLE = new Set(['profile']);
/** The document's format, for whoever reads it back. */
export const ACCESS_EXPORT_FORMAT = 'cdp.access-export.v1';

/** The document's text, chunk by chunk: a head, then each section in registry order. */
async function* documentOf(
  db: Db,
  registry: PersonalDataRegistry,
  subject: DataSubject,
  now: Date,
): AsyncGenerator<string> {
  const head = {
    format: ACCESS_EXPORT_FORMAT,
    workspace_id: subject.workspaceId,
    profile_id: subject.profileIds[0],
    generated_at: now.toISOString(),
  };
  yield `{"export":${JSON.stringify(head)}`;
  // The profile first (who this is about), then the rest in the registry's order.
  const sections = registry.owners
    .flatMap((o) => o.sections ?? [])
    .sort((a, b) => Number(SINGLE.has(b.name)) - Number(SINGLE.has(a.name)));
  for (const section of sections) {
    if (SINGLE.has(section.name)) {
      let one: unknown = null;
      for await (const row of section.rows(db, subject)) one = row;
      yield `,${JSON.stringify(section.name)}:${JSON.stringify(one)}`;
      continue;
    }
    yield `,${JSON.stringify(section.name)}:[`;
    let first = true;
    let chunk = '';
    for await (const row of section.rows(db, subject)) {
      chunk += (first ? '' : ',') + JSON.stringify(row);
      first = false;
      // About 64 KiB a write: few enough writes, little enough held.
      if (chunk.length >= 65_536) {
        yield chunk;
        chunk = '';
      }
    }
    yield `${chunk}]`;
  }
  yield '}\n';
}

/**
 * The export as a stream. Reads run on the analytics lane (on PGlite, after every request and
 * the workers; on PostgreSQL, on its own pool), a page per statement. A failure after the first
 * byte cannot change the status any more: the stream ends early and the document is not valid JSON,
 * which a reader cannot mistake for a complete one.
 */
export function streamAccessExport(
  db: Db,
  registry: PersonalDataRegistry,
  subject: DataSubject,
  now = new Date(),
): Readable {
  return Readable.from(documentOf(db.lane('analytics'), registry, subject, now), { objectMode: false });
}
