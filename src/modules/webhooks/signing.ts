import { createHmac, randomBytes } from 'node:crypto';

/**
 * Signatures of a delivery. Two schemes over the same bytes: the contract's `X-Service-Signature`
 * (hex HMAC-SHA256 of the raw body, keyed with the secret string as written) and Standard Webhooks
 * (https://www.standardwebhooks.com): `webhook-signature: v1,<base64 HMAC-SHA256 of
 * "{id}.{timestamp}.{body}">`, keyed with the base64-decoded part after `whsec_`, so any Standard
 * Webhooks library verifies it given the same secret.
 */
export const SECRET_PREFIX = 'whsec_';

/** A generated secret: `whsec_` + 32 random bytes in base64 (the Standard Webhooks form). */
export const newSecret = (): string => SECRET_PREFIX + randomBytes(32).toString('base64');

/** The Standard Webhooks key of a secret; a secret without the prefix is keyed with its UTF-8 bytes. */
export function standardKey(secret: string): Buffer {
  return secret.startsWith(SECRET_PREFIX)
    ? Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64')
    : Buffer.from(secret, 'utf8');
}

/** True for a secret whose `whsec_` part is real base64 of at least 16 bytes (or has no prefix). */
export function isUsableSecret(secret: string): boolean {
  if (!secret.startsWith(SECRET_PREFIX)) return true;
  const rest = secret.slice(SECRET_PREFIX.length);
  return /^[A-Za-z0-9+/]+={0,2}$/.test(rest) && rest.length % 4 === 0 && standardKey(secret).length >= 16;
}

export interface SignedHeaders {
  'x-service-signature': string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** Headers signing `body` (the exact bytes sent) for message `msgId` at `timestampSec` (Unix seconds). */
export function signDelivery(
  secret: string,
  msgId: string,
  timestampSec: number,
  body: string,
): SignedHeaders {
  const hex = createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');
  const std = createHmac('sha256', standardKey(secret))
    .update(`${msgId}.${timestampSec}.${body}`)
    .digest('base64');
  return {
    'x-service-signature': hex,
    'webhook-id': msgId,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': `v1,${std}`,
  };
}
