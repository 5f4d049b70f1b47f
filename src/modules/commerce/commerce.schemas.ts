import { Type } from 'typebox';
import { PageQuery } from '../../platform/cursor';
import { MAX_AMOUNT, MAX_TEXT } from '../ingest';

// NUL and unpaired surrogates are refused for every input before these schemas run (the text rule,
// platform/http/text-rule.ts), so no pattern here repeats it.
/** Ids: no surrounding whitespace (order events trim theirs, so both sides agree). */
const ID_PATTERN = '^\\S([\\s\\S]*\\S)?$';
const Text = (opts: { minLength?: number; maxLength: number; description?: string }) => Type.String(opts);
const Id = (description?: string) =>
  Type.String({
    minLength: 1,
    maxLength: MAX_TEXT,
    pattern: ID_PATTERN,
    ...(description ? { description } : {}),
  });

const Money = (description: string) => Type.Number({ minimum: 0, maximum: MAX_AMOUNT, description });
const Nullable = <T extends ReturnType<typeof Type.String>>(t: T) => Type.Union([t, Type.Null()]);

export const OrderItemSchema = Type.Object({
  product_id: Type.Union([Type.String(), Type.Null()]),
  name: Type.Union([Type.String(), Type.Null()]),
  price: Type.Union([Type.Number({ description: 'Unit price, in the order currency.' }), Type.Null()]),
  quantity: Type.Integer({ minimum: 1 }),
  category: Type.Union([Type.String(), Type.Null()]),
});

export const OrderSchema = Type.Object({
  order_id: Type.String({ description: 'The merchant’s order id (unique per workspace).' }),
  profile_id: Type.Union([Type.String({ format: 'uuid' }), Type.Null()], {
    description: 'The (surviving) profile that placed it; null after that profile was erased.',
  }),
  status: Type.String({ description: '`completed` counts towards total_spend; any other status does not.' }),
  total: Type.Number({ description: 'Decimal amount in `currency` (2 decimal places).' }),
  currency: Type.String({ description: 'ISO 4217 code.' }),
  items: Type.Array(OrderItemSchema),
  occurred_at: Type.String({ format: 'date-time', description: 'When the order was placed (event time).' }),
  event_id: Type.String({ description: 'The event that created the order.' }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const ProductSchema = Type.Object({
  product_id: Type.String({ description: 'The merchant’s product id; the `{id}` of /tenant/products/{id}.' }),
  name: Type.Union([Type.String(), Type.Null()]),
  price: Type.Union([Type.Number(), Type.Null()], { description: 'Decimal amount in `currency`.' }),
  currency: Type.Union([Type.String(), Type.Null()]),
  category: Type.Union([Type.String(), Type.Null()]),
  source: Type.Union([Type.Literal('orders'), Type.Literal('api')], {
    description:
      '`orders`: known from order items, kept current by newer orders. `api`: created or edited by an ' +
      'editor; order items never overwrite it.',
  }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const ListOrdersQuery = Type.Object(
  {
    ...PageQuery,
    profile_id: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'Only this profile’s orders (a merged-away id lists the survivor’s).',
      }),
    ),
    status: Type.Optional(Text({ minLength: 1, maxLength: 50, description: 'Exact status.' })),
  },
  { additionalProperties: false },
);

export const ListProductsQuery = Type.Object(
  {
    ...PageQuery,
    category: Type.Optional(Text({ minLength: 1, maxLength: MAX_TEXT, description: 'Exact category.' })),
  },
  { additionalProperties: false },
);

export const OrderIdParams = Type.Object({ order_id: Id('The merchant’s order id.') });

export const ProductIdParams = Type.Object({ id: Id('The merchant’s product_id.') });

const Name = Text({ minLength: 1, maxLength: MAX_TEXT });
const Price = Type.Union([Money('Unit price; null clears it.'), Type.Null()]);
const Currency = Nullable(
  Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217; defaults to USD once a price is set.' }),
);
const Category = Nullable(Text({ minLength: 1, maxLength: MAX_TEXT }));

export const SaveProductBody = Type.Object(
  {
    product_id: Id('The merchant’s product id; an existing one is updated.'),
    name: Name,
    price: Type.Optional(Price),
    currency: Type.Optional(Currency),
    category: Type.Optional(Category),
  },
  { additionalProperties: false },
);

export const PatchProductBody = Type.Object(
  {
    name: Type.Optional(Name),
    price: Type.Optional(Price),
    currency: Type.Optional(Currency),
    category: Type.Optional(Category),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const DeletedProductSchema = Type.Object({ product_id: Type.String(), deleted: Type.Literal(true) });
