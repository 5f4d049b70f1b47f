// Exit 0 when the named service answers within 2 s: `node scripts/probe.mjs pg URL` or `redis URL`.
import net from 'node:net';
import pg from 'pg';

const [kind, url] = process.argv.slice(2);
const timer = setTimeout(() => process.exit(1), 2000);
try {
  if (kind === 'pg') {
    const c = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1500 });
    await c.connect();
    await c.query('SELECT 1');
    await c.end();
  } else {
    const { hostname, port } = new URL(url);
    await new Promise((resolve, reject) => {
      const s = net.connect(Number(port || 6379), hostname, () => s.write('PING\r\n'));
      s.on('data', (d) => (String(d).startsWith('+PONG') ? resolve(s.end()) : reject(new Error(String(d)))));
      s.on('error', reject);
    });
  }
  clearTimeout(timer);
  process.exit(0);
} catch {
  process.exit(1);
}
