-- Notification channels are the database's, not a schema's: deployments sharing one PostgreSQL
-- database under different schemas woke each other's loops and dropped each other's cached
-- settings. Every channel now carries its deployment's suffix, made from the schema: none for
-- `public`, else ':' and the first 12 hex digits of the schema name's SHA-256. The triggers take the
-- table's schema, so an UPDATE by hand from any session notifies the right processes; the code's
-- statements take the connection's schema (src/platform/db/notify.ts, the same expression, written
-- out in each place: a function would be looked up on the session's search_path), and each
-- process listens on the names with its own suffix.

CREATE OR REPLACE FUNCTION workspaces_settings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.settings IS DISTINCT FROM OLD.settings THEN
    NEW.settings_version := OLD.settings_version + 1;
    PERFORM pg_notify(
      'cdp_settings_changed' || CASE WHEN TG_TABLE_SCHEMA = 'public' THEN ''
        ELSE ':' || substr(encode(sha256(convert_to(TG_TABLE_SCHEMA, 'UTF8')), 'hex'), 1, 12) END,
      NEW.id::text || ':' || NEW.settings_version::text);
  END IF;
  RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(
      'cdp_outbox' || CASE WHEN TG_TABLE_SCHEMA = 'public' THEN ''
        ELSE ':' || substr(encode(sha256(convert_to(TG_TABLE_SCHEMA, 'UTF8')), 'hex'), 1, 12) END,
      w)
    FROM (SELECT DISTINCT workspace_id::text AS w FROM added) a;
  RETURN NULL;
END $$;
