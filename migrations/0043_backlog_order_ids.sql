-- The order guard (processing/ordering.ts) orders the events of one order as it orders those of one
-- person: an order's later event must not be applied while another worker still holds its first,
-- or the later one would create the order (docs/commerce.md: total, items and profile come from the
-- first event, for good). Two devices nobody linked share no identifier, so the guard needs the
-- order id of the waiting events the other workers hold. The backlog row carries it, copied by the
-- same statement-level trigger as the identifiers (0009): reading it from the log would be a probe
-- per waiting event, since the backlog does not say which of them are orders. Null for every event
-- that is not an order; the raw payload value, which the guard reads as the orders step does.

ALTER TABLE event_backlog ADD COLUMN order_id text;

UPDATE event_backlog b SET order_id = e.payload->>'order_id'
  FROM events e WHERE e.seq = b.seq AND e.event_type = 'order';

CREATE OR REPLACE FUNCTION events_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO event_backlog (seq, workspace_id, anonymous_id, identity, order_id)
    SELECT seq, workspace_id, anonymous_id, identity,
           CASE WHEN event_type = 'order' THEN payload->>'order_id' END
      FROM new_events;
  RETURN NULL;
END $$;
