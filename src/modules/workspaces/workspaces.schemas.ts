import { Type } from 'typebox';

export const WorkspaceSchema = Type.Object({
  id: Type.String({ format: 'uuid' }),
  name: Type.String(),
  created_at: Type.String({ format: 'date-time' }),
});

/** Used by POST /system/workspaces and by `cdp workspace create`, so both accept the same names. */
export const CreateWorkspaceBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 200,
      // At least one visible character: a blank name would be unreadable in every listing.
      pattern: '\\S',
      description: 'Display name, 1–200 characters, not blank.',
    }),
  },
  { additionalProperties: false },
);
