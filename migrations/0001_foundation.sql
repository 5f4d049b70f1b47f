-- Workspaces (tenants), their API keys, and service-wide settings.

CREATE TABLE workspaces (
  id uuid PRIMARY KEY,
  name text NOT NULL,
  settings jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  -- seq gives list order and the keyset for cursors; never shown to clients.
  seq bigserial UNIQUE,
  id text PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name text NOT NULL,
  -- SHA-256 of the raw secret, hex. The raw secret is never stored.
  key_hash text NOT NULL UNIQUE,
  -- First characters of the secret (e.g. cdp_sk_AbCd), so an operator can tell keys apart.
  prefix text NOT NULL,
  scopes text[] NOT NULL,
  allowed_domains text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id, seq);

-- Secrets the service generates for itself on first start (e.g. the cursor key), shared by every
-- process using the same database.
CREATE TABLE system_settings (
  key text PRIMARY KEY,
  value text NOT NULL
);
