-- Saved segments and their live membership (src/modules/segments). The segments module owns every
-- table here. Membership rows name profiles without a foreign key: a profile erased or merged away
-- leaves its segments through the segments module's own code (an exit recorded, or for an erasure
-- every row removed), never through a cascade from another owner's table.

CREATE TABLE segments (
  -- List order and cursor keyset; never shown to clients.
  seq bigserial UNIQUE,
  id text PRIMARY KEY,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  name text NOT NULL,
  description text,
  -- The query as the client sent it (validated by parseSegmentQuery before it is stored).
  query jsonb NOT NULL,
  -- The saved segments this one refers to, directly (DELETE refuses to orphan a reference).
  refs text[] NOT NULL DEFAULT '{}',
  -- True when its own query has a time window (segments it refers to aside): the schedule
  -- re-evaluates it, and every segment referring to it, as time passes.
  timed boolean NOT NULL DEFAULT false,
  -- A full evaluation in progress: the profiles.seq up to which it has been done (0: not started),
  -- null when none is pending. Saving or changing the query sets it to 0.
  full_after_seq bigint,
  -- Rows of segment_memberships, kept by the statements that change them (same transaction):
  -- reading a list of segments must not count every member of each.
  member_count integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX segments_list_idx ON segments (workspace_id, seq);

CREATE TABLE segment_memberships (
  segment_id text NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
  profile_id uuid NOT NULL,
  -- Members page in the order they entered.
  seq bigserial UNIQUE,
  entered_at timestamptz NOT NULL,
  PRIMARY KEY (segment_id, profile_id)
);

CREATE INDEX segment_memberships_page_idx ON segment_memberships (segment_id, seq);
CREATE INDEX segment_memberships_profile_idx ON segment_memberships (profile_id);

-- Every entry and exit, in the order they were decided (one refresh at a time per workspace).
CREATE TABLE segment_changes (
  seq bigserial PRIMARY KEY,
  segment_id text NOT NULL REFERENCES segments (id) ON DELETE CASCADE,
  profile_id uuid NOT NULL,
  change text NOT NULL CHECK (change IN ('entered', 'exited')),
  at timestamptz NOT NULL
);

CREATE INDEX segment_changes_segment_idx ON segment_changes (segment_id, seq);
CREATE INDEX segment_changes_profile_idx ON segment_changes (profile_id);

-- Profiles whose membership must be decided again (the pipeline and the API merge mark them; the
-- segments.refresh job drains them). Small and short-lived, vacuumed by a maintenance task.
CREATE TABLE segment_dirty_profiles (
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  profile_id uuid NOT NULL,
  PRIMARY KEY (workspace_id, profile_id)
);
