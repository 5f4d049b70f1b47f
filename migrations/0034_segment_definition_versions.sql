-- A version of each workspace's segment definitions (their queries, references and time flags),
-- bumped by a trigger in the transaction of every change: a process keeps the definitions it parsed
-- in memory and reads this one row to know they are still current (segments/definitions.cache.ts),
-- instead of reading and parsing every segment of the workspace in each refresh transaction. A
-- trigger rather than the repository's statements: no write of a definition can forget the bump.
--
-- Each bump takes a new value of a sequence rather than adding one: a sequence never hands a value
-- out twice, even to a transaction that rolls back, so definitions read (and kept) inside a
-- transaction that then rolls back can never be taken for those of a later version.
CREATE SEQUENCE segment_definition_version_seq;

CREATE TABLE segment_definition_versions (
  workspace_id uuid PRIMARY KEY,
  version bigint NOT NULL
);

CREATE FUNCTION bump_segment_definitions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO segment_definition_versions (workspace_id, version)
  VALUES (COALESCE(NEW.workspace_id, OLD.workspace_id), nextval('segment_definition_version_seq'))
  ON CONFLICT (workspace_id) DO UPDATE SET version = EXCLUDED.version;
  RETURN NULL;
END $$;

CREATE TRIGGER segments_definitions_written
  AFTER INSERT OR DELETE ON segments
  FOR EACH ROW EXECUTE FUNCTION bump_segment_definitions();

CREATE TRIGGER segments_definitions_changed
  AFTER UPDATE OF query, refs, timed ON segments
  FOR EACH ROW
  WHEN (OLD.query IS DISTINCT FROM NEW.query OR OLD.refs IS DISTINCT FROM NEW.refs
        OR OLD.timed IS DISTINCT FROM NEW.timed)
  EXECUTE FUNCTION bump_segment_definitions();
