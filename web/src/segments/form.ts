// The builder's form state (segments/query.ts converts it to and from a segment query): its nodes,
// the operators, fields and values they offer, and the edits on them. Pure functions, no React.

export const OPS = [
  'eq',
  'neq',
  'gt',
  'gte',
  'lt',
  'lte',
  'between',
  'in',
  'not_in',
  'contains',
  'starts_with',
  'exists',
  'not_exists',
] as const;

export type Op = (typeof OPS)[number];

export const COUNT_OPS = ['eq', 'neq', 'gt', 'gte', 'lt', 'lte', 'between'] as const;

export type CountOp = (typeof COUNT_OPS)[number];

export const OP_LABELS: Record<Op, string> = {
  eq: 'equals',
  neq: 'is present and not',
  gt: 'greater than',
  gte: 'at least',
  lt: 'less than',
  lte: 'at most',
  between: 'between',
  in: 'is one of',
  not_in: 'is present and none of',
  contains: 'contains',
  starts_with: 'starts with',
  exists: 'exists',
  not_exists: 'is missing',
};

export type Arity = 'none' | 'one' | 'two' | 'list';

export function arityOf(op: Op | CountOp): Arity {
  if (op === 'exists' || op === 'not_exists') return 'none';
  if (op === 'between') return 'two';
  if (op === 'in' || op === 'not_in') return 'list';
  return 'one';
}

export type FieldType = 'text' | 'money' | 'number' | 'time';

export const FIELDS: Record<string, FieldType> = {
  email: 'text',
  first_name: 'text',
  last_name: 'text',
  rfm_segment: 'text',
  total_spend: 'money',
  predicted_clv: 'money',
  churn_risk_score: 'number',
  created_at: 'time',
  updated_at: 'time',
};

/** The operators a profile field takes (docs/segments.md, "Profile fields"). */
export function opsForField(field: string): Op[] {
  const t = FIELDS[field] ?? 'text';
  if (t === 'text') return [...OPS];
  if (t === 'time') return OPS.filter((o) => !['contains', 'starts_with', 'in', 'not_in'].includes(o));
  return OPS.filter((o) => o !== 'contains' && o !== 'starts_with');
}

export const EVENT_TYPES = ['track', 'page', 'identify', 'order'] as const;

export const ORDER_STATUSES = ['pending', 'completed', 'cancelled', 'refunded'] as const;

/** A value as typed in the form: its JSON type and its text. */
export interface Scalar {
  t: 'string' | 'number' | 'boolean';
  v: string;
}

export type Window =
  | { mode: 'all' }
  | { mode: 'within'; within_days: Scalar }
  | { mode: 'range'; from: string; to: string };

export interface PropertyTest {
  property: string;
  op: Op;
  values: Scalar[];
}

export interface Comparison {
  op: CountOp;
  values: Scalar[];
}

export type Node =
  | { kind: 'group'; id: string; combinator: 'and' | 'or'; children: Node[] }
  | { kind: 'not'; id: string; child: Node }
  | { kind: 'field'; id: string; field: string; op: Op; values: Scalar[] }
  | { kind: 'attribute'; id: string; path: string; op: Op; values: Scalar[] }
  | {
      kind: 'event';
      id: string;
      type: string;
      name: string;
      window: Window;
      where: PropertyTest[];
      count: Comparison | null;
    }
  | {
      kind: 'order';
      id: string;
      status: string[];
      statusIsList: boolean;
      window: Window;
      product_id: string;
      category: string;
      currency: string;
      measure: 'none' | 'count' | 'sum';
      comparison: Comparison;
    }
  | { kind: 'segment'; id: string; segment: string }
  | { kind: 'raw'; id: string; json: unknown };

export type NodeKind = Node['kind'];

let seq = 0;

export function newId(): string {
  seq += 1;
  return `n${seq}`;
}

/** The values a test holds after its operator changed: keep what still fits, pad what is missing. */
export function reshapeValues(op: Op | CountOp, values: Scalar[], t: Scalar['t'] = 'string'): Scalar[] {
  const blank = (): Scalar => ({ t: values[0]?.t ?? t, v: '' });
  switch (arityOf(op)) {
    case 'none':
      return [];
    case 'one':
      return [values[0] ?? blank()];
    case 'two':
      return [values[0] ?? blank(), values[1] ?? blank()];
    default:
      return values.length ? values : [blank()];
  }
}

// ---- windows ---------------------------------------------------------------------------------

/** The type a field's values take in the form. */
export function scalarTypeOfField(field: string): Scalar['t'] {
  const t = FIELDS[field];
  return t === 'money' || t === 'number' ? 'number' : 'string';
}

export function blank(kind: NodeKind): Node {
  const id = newId();
  switch (kind) {
    case 'group':
      return { kind, id, combinator: 'and', children: [] };
    case 'not':
      return { kind, id, child: blank('field') };
    case 'field':
      return { kind, id, field: 'total_spend', op: 'gte', values: [{ t: 'number', v: '100' }] };
    case 'attribute':
      return { kind, id, path: '', op: 'eq', values: [{ t: 'string', v: '' }] };
    case 'event':
      return { kind, id, type: 'track', name: '', window: { mode: 'all' }, where: [], count: null };
    case 'order':
      return {
        kind,
        id,
        status: [],
        statusIsList: false,
        window: { mode: 'all' },
        product_id: '',
        category: '',
        currency: '',
        measure: 'none',
        comparison: { op: 'gte', values: [{ t: 'number', v: '1' }] },
      };
    case 'segment':
      return { kind, id, segment: '' };
    case 'raw':
      return { kind, id, json: {} };
  }
}

/** Replaces the node with `id` anywhere in the tree (returns a new tree). */
export function replaceNode(root: Node, id: string, next: Node | null): Node | null {
  if (root.id === id) return next;
  if (root.kind === 'group') {
    const children = root.children.map((c) => replaceNode(c, id, next)).filter((c): c is Node => c !== null);
    return { ...root, children };
  }
  if (root.kind === 'not') {
    const child = replaceNode(root.child, id, next);
    return child ? { ...root, child } : null;
  }
  return root;
}

/** Conditions as the API counts them (each test node and each `where` test), for the limit of 100. */
export function countConditions(n: Node): number {
  switch (n.kind) {
    case 'group':
      return n.children.reduce((a, c) => a + countConditions(c), 0);
    case 'not':
      return countConditions(n.child);
    case 'event':
      return 1 + n.where.length;
    case 'raw':
      return 1;
    default:
      return 1;
  }
}
