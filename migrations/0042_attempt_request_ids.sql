-- Request ids on webhook attempts (docs/webhooks.md, "Request ids"): each attempt sends an
-- `X-Request-Id` to the receiver and keeps it here, so a receiver's logs, this service's logs and
-- the attempt list name the same request. A manual re-send's attempt carries the id of the
-- `redeliver` request (and so of its audit entry); a planned attempt gets one of its own.
-- Null for the attempts made before this migration.
ALTER TABLE webhook_attempts ADD COLUMN request_id text;
