-- Erasure that forgets everywhere (docs/profiles.md, "Erasure"): what the erasure workflow needs to
-- find a person's rows in the outbox and the webhook delivery log, and to keep events received
-- before an erasure from bringing the person back.

-- A webhook delivery can end two more ways: its profile was erased (the body is scrubbed and the
-- delivery is never sent again) or it was cancelled before it went out (a consent revocation).
ALTER TABLE webhook_deliveries DROP CONSTRAINT webhook_deliveries_status_check;
ALTER TABLE webhook_deliveries ADD CONSTRAINT webhook_deliveries_status_check
  CHECK (status IN ('pending', 'delivered', 'failed', 'dead', 'erased', 'cancelled'));

-- A person's deliveries by the profile their fact is about (order_key, migration 0018), whatever
-- their state.
CREATE INDEX webhook_deliveries_profile_idx ON webhook_deliveries (workspace_id, order_key)
  WHERE order_key IS NOT NULL;

-- A person's outbox facts by the profile they are about: `profile_id`, or the survivor of a merge
-- (src/modules/outbox, `factSubject`). An expression, not a column: no fact needs rewriting.
CREATE INDEX outbox_subject_idx ON outbox (workspace_id, (COALESCE(data ->> 'profile_id', data ->> 'primary_profile_id')))
  WHERE COALESCE(data ->> 'profile_id', data ->> 'primary_profile_id') IS NOT NULL;

-- An erasure's horizon: the identifiers of an erased person stay blocked for the events received
-- before the erasure (seq <= until_seq) that were still waiting, deferred or in flight when it
-- committed, so none of them can bring the person back. NULL: blocked for good (?suppress=true).
-- A horizon row goes once no event up to its seq waits any more (the maintenance schedule).
ALTER TABLE identifier_suppressions ADD COLUMN until_seq bigint;
