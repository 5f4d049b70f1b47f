-- Webhook deliveries in order per profile, and one attempt at a time (src/modules/webhooks).
--
-- order_key: the profile a fact is about (profile_id, or the surviving profile of a merge). A
-- delivery waits while an earlier one of the same subscription and key is still pending, so a
-- receiver sees a profile's facts in the order they happened (entered before exited, created before
-- its first order), retries included.
ALTER TABLE webhook_deliveries ADD COLUMN order_key text;
CREATE INDEX webhook_deliveries_order_idx ON webhook_deliveries (subscription_id, order_key, seq)
  WHERE status = 'pending' AND order_key IS NOT NULL;

-- The attempt under way and until when it may run: taken before sending, so two jobs that hold the
-- same attempt (a re-send, a released successor, a deferral) never send it at the same time.
ALTER TABLE webhook_deliveries ADD COLUMN attempt_until timestamptz;
