import { type TSchema, Type } from 'typebox';
import { PaginationSchema } from '../cursor';
import { ERROR_STATUS } from '../errors';

/** `{status:"success", data}`: every 2xx body but ingest acknowledgements. */
export const Envelope = <T extends TSchema>(data: T) =>
  Type.Object({ status: Type.Literal('success'), data });

export const PageEnvelope = <T extends TSchema>(item: T) =>
  Type.Object({ status: Type.Literal('success'), data: Type.Array(item), pagination: PaginationSchema });

export const ErrorEnvelopeSchema = Type.Object(
  {
    status: Type.Literal('error'),
    error_code: Type.Enum(Object.keys(ERROR_STATUS)),
    message: Type.String(),
    timestamp: Type.String({ format: 'date-time' }),
    request_id: Type.String({
      description:
        'The request’s id, also in the `X-Request-Id` answer header and in every log line of the request.',
    }),
    details: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { $id: 'ErrorEnvelope', description: 'Every error response.' },
);

export const ok = <T>(data: T) => ({ status: 'success' as const, data });

/** Timestamps leave the service as ISO 8601 UTC strings. */
export const iso = (d: Date | string | null): string | null =>
  d === null ? null : typeof d === 'string' ? new Date(d).toISOString() : d.toISOString();
