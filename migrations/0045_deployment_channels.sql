-- Notification channels are the database's, not a schema's: deployments sharing one PostgreSQL
-- database under different schemas woke each other's loops and dropped each other's cached
-- settings. Every sender now appends the connection's `cdp.channel_suffix` (set by the service
-- for a schema other than `public`; empty otherwise), and each process listens on its own suffixed
-- names (src/platform/db/notify.ts holds the same expression for the statements the code sends).

CREATE OR REPLACE FUNCTION workspaces_settings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.settings IS DISTINCT FROM OLD.settings THEN
    NEW.settings_version := OLD.settings_version + 1;
    PERFORM pg_notify('cdp_settings_changed' || coalesce(current_setting('cdp.channel_suffix', true), ''),
                      NEW.id::text || ':' || NEW.settings_version::text);
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('cdp_outbox' || coalesce(current_setting('cdp.channel_suffix', true), ''), w)
    FROM (SELECT DISTINCT workspace_id::text AS w FROM added) a;
  RETURN NULL;
END $$;
