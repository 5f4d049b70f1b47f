import type { Queryable } from '../../platform/db';
import { movedRowsFrom, movesParams, probeEach } from '../../platform/db/moves';
import { eventsBySeq } from '../ingest';
import type { IdentifierType } from './identifiers';

/** SQL of the identity graph. Keys and rows travel as one jsonb parameter (one round trip per batch). */

export interface NodeKey {
  workspace_id: string;
  type: IdentifierType;
  value: string;
}

/** A node as the pipeline needs it: which profile owns the identifier. */
export interface NodeRef extends NodeKey {
  id: string;
  profile_id: string;
}

export interface NodeRow extends NodeRef {
  first_seen: Date;
  last_seen: Date;
}

export interface EdgeRow {
  from_node: string;
  to_node: string;
  event_id: string | null;
  created_at: Date;
}

/**
 * The nodes that exist for these keys (any workspaces: each key carries its own). A batch looks up
 * about three thousand identifiers, so the statement is kept lean both ways: each workspace id is
 * sent once (keys name it by position), and a row comes back as the key's position, the node's id
 * and its owner, without the times (parsing two timestamps per row was most of its cost in the
 * service, docs/benchmarks.md). `ownedBy` keeps only the nodes of those profiles.
 */
export async function findNodes(
  q: Queryable,
  keys: readonly NodeKey[],
  ownedBy?: readonly string[],
): Promise<NodeRef[]> {
  if (keys.length === 0 || ownedBy?.length === 0) return [];
  const workspaces = [...new Set(keys.map((k) => k.workspace_id))];
  const position = new Map(workspaces.map((w, i) => [w, i + 1]));
  const params = [
    workspaces,
    keys.map((k) => position.get(k.workspace_id)!),
    keys.map((k) => k.type),
    keys.map((k) => k.value),
  ];
  // Arrays, not one jsonb document: parsing the keys was most of this statement's time.
  const keyRows = 'unnest($2::int[], $3::text[], $4::text[]) WITH ORDINALITY AS k(w, type, value, i)';
  const { rows } = ownedBy
    ? // From the owners' side (materialized, so the planner cannot turn it back into key probes):
      // each owner's nodes by one probe of the index of profile ids, matched to the keys in memory.
      // Probing the keys themselves cost twice as much per key, another worker writing those very
      // nodes; `profile_id = ANY(…)` was a sequential scan of every node in every call auto_explain
      // logged at 1M events (40–80 ms; docs/benchmarks.md).
      await q.query<{ i: number; id: string; profile_id: string }>(
        `WITH n AS MATERIALIZED (
           SELECT n.id, n.workspace_id, n.type, n.value, n.profile_id FROM unnest($5::uuid[]) AS o(id)
            ${probeEach('identity_nodes', 'x.profile_id = o.id', 'n')})
         SELECT k.i::int AS i, n.id, n.profile_id
           FROM n JOIN ${keyRows} ON n.workspace_id = ($1::uuid[])[k.w] AND n.type = k.type AND n.value = k.value`,
        [...params, ownedBy],
      )
    : // One probe of the unique key per identifier (a plain join was at times a hash of the table).
      await q.query<{ i: number; id: string; profile_id: string }>(
        `SELECT k.i::int AS i, n.id, n.profile_id
           FROM ${keyRows}
           ${probeEach(
             'identity_nodes',
             'x.workspace_id = ($1::uuid[])[k.w] AND x.type = k.type AND x.value = k.value',
             'n',
             'x.id, x.profile_id',
           )}`,
        params,
      );
  return rows.map((r) => ({ ...keys[r.i - 1]!, id: r.id, profile_id: r.profile_id }));
}

export interface NodeWrite extends NodeKey {
  id: string;
  profile_id: string;
  first_seen: string;
  last_seen: string;
}

/**
 * Writes nodes in one statement: new ones are inserted, known ones (same workspace, type and value)
 * move to `profile_id` and advance last_seen (never backwards). Rows go in key order: two writers
 * inserting the same new identifiers wait on each other's unique-index entries in one order. Returns the ids written: a new node
 * whose id is missing collided with one another transaction created meanwhile, and the caller must
 * roll back and retry with fresh lookups.
 */
export async function upsertNodes(q: Queryable, nodes: readonly NodeWrite[]): Promise<Set<string>> {
  if (nodes.length === 0) return new Set();
  const { rows } = await q.query<{ id: string }>(
    `INSERT INTO identity_nodes AS n (id, workspace_id, type, value, profile_id, first_seen, last_seen)
     SELECT id, workspace_id, type, value, profile_id, first_seen, last_seen
       FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, workspace_id uuid, type text, value text,
            profile_id uuid, first_seen timestamptz, last_seen timestamptz)
      ORDER BY workspace_id, type, value
     ON CONFLICT (workspace_id, type, value) DO UPDATE
       SET profile_id = EXCLUDED.profile_id, last_seen = GREATEST(n.last_seen, EXCLUDED.last_seen)
     RETURNING n.id`,
    [JSON.stringify(nodes)],
  );
  return new Set(rows.map((r) => r.id));
}

/** Every node of the merged-away profiles now belongs to their survivor. */
export async function repointNodes(
  q: Queryable,
  moves: ReadonlyArray<{ from: string; to: string }>,
): Promise<void> {
  if (moves.length === 0) return;
  await q.query(
    `UPDATE identity_nodes n SET profile_id = x.to_id
       FROM ${movedRowsFrom(1, 'identity_nodes', 'id', 'profile_id')} WHERE n.id = x.key`,
    movesParams(moves),
  );
}

export async function insertEdges(
  q: Queryable,
  edges: ReadonlyArray<{ workspace_id: string; from_node: string; to_node: string; event_id: string | null }>,
): Promise<void> {
  if (edges.length === 0) return;
  await q.query(
    `INSERT INTO identity_edges (workspace_id, from_node, to_node, event_id)
     SELECT workspace_id, from_node, to_node, event_id
       FROM jsonb_to_recordset($1::jsonb) AS r(workspace_id uuid, from_node uuid, to_node uuid, event_id text)
     ON CONFLICT (from_node, to_node) DO NOTHING`,
    [JSON.stringify(edges)],
  );
}

/**
 * A profile's nodes. last_seen is read from the profile's events rather than kept on the node:
 * writing it on every event would double the worker's writes. An event mentions a node when its
 * identity or anonymous id normalizes to the node's value (phones by their digits: the rare national
 * format such as `+44 (0)20…` only counts from first_seen).
 */
export async function listNodesOfProfile(
  q: Queryable,
  workspaceId: string,
  profileId: string,
): Promise<NodeRow[]> {
  const { rows } = await q.query<NodeRow>(
    `SELECT n.id, n.workspace_id, n.type, n.value, n.profile_id, n.first_seen,
            GREATEST(n.last_seen, (
              SELECT max(a.occurred_at) FROM event_profiles a
               ${eventsBySeq('a.seq', 'e')}
               WHERE a.workspace_id = n.workspace_id AND a.profile_id = n.profile_id
                 AND CASE n.type
                       WHEN 'anonymous_id' THEN lower(btrim(e.anonymous_id)) = n.value
                       WHEN 'email' THEN lower(btrim(e.identity)) = n.value
                       WHEN 'phone' THEN regexp_replace(e.identity, '[^0-9+]', '', 'g') = n.value
                       ELSE btrim(e.identity) = n.value
                     END)) AS last_seen
       FROM identity_nodes n
      WHERE n.workspace_id = $1 AND n.profile_id = $2 ORDER BY n.first_seen, n.type, n.value`,
    [workspaceId, profileId],
  );
  return rows;
}

export async function listEdgesOfProfile(
  q: Queryable,
  workspaceId: string,
  profileId: string,
): Promise<EdgeRow[]> {
  const { rows } = await q.query<EdgeRow>(
    `SELECT e.from_node, e.to_node, e.event_id, e.created_at FROM identity_edges e
       JOIN identity_nodes n ON n.id = e.from_node
      WHERE e.workspace_id = $1 AND n.profile_id = $2 ORDER BY e.seq`,
    [workspaceId, profileId],
  );
  return rows;
}

/**
 * The identifiers of these profiles, oldest first per profile (as the profile reads show them), by
 * one probe of the owner index per profile: every one, or without anonymous ids (what the resolver
 * weighs: anonymous ids never conflict).
 */
export async function listIdentifiersOfProfiles(
  q: Queryable,
  profileIds: readonly string[],
  opts: { anonymous: boolean } = { anonymous: true },
): Promise<Map<string, Array<{ type: IdentifierType; value: string }>>> {
  const out = new Map<string, Array<{ type: IdentifierType; value: string }>>();
  if (profileIds.length === 0) return out;
  const named = opts.anonymous ? '' : " AND x.type <> 'anonymous_id'";
  const { rows } = await q.query<{ profile_id: string; type: IdentifierType; value: string }>(
    `SELECT p.id AS profile_id, n.type, n.value FROM unnest($1::uuid[]) AS p(id)
       ${probeEach('identity_nodes', `x.profile_id = p.id${named}`, 'n', 'x.type, x.value, x.first_seen')}
      ORDER BY p.id, n.first_seen, n.type, n.value`,
    [[...new Set(profileIds)]],
  );
  for (const r of rows) {
    const list = out.get(r.profile_id) ?? [];
    list.push({ type: r.type, value: r.value });
    out.set(r.profile_id, list);
  }
  return out;
}

/** Every node of these profiles with its times, oldest first (the access export). */
export async function listNodesOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<NodeRow[]> {
  const { rows } = await q.query<NodeRow>(
    `SELECT n.* FROM unnest($2::uuid[]) AS p(id)
       ${probeEach('identity_nodes', 'x.profile_id = p.id AND x.workspace_id = $1', 'n')}
      ORDER BY n.first_seen, n.type, n.value`,
    [workspaceId, [...new Set(profileIds)]],
  );
  return rows;
}

/** The edges between these profiles' nodes, oldest first (the access export). */
export async function listEdgesOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<EdgeRow[]> {
  const { rows } = await q.query<EdgeRow>(
    `SELECT e.from_node, e.to_node, e.event_id, e.created_at FROM identity_edges e
       JOIN identity_nodes n ON n.id = e.from_node
      WHERE e.workspace_id = $1 AND n.profile_id = ANY($2::uuid[]) ORDER BY e.seq`,
    [workspaceId, profileIds],
  );
  return rows;
}

/** Erasure: the nodes of these profiles go, and their edges with them (ON DELETE CASCADE). */
export async function deleteNodesOfProfiles(
  q: Queryable,
  workspaceId: string,
  profileIds: readonly string[],
): Promise<number> {
  const { rowCount } = await q.query(
    'DELETE FROM identity_nodes WHERE workspace_id = $1 AND profile_id = ANY($2::uuid[])',
    [workspaceId, profileIds],
  );
  return rowCount;
}

/**
 * The repair of look-alike identifiers (src/workflows/repair.ts) walks the nodes by id, a window of
 * `window` nodes per statement (an index range, whatever the table's size), and answers the ones in
 * the window normalization may change: a value that is not plain ASCII, or an e-mail ending in a dot.
 * Every other value is unchanged by normalization (identifiers.test.ts shows it for ASCII). `last`
 * is the window's last id (null: the walk is done).
 */
export async function scanLookAlikeNodes(
  q: Queryable,
  afterId: string | null,
  window: number,
): Promise<{ last: string | null; rows: NodeRef[] }> {
  const { rows } = await q.query<NodeRef & { last: string }>(
    `WITH w AS (
       SELECT id, workspace_id, type, value, profile_id FROM identity_nodes
        WHERE id > COALESCE($1::uuid, '00000000-0000-0000-0000-000000000000'::uuid)
        ORDER BY id LIMIT $2)
     SELECT l.last, w.id, w.workspace_id, w.type, w.value, w.profile_id
       FROM (SELECT id AS last FROM w ORDER BY id DESC LIMIT 1) l
       LEFT JOIN w ON octet_length(w.value) <> char_length(w.value) OR (w.type = 'email' AND w.value LIKE '%.')`,
    [afterId, window],
  );
  const last = rows[0]?.last ?? null;
  return {
    last,
    rows: rows
      .filter((r) => r.id !== null)
      .map((r) => ({
        id: r.id,
        workspace_id: r.workspace_id,
        type: r.type,
        value: r.value,
        profile_id: r.profile_id,
      })),
  };
}

/** A node's identifier, read again by id inside the repair's transaction (null: erased meanwhile). */
export async function findNodeById(q: Queryable, workspaceId: string, id: string): Promise<NodeRef | null> {
  const { rows } = await q.query<NodeRef>(
    'SELECT id, workspace_id, type, value, profile_id FROM identity_nodes WHERE workspace_id = $1 AND id = $2',
    [workspaceId, id],
  );
  return rows[0] ?? null;
}

/** Gives a node its normalized identifier (the repair, when no node holds that one yet). */
export async function renameNode(
  q: Queryable,
  workspaceId: string,
  id: string,
  to: { type: IdentifierType; value: string },
): Promise<void> {
  await q.query('UPDATE identity_nodes SET type = $3, value = $4 WHERE workspace_id = $1 AND id = $2', [
    workspaceId,
    id,
    to.type,
    to.value,
  ]);
}

/**
 * Folds a look-alike node into the node of its normal form, both of one profile: its edges (the
 * evidence) now end at that node (an edge it would duplicate, or that would join the node to itself,
 * goes), the node's seen times widen to cover the look-alike's, and the look-alike goes.
 */
export async function foldNode(
  q: Queryable,
  workspaceId: string,
  fromId: string,
  intoId: string,
): Promise<void> {
  await q.query(
    `INSERT INTO identity_edges (workspace_id, from_node, to_node, event_id, created_at)
     SELECT workspace_id, f, t, event_id, created_at FROM (
       SELECT workspace_id, event_id, created_at,
              CASE WHEN from_node = $2 THEN $3::uuid ELSE from_node END AS f,
              CASE WHEN to_node = $2 THEN $3::uuid ELSE to_node END AS t
         FROM identity_edges WHERE workspace_id = $1 AND (from_node = $2 OR to_node = $2)) e
      WHERE f <> t
      ORDER BY f, t
     ON CONFLICT (from_node, to_node) DO NOTHING`,
    [workspaceId, fromId, intoId],
  );
  await q.query(
    `UPDATE identity_nodes n SET first_seen = LEAST(n.first_seen, o.first_seen), last_seen = GREATEST(n.last_seen, o.last_seen)
       FROM identity_nodes o WHERE n.workspace_id = $1 AND n.id = $3 AND o.id = $2`,
    [workspaceId, fromId, intoId],
  );
  // Its edges go with it (ON DELETE CASCADE).
  await q.query('DELETE FROM identity_nodes WHERE workspace_id = $1 AND id = $2', [workspaceId, fromId]);
}

/** Removes a look-alike node its profile may not keep (the repair could not merge the two owners). */
export async function deleteNode(q: Queryable, workspaceId: string, id: string): Promise<void> {
  await q.query('DELETE FROM identity_nodes WHERE workspace_id = $1 AND id = $2', [workspaceId, id]);
}
