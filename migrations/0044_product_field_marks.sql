-- A product made from orders keeps, for each field, the mark of the mention that gave its value:
-- the event's time, then its seq in the log (docs/commerce.md, "Products"). A field takes a newer
-- mention's value, and its mark moves even when the value is the same. One time for the whole row,
-- moved only when a value changed (0004's observed_at), let an order arriving late rename a product
-- that a newer order had named with the same values, and let two workers' mentions win in commit
-- order; per-field marks make the result the same whatever order the mentions are applied in.

ALTER TABLE products
  ADD COLUMN name_at timestamptz,
  ADD COLUMN name_seq bigint,
  ADD COLUMN price_at timestamptz,
  ADD COLUMN price_seq bigint,
  ADD COLUMN category_at timestamptz,
  ADD COLUMN category_seq bigint;

-- What 0004 kept: the time of the last change, for every field that has a value (seq 0: before any
-- mention of the log).
UPDATE products SET
  name_at = CASE WHEN name IS NOT NULL THEN observed_at END,
  name_seq = CASE WHEN name IS NOT NULL THEN 0 END,
  price_at = CASE WHEN price IS NOT NULL THEN observed_at END,
  price_seq = CASE WHEN price IS NOT NULL THEN 0 END,
  category_at = CASE WHEN category IS NOT NULL THEN observed_at END,
  category_seq = CASE WHEN category IS NOT NULL THEN 0 END
WHERE source = 'orders' AND observed_at IS NOT NULL;

ALTER TABLE products DROP COLUMN observed_at;
