-- Retention (docs/operations.md, "Retention"): each workspace's expired rows are removed by the
-- `retention.workspace` job in short batches, each batch one index range scan of the workspace's
-- oldest rows. Every index below serves exactly one sweep; without it a batch would read the
-- workspace's whole table (or, for event_properties, every property row of the profile) to find
-- a few expired rows. Their cost on the write paths is in docs/decisions.md ("Retention").

-- Events age from their receipt (docs/decisions.md says why not from their `timestamp`).
CREATE INDEX events_received_idx ON events (workspace_id, received_at);

-- An expired event's property rows, by its seq (their other indexes lead with the profile or the
-- event name, and an event's paths are not known without reading them).
CREATE INDEX event_properties_seq_idx ON event_properties (seq);

-- Dead letters age from when they were set aside.
CREATE INDEX dead_letters_created_idx ON dead_letters (workspace_id, created_at);

-- Outbox facts age from when they were written; the sweep removes those the fan-out has read.
CREATE INDEX outbox_created_idx ON outbox (workspace_id, created_at);

-- Settled deliveries only: a pending one is never removed, so it never needs to be found here.
CREATE INDEX webhook_deliveries_settled_idx ON webhook_deliveries (workspace_id, created_at)
  WHERE status <> 'pending';

-- Segment changes carry no workspace: the sweep reads each segment of the workspace in turn.
CREATE INDEX segment_changes_at_idx ON segment_changes (segment_id, at);

-- Lineage ages from when the change was recorded.
CREATE INDEX profile_lineage_recorded_idx ON profile_lineage (workspace_id, recorded_at);

-- What a finished job reports (the rows a retention sweep removed, …), shown by `cdp jobs`.
ALTER TABLE jobs ADD COLUMN result jsonb;
