import { Type } from 'typebox';
import { PageQuery } from '../../platform/cursor';
import { MAX_ACCOUNT_ID_LENGTH, MAX_LISTED_MEMBERS, MEMBER_COUNT_CAP } from './accounts.limits';

const Seen = (what: string) => Type.String({ format: 'date-time', description: what });

export const AccountSchema = Type.Object({
  id: Type.String({
    description: 'The group id as the `group` call sent it (`groupId`); unique per workspace.',
  }),
  traits: Type.Record(Type.String(), Type.Unknown(), {
    description:
      'The traits of the `group` calls, top-level keys merged, the newer call winning by its time; at most 256 KiB as JSON.',
  }),
  first_seen: Seen('The time of the earliest `group` call naming the account.'),
  last_seen: Seen('The time of the latest `group` call naming the account.'),
  created_at: Type.String({ format: 'date-time', description: 'When the first call reached the service.' }),
  updated_at: Type.String({ format: 'date-time', description: 'When a call last wrote its traits.' }),
});

export const AccountMemberSchema = Type.Object({
  profile_id: Type.String({ format: 'uuid', description: 'The (surviving) profile that made the calls.' }),
  first_seen: Seen('Its earliest `group` call naming the account.'),
  last_seen: Seen('Its latest `group` call naming the account.'),
});

export const AccountDetailSchema = Type.Object({
  ...AccountSchema.properties,
  member_count: Type.Integer({
    minimum: 0,
    description: `The profiles that made a \`group\` call naming the account, counted up to ${MEMBER_COUNT_CAP.toLocaleString('en')}.`,
  }),
  members: Type.Array(AccountMemberSchema, {
    maxItems: MAX_LISTED_MEMBERS,
    description: `The ${MAX_LISTED_MEMBERS} most recently seen members at most, latest first; \`GET /tenant/accounts?profile_id=\` answers the other way round.`,
  }),
});

export const ListAccountsQuery = Type.Object(
  {
    ...PageQuery,
    profile_id: Type.Optional(
      Type.String({
        format: 'uuid',
        description: 'Only the accounts this profile is a member of (a merged-away id lists the survivor’s).',
      }),
    ),
  },
  { additionalProperties: false },
);

export const AccountIdParams = Type.Object({
  id: Type.String({
    minLength: 1,
    maxLength: MAX_ACCOUNT_ID_LENGTH,
    description: 'The group id, URL-encoded.',
  }),
});
