-- Workspace settings changes reach every service process within milliseconds, not when a cache
-- expires: every change of `workspaces.settings` (the API, `cdp settings set`, an UPDATE by hand)
-- bumps `settings_version` and notifies `cdp_settings_changed` with `<workspace id>:<version>`,
-- delivered at COMMIT. Processes drop their cached copy and confirm (modules/workspaces/settings.store.ts);
-- the version makes each change's token unique, so a confirmation of an older change is never
-- taken for this one.

ALTER TABLE workspaces ADD COLUMN settings_version bigint NOT NULL DEFAULT 0;

-- A BEFORE trigger, so the bumped version is what the UPDATE returns; a notification of a
-- transaction that rolls back is never delivered.
CREATE FUNCTION workspaces_settings_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.settings IS DISTINCT FROM OLD.settings THEN
    NEW.settings_version := OLD.settings_version + 1;
    PERFORM pg_notify('cdp_settings_changed', NEW.id::text || ':' || NEW.settings_version::text);
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER workspaces_settings_changed BEFORE UPDATE ON workspaces
  FOR EACH ROW EXECUTE FUNCTION workspaces_settings_changed();
