/**
 * The segment query language (docs/segments.md): a JSON tree of `and` / `or` / `not`
 * over conditions. These types describe a tree that parseSegmentQuery has accepted; the compiler and
 * the evaluator rely on every invariant the parser checks (value types per operator, limits).
 */

export const OPERATORS = [
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'not_in',
  'contains',
  'starts_with',
  'exists',
  'not_exists',
  'between',
] as const;
export type Operator = (typeof OPERATORS)[number];

/** Operators of `count` and `sum` tests (a count always exists, so exists/in/… make no sense). */
export const AGGREGATE_OPERATORS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between'] as const;
export type AggregateOperator = (typeof AGGREGATE_OPERATORS)[number];

/**
 * Profile columns a `field` condition may test, by kind. `money` columns are numeric(18,2): their
 * values may have at most 2 decimals, which keeps the in-memory evaluator exact.
 */
export const PROFILE_FIELD_KINDS = {
  email: 'text',
  first_name: 'text',
  last_name: 'text',
  rfm_segment: 'text',
  total_spend: 'money',
  predicted_clv: 'money',
  churn_risk_score: 'number',
  created_at: 'time',
  updated_at: 'time',
} as const;
export type ProfileFieldName = keyof typeof PROFILE_FIELD_KINDS;
export type FieldKind = (typeof PROFILE_FIELD_KINDS)[ProfileFieldName];

/** Kept in step with the ingest module's EVENT_TYPES by a test (this core imports no module). */
export const EVENT_TYPE_NAMES = ['track', 'page', 'identify', 'order'] as const;
/** Kept in step with the commerce module's ORDER_STATUSES by a test. */
export const ORDER_STATUS_NAMES = ['pending', 'completed', 'cancelled', 'refunded'] as const;
export type OrderStatusName = (typeof ORDER_STATUS_NAMES)[number];

export type Scalar = string | number | boolean;
/** `value` by operator: a scalar, a list (in/not_in), a pair (between) or nothing (exists). */
export type TestValue = Scalar | Scalar[];

export interface FieldCondition {
  field: ProfileFieldName;
  op: Operator;
  value?: TestValue;
}

/** `attribute` is a dotted path into profiles.attributes ("plan.tier"; "tags.0" indexes arrays). */
export interface AttributeCondition {
  attribute: string;
  op: Operator;
  value?: TestValue;
}

/** The same tests over an event's payload ("where" of an event condition). */
export interface PropertyCondition {
  property: string;
  op: Operator;
  value?: TestValue;
}

export interface AggregateTest {
  op: AggregateOperator;
  value: number | [number, number];
}

/** A time window: `within_days` back from `now`, or `from` (inclusive) / `to` (exclusive). */
export interface Window {
  within_days?: number;
  from?: string;
  to?: string;
}

export interface EventFilter extends Window {
  type?: (typeof EVENT_TYPE_NAMES)[number];
  name?: string;
  where?: PropertyCondition[];
}

export interface EventCondition {
  event: EventFilter;
  /** Absent: at least one matching event. `{"op":"eq","value":0}`: none ("did not occur"). */
  count?: AggregateTest;
}

export interface OrderFilter extends Window {
  /** Default `completed`; a list matches any of them. */
  status?: OrderStatusName | OrderStatusName[];
  product_id?: string;
  category?: string;
  currency?: string;
}

export interface OrderCondition {
  order: OrderFilter;
  count?: AggregateTest;
  /** Sum of the matching orders' totals (0 when there are none). */
  sum?: AggregateTest;
}

export interface SegmentCondition {
  segment: string;
}

export type SegmentQuery =
  | { and: SegmentQuery[] }
  | { or: SegmentQuery[] }
  | { not: SegmentQuery }
  | FieldCondition
  | AttributeCondition
  | EventCondition
  | OrderCondition
  | SegmentCondition;

export interface QueryError {
  /** JSON pointer into the query, e.g. "/and/2/value". */
  path: string;
  message: string;
}

export const SEGMENT_LIMITS = {
  /** Conditions in one query (each leaf and each `where` item counts one). */
  conditions: 100,
  /** Nesting depth: the root is level 1, each and/or/not adds one. */
  depth: 10,
  /** Characters in any string value, name, path or id. */
  string: 500,
  /** Elements of an `in` / `not_in` list. */
  list: 100,
  /** Segments in an attribute or property path. */
  pathSegments: 10,
  /** `where` items of one event condition. */
  where: 20,
  /** Largest absolute number in a comparison. */
  number: 1e15,
  /** Largest `count` value. */
  count: 1_000_000,
  /** `within_days` range. */
  withinDaysMin: 1,
  withinDaysMax: 3650,
  /** After inlining referenced segments (compile/evaluate refuse bigger trees). */
  expandedConditions: 1000,
  expandedDepth: 50,
  /** Errors reported for one query; the rest are dropped. */
  errors: 50,
} as const;
