import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { UsageError } from './commands';
import type { LockRecord } from './platform/db/data-dir-lock';

export interface ServiceAnswer {
  /** The JSON the command printed, or null when it wrote lines. */
  output: unknown;
  lines: string[];
}

/**
 * Runs a `cdp` command inside the service that holds the embedded database (POST /system/commands),
 * authenticated by the token the service wrote into its lock file: only a user who can read
 * DATA_DIR, and so could read the database itself, has it.
 *
 * node:http rather than fetch: a large demo load answers after minutes, past fetch's five-minute
 * wait for response headers. TLS is not verified: the address is the loopback one of the process
 * that holds the lock (alive a moment ago), whose certificate is made out to its public name.
 */
export function sendToService(holder: LockRecord, argv: string[]): Promise<ServiceAnswer> {
  const url = new URL('/system/commands', holder.url!);
  const body = JSON.stringify({ argv });
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const who = `the service (PID ${holder.pid}) at ${holder.url}`;
  return new Promise((resolve, reject) => {
    const req = send(
      url,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${holder.token}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
        rejectUnauthorized: false,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
        });
        res.on('error', reject);
        res.on('end', () => {
          let reply: { data?: ServiceAnswer; message?: string };
          try {
            reply = JSON.parse(text);
          } catch {
            reject(new Error(`${who} answered ${res.statusCode} with something other than JSON`));
            return;
          }
          const status = res.statusCode ?? 0;
          if (status === 200 && reply.data) resolve(reply.data);
          // The command's own input mistakes (no such workspace, a bad setting) are the caller's.
          else if (status === 400 || status === 404)
            reject(new UsageError(reply.message ?? `status ${status}`));
          else reject(new Error(`${who} answered ${status}: ${reply.message ?? text.slice(0, 200)}`));
        });
      },
    );
    req.on('error', (err: Error & { code?: string }) => {
      reject(Object.assign(new Error(`${who} did not answer: ${err.message}`), { code: err.code }));
    });
    req.end(body);
  });
}
