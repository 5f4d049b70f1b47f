import { type TSchema, Type } from 'typebox';
import { TRACKING_LIMITS } from './tracking.body';

export const tags = ['tracking api (Segment, RudderStack)'];

/** The clients send `null` for what they do not know (analytics-next: `"userId": null`). */
const orNull = <T extends TSchema>(t: T) => Type.Optional(Type.Union([t, Type.Null()]));
const Id = Type.Union([Type.String(), Type.Number()]);
const Time = Type.Union([Type.String(), Type.Number()], { description: 'ISO 8601 date-time (or epoch ms).' });
const Props = Type.Record(Type.String(), Type.Unknown());

export const MessageSchema = Type.Object(
  {
    type: orNull(Type.String({ description: 'In a batch: track, identify, page, screen, group or alias.' })),
    userId: orNull(Id),
    anonymousId: orNull(Id),
    messageId: orNull(Id),
    event: orNull(Type.String()),
    name: orNull(Type.String()),
    category: orNull(Type.String()),
    properties: orNull(Props),
    traits: orNull(Props),
    groupId: orNull(Id),
    previousId: orNull(Id),
    timestamp: orNull(Time),
    originalTimestamp: orNull(Time),
    sentAt: orNull(Time),
    context: orNull(Props),
    writeKey: Type.Optional(Type.String()),
  },
  {
    additionalProperties: true,
    description:
      'A Segment message (Segment HTTP Tracking API). Mapping into events: docs/ingestion.md, ' +
      '"Segment and RudderStack clients".',
  },
);

export const BatchSchema = Type.Object(
  {
    batch: Type.Array(MessageSchema, { description: `1 to ${TRACKING_LIMITS.batchMessages} messages.` }),
    sentAt: orNull(Time),
    context: orNull(Props),
    writeKey: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

export const AckSchema = Type.Object({
  success: Type.Literal(true),
  refused: Type.Optional(
    Type.Array(Type.Object({ path: Type.String(), message: Type.String() }), {
      description: 'Messages left out (the rest were stored), at most 100 named.',
    }),
  ),
});
