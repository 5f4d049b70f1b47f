-- Outbox facts read by snapshot, and a signal when they commit (src/modules/outbox).
--
-- seq is taken when a row is inserted, not when its transaction commits, so a reader that follows
-- seq alone can pass a fact whose transaction is still open and never see it. Each fact now carries
-- the id of the transaction that wrote it, and a reader's position is a snapshot (PgQ's method): the
-- next facts are those visible in a new snapshot and not in the one it read up to, in seq order. A transaction
-- that stays open for an hour delays only its own facts, and none is ever passed over.
--
-- Existing rows get xid 0 (a constant default costs no table rewrite), which every snapshot sees:
-- already read. The few a webhook fan-out had not reached yet get this transaction's id instead, so
-- they are read next. New rows take their writer's id.
ALTER TABLE outbox ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE outbox ALTER COLUMN xid SET DEFAULT pg_current_xact_id();

UPDATE outbox o SET xid = pg_current_xact_id()
 WHERE EXISTS (SELECT 1 FROM webhook_subscriptions s WHERE s.workspace_id = o.workspace_id)
   AND o.seq > COALESCE((SELECT c.last_seq FROM webhook_cursors c WHERE c.workspace_id = o.workspace_id), 0);

CREATE INDEX outbox_workspace_xid_idx ON outbox (workspace_id, xid, seq);
DROP INDEX outbox_workspace_idx;

-- `cdp_outbox` carries the workspace id of every transaction that wrote facts, at its commit (a
-- notification is delivered only then, and one per distinct payload per transaction), so readers
-- wake when there is something to read instead of polling.
CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cdp_outbox', w) FROM (SELECT DISTINCT workspace_id::text AS w FROM added) a;
  RETURN NULL;
END $$;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
  REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();

-- The webhook fan-out's position (src/modules/webhooks): `snap`, the snapshot read up to ('1:1:' sees
-- xid 0 only: every fact not read yet is ahead); while a snapshot's new facts are read in batches,
-- `next_snap` is that snapshot and `pos` the seq of the last fact done (seq order within the set).
ALTER TABLE webhook_cursors DROP COLUMN last_seq;
ALTER TABLE webhook_cursors ADD COLUMN snap pg_snapshot NOT NULL DEFAULT '1:1:';
ALTER TABLE webhook_cursors ADD COLUMN next_snap pg_snapshot;
ALTER TABLE webhook_cursors ADD COLUMN pos bigint NOT NULL DEFAULT 0;
