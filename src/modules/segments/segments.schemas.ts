import { Type } from 'typebox';
import { PageQuery, PaginationSchema } from '../../platform/cursor';
import { ProfileSchema } from '../profiles/profiles.schemas';
import { SEGMENT_LIMITS } from './query';

/** Limits of saved segments (docs/api.md, docs/segments.md). */
export const SEGMENT_NAME_MAX = 200;
export const SEGMENT_DESCRIPTION_MAX = 2000;
export const SEGMENTS_PER_WORKSPACE = 500;

const QUERY_DESCRIPTION =
  'A segment query (docs/segments.md): a JSON tree of `and` / `or` / `not` over conditions on profile ' +
  `fields, attributes, events, orders and other saved segments; at most ${SEGMENT_LIMITS.conditions} ` +
  `conditions and nesting depth ${SEGMENT_LIMITS.depth}. Checked by the service: a bad query is a 400 ` +
  'whose `details` name each faulty node by JSON pointer (`/query/and/2/op`).';

// The query is validated by the query language's own parser, which reports JSON-pointer paths per
// node; a schema union would report every branch instead.
const Query = Type.Unknown({ description: QUERY_DESCRIPTION });

const Name = Type.String({ minLength: 1, maxLength: SEGMENT_NAME_MAX, pattern: '\\S' });
const Description = Type.Union([Type.String({ maxLength: SEGMENT_DESCRIPTION_MAX }), Type.Null()]);

export const SegmentSchema = Type.Object({
  id: Type.String({ description: '`seg_…`' }),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  query: Type.Unknown({ description: 'The query as saved.' }),
  member_count: Type.Integer({ description: 'Profiles in the segment now.' }),
  membership_status: Type.Union([Type.Literal('current'), Type.Literal('computing')], {
    description:
      '`computing` while a full evaluation runs (just saved, query changed, a time window moved on): ' +
      '`member_count` then counts the profiles decided so far.',
  }),
  created_at: Type.String({ format: 'date-time' }),
  updated_at: Type.String({ format: 'date-time' }),
});

export const CreateSegmentBody = Type.Object(
  {
    name: Name,
    description: Type.Optional(Description),
    query: Query,
  },
  { additionalProperties: false },
);

export const PatchSegmentBody = Type.Object(
  {
    name: Type.Optional(Name),
    description: Type.Optional(Description),
    query: Type.Optional(Query),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const SegmentIdParams = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 100, description: 'The segment id (`seg_…`).' }),
});

export const ListSegmentsQuery = Type.Object(
  {
    ...PageQuery,
    profile_id: Type.Optional(
      Type.String({
        format: 'uuid',
        description:
          'Only the segments this profile is a member of now (a merged-away id lists the survivor’s).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const PageOnlyQuery = Type.Object({ ...PageQuery }, { additionalProperties: false });

export const CalculateBody = Type.Object(
  {
    query: Query,
    limit: PageQuery.limit,
    cursor: PageQuery.cursor,
  },
  { additionalProperties: false },
);

export const CalculateSchema = Type.Object({
  count: Type.Integer({ description: 'Live profiles the query selects now.' }),
  profiles: Type.Array(ProfileSchema, { description: 'This page of them, oldest profile first.' }),
  pagination: PaginationSchema,
});

export const ChangeSchema = Type.Object({
  profile_id: Type.String({ format: 'uuid' }),
  change: Type.Union([Type.Literal('entered'), Type.Literal('exited')]),
  at: Type.String({ format: 'date-time', description: 'When the refresh decided it.' }),
});

export const DeletedSegmentSchema = Type.Object({ id: Type.String(), deleted: Type.Literal(true) });
