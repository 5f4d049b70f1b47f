import { createHmac, randomBytes } from 'node:crypto';

/**
 * Signatures of a delivery. Two schemes over the same bytes: the documented `X-Service-Signature` (docs/webhooks.md)
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

/** What signing needs of a subscription: its secret and, during a grace period, the one it replaced. */
export interface SigningSecrets {
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * The secrets that sign a delivery made at `now`: the current one first, then the previous one
 * while its grace period lasts (a rotation keeps the old secret valid so receivers can switch).
 */
export function activeSecrets(sub: SigningSecrets, now: Date): string[] {
  const graced =
    sub.previous_secret !== null &&
    sub.previous_secret_expires_at !== null &&
    new Date(sub.previous_secret_expires_at).getTime() > now.getTime();
  return graced ? [sub.secret, sub.previous_secret!] : [sub.secret];
}

export interface SignedHeaders {
  'x-service-signature': string;
  /** During a rotation's grace period only: the same HMAC keyed with the previous secret. */
  'x-service-signature-previous'?: string;
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

const hexSignature = (secret: string, body: string) =>
  createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex');

/**
 * Headers signing `body` (the exact bytes sent) for message `msgId` at `timestampSec` (Unix seconds).
 * `secrets` is one secret, the active secrets (current first), or a subscription, whose secrets
 * active now are used. With two secrets `X-Service-Signature` carries the current
 * one's HMAC, `X-Service-Signature-Previous` the previous one's, and `webhook-signature` both
 * (space-separated, as Standard Webhooks allows: a verifier accepts any that matches).
 */
export function signDelivery(
  secrets: string | readonly string[] | SigningSecrets,
  msgId: string,
  timestampSec: number,
  body: string,
): SignedHeaders {
  const list =
    typeof secrets === 'string'
      ? [secrets]
      : Array.isArray(secrets)
        ? (secrets as readonly string[])
        : // Now, not the whole second of the timestamp: a grace period ends when it says.
          activeSecrets(secrets as SigningSecrets, new Date());
  const [current, previous] = list;
  if (current === undefined) throw new Error('signDelivery: no secret');
  const std = list.map(
    (s) =>
      `v1,${createHmac('sha256', standardKey(s)).update(`${msgId}.${timestampSec}.${body}`).digest('base64')}`,
  );
  return {
    'x-service-signature': hexSignature(current, body),
    ...(previous === undefined ? {} : { 'x-service-signature-previous': hexSignature(previous, body) }),
    'webhook-id': msgId,
    'webhook-timestamp': String(timestampSec),
    'webhook-signature': std.join(' '),
  };
}

/**
 * Every header of one delivery attempt: the signatures, the event type, the delivery id (the same on
 * every attempt; receivers deduplicate on it) and the user agent. A test send uses it too, so it is
 * signed exactly like a real delivery.
 */
export function deliveryHeaders(
  secrets: string | readonly string[] | SigningSecrets,
  deliveryId: string,
  eventType: string,
  body: string,
  timestampSec: number = Math.floor(Date.now() / 1000),
): Record<string, string> {
  return {
    ...signDelivery(secrets, deliveryId, timestampSec, body),
    'x-service-event': eventType,
    'x-service-delivery': deliveryId,
    'user-agent': USER_AGENT,
  };
}

export const USER_AGENT = 'cdp-webhooks/1';
