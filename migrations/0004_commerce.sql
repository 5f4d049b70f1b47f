-- Orders and the product catalogue. Orders are created by the processing worker from `order` events
-- (idempotent by the merchant's order_id); products are upserted from order items and edited by
-- editors through the API. Money is numeric (never float): totals add up exactly.

CREATE TABLE orders (
  -- List order and cursor keyset; never shown to clients.
  seq bigserial UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  -- The merchant's order id: one order per id and workspace, so a re-sent event changes nothing.
  order_id text NOT NULL,
  -- Erasing a profile keeps the order for the books but drops its personal link (docs/profiles.md).
  profile_id uuid REFERENCES profiles (id) ON DELETE SET NULL,
  status text NOT NULL,
  total numeric(18, 2) NOT NULL CHECK (total >= 0),
  currency text NOT NULL,
  -- Line items as sent with the first event of the order: [{product_id, name, price, quantity, category}].
  items jsonb NOT NULL DEFAULT '[]'::jsonb,
  -- When the order was placed (event time of the first event seen for it).
  occurred_at timestamptz NOT NULL,
  -- The event that created the order, and the event time of the last status change (a late event
  -- older than that cannot overwrite a newer status).
  event_id text NOT NULL,
  status_at timestamptz NOT NULL,
  -- Set the first time the order reaches `completed`: order.completed is written once per order.
  completed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, order_id)
);

-- GET /tenant/orders: newest first, optionally one profile's; also total_spend recomputation.
CREATE INDEX orders_list_idx ON orders (workspace_id, occurred_at DESC, seq DESC);
CREATE INDEX orders_profile_idx ON orders (workspace_id, profile_id, occurred_at DESC, seq DESC);

CREATE TABLE products (
  seq bigserial UNIQUE,
  workspace_id uuid NOT NULL REFERENCES workspaces (id) ON DELETE CASCADE,
  -- The merchant's product id (the {id} of /tenant/products/{id}).
  product_id text NOT NULL,
  name text,
  price numeric(18, 2) CHECK (price >= 0),
  currency text,
  category text,
  -- `orders`: known only from order items, which keep it current (latest event wins).
  -- `api`: created or edited by an editor; order items never overwrite it.
  source text NOT NULL CHECK (source IN ('orders', 'api')),
  -- Event time of the order item that last wrote it (source `orders`), so a late event cannot
  -- replace a newer price.
  observed_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (workspace_id, product_id)
);

CREATE INDEX products_list_idx ON products (workspace_id, seq);
CREATE INDEX products_category_idx ON products (workspace_id, category, seq);
