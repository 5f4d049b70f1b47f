-- Identifiers are now normalized before they are classified, matched and suppressed: Unicode NFC,
-- format characters (zero-width space and joiners, BOM, soft hyphen, …) removed, an e-mail domain's
-- trailing dot dropped (src/modules/identity/identifiers.ts). Values stored before may be in another
-- spelling of the same identifier, and two such spellings may belong to two profiles of one person.
-- This queues the one-off repair (src/workflows/repair.ts, `repair.look-alike-identifiers`): it gives
-- each stored identifier and each profile's e-mail field its normal form and merges the profiles that
-- turn out to hold one identifier, through the merge workflow, in short transactions. A job and not
-- this migration's own UPDATE: the normal form is computed by the same code that classifies every
-- new value (SQL has no Unicode format-character class, and lower() depends on the locale), a merge
-- spans every module, and a start never waits for it. Queued only where there is something that may
-- change: a value that is not plain ASCII (its bytes outnumber its characters) or an e-mail ending in
-- a dot. Plain ASCII values are unchanged by the normalization.
-- The suppression list keeps only SHA-256 digests and cannot be rewritten: suppressions are looked
-- up under the spellings older versions stored instead (docs/profiles.md, "Identifiers stored before
-- normalization").
INSERT INTO jobs (id, queue, key, payload, max_attempts)
SELECT 'job_0037_normalize_identifiers', 'repair.look-alike-identifiers', 'once', '{}'::jsonb, 10
 WHERE EXISTS (SELECT 1 FROM identity_nodes
                WHERE octet_length(value) <> char_length(value) OR (type = 'email' AND value LIKE '%.'))
    OR EXISTS (SELECT 1 FROM profiles
                WHERE email IS NOT NULL AND merged_into IS NULL
                  AND (octet_length(email) <> char_length(email) OR email LIKE '%.'))
ON CONFLICT DO NOTHING;
