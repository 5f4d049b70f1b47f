import { Type } from 'typebox';
import { ProfileSchema } from '../modules/profiles/profiles.schemas';

const ProfileId = Type.String({ maxLength: 100, description: 'Profile id (UUID).' });

export const MergeBody = Type.Object(
  {
    primary_profile_id: ProfileId,
    secondary_profile_ids: Type.Array(ProfileId, {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: 'Merged into the primary; each keeps resolving to it afterwards.',
    }),
  },
  { additionalProperties: false },
);

export const MergeResultSchema = Type.Object({
  primary_profile_id: Type.String({ format: 'uuid' }),
  merged_profile_ids: Type.Array(Type.String({ format: 'uuid' }), {
    description: 'Profiles merged by this call (ids already merged into the primary are left out).',
  }),
  profile: ProfileSchema,
});

export const GraphParams = Type.Object({ profile_id: ProfileId });

export const GraphSchema = Type.Object({
  profile_id: Type.String({
    format: 'uuid',
    description: 'The live profile (the survivor for a merged-away id).',
  }),
  nodes: Type.Array(
    Type.Object({
      id: Type.String({ format: 'uuid' }),
      type: Type.String({ description: '`email`, `phone`, `external_id` or `anonymous_id`.' }),
      value: Type.String(),
      first_seen: Type.String({ format: 'date-time' }),
      last_seen: Type.String({ format: 'date-time' }),
    }),
  ),
  edges: Type.Array(
    Type.Object({
      from: Type.String({ format: 'uuid', description: 'Node id (the anonymous id of the linking event).' }),
      to: Type.String({ format: 'uuid', description: 'Node id (the identity of the linking event).' }),
      event_id: Type.Union([Type.String(), Type.Null()]),
      created_at: Type.String({ format: 'date-time' }),
    }),
  ),
  merged_profile_ids: Type.Array(Type.String({ format: 'uuid' })),
});
