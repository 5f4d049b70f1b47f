-- Consent (docs/profiles.md, "Consent"; docs/webhooks.md, "Consent").

-- The choices an event carried: `{"<category>": true | false}`, taken from a native event's
-- `consent.categories`, Segment's `context.consent.categoryPreferences` or RudderStack's
-- `context.consentManagement`. Null for the events that carried none (nearly all of them): a null
-- column costs a bit in the row's null bitmap and nothing else, and adding it rewrites nothing.
ALTER TABLE events ADD COLUMN consent jsonb;

-- Each profile's state per consent category: granted or not, when the choice was made (event time
-- or request time: a newer choice wins, as traits do), and who made it (an event or an API key).
-- A merge moves the merged-away profile's rows to the survivor, newer choice winning per category.
CREATE TABLE profile_consent (
  workspace_id uuid NOT NULL,
  profile_id uuid NOT NULL,
  category text NOT NULL,
  granted boolean NOT NULL,
  occurred_at timestamptz NOT NULL,
  source_type text NOT NULL CHECK (source_type IN ('event', 'api_key')),
  source_id text,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (profile_id, category)
);

-- The categories a subscription's facts need: a fact about a profile is delivered only when the
-- profile has granted every one (a category with no recorded choice counts as the workspace's
-- `consent_default`). Empty: no consent needed.
ALTER TABLE webhook_subscriptions ADD COLUMN consent_categories text[] NOT NULL DEFAULT '{}';
