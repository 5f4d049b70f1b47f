import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import type { Duplex } from 'node:stream';
import { webhookPolicy } from './policy';
import { blockedError, guardLookup, refusalOf, refusedAddressMessage } from './url-guard';

/**
 * Where delivery connections come from: one keep-alive pool per destination (host and port), so a
 * burst to one receiver reuses its connections instead of paying a TCP and TLS handshake per
 * attempt. Every new connection is checked before it is made, unless private destinations are
 * allowed: an address host against the guard, a name through a guarded DNS lookup. A connection
 * taken from the pool was checked when it was opened, and still goes to that checked address.
 */

type CreateConnection = (
  options: ConnectOptions,
  callback: (err: Error | null, socket?: Duplex) => void,
) => Duplex | undefined;
interface ConnectOptions {
  host?: string | null;
  lookup?: LookupFunction;
  [key: string]: unknown;
}

/** `createConnection` with the guard in front of it. */
function guarded(create: CreateConnection): CreateConnection {
  return (options, callback) => {
    const host = (options.host ?? 'localhost').replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      // node:net does not call `lookup` for an address host: it is checked here instead.
      const why = refusalOf(host);
      if (why) {
        process.nextTick(callback, blockedError(refusedAddressMessage(host, why)));
        return undefined;
      }
      return create(options, callback);
    }
    return create({ ...options, lookup: guardLookup(options.lookup) }, callback);
  };
}

/**
 * An idle pooled connection is closed after this; node's agent closes it a second before a
 * receiver's `Keep-Alive: timeout=N` when that is sooner.
 */
const IDLE_MS = 15_000;

function makeAgents(allowPrivate: boolean) {
  const options = {
    keepAlive: true,
    // As many connections to one destination as attempts run at once in a process, no more.
    maxSockets: webhookPolicy.concurrency,
    maxFreeSockets: webhookPolicy.concurrency,
    timeout: IDLE_MS,
    scheduling: 'lifo' as const, // the most recently used connection: the least likely to be stale
  };
  const httpAgent = new http.Agent(options);
  const httpsAgent = new https.Agent(options);
  if (!allowPrivate) {
    for (const agent of [httpAgent, httpsAgent]) {
      const a = agent as unknown as { createConnection: CreateConnection };
      a.createConnection = guarded(a.createConnection.bind(agent));
    }
  }
  return { 'http:': httpAgent, 'https:': httpsAgent } as Record<string, http.Agent>;
}

const agents = new Map<boolean, Record<string, http.Agent>>();

/** The agent for a destination's scheme; made once per process and setting. */
export function agentFor(protocol: string, allowPrivate: boolean): http.Agent {
  let set = agents.get(allowPrivate);
  if (!set) {
    set = makeAgents(allowPrivate);
    agents.set(allowPrivate, set);
  }
  const agent = set[protocol];
  if (!agent) throw new Error(`no agent for ${protocol}`);
  return agent;
}
