/**
 * Serves the synthetic web (bench/synthetic-web.ts) from a child process of the benchmark, so
 * its CPU is never counted as the crawler's: one node:http server per host address, all on the
 * same port. Talks to its parent over IPC:
 *   -> { ready: true, port }            once every address listens
 *   <- { cmd: 'stats' }  -> { stats }   politeness and page counts per client (User-Agent product)
 *   <- { cmd: 'reset' }                 start counting afresh (the next contender)
 *
 *   node dist/bench/web-server.js <hosts> <latencyMs>
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { fillerHtml, hostAddress, pageHtml, PAGE_BYTES, PolitenessTracker, type PolitenessSummary } from './synthetic-web';

const ROBOTS = 'User-agent: *\nAllow: /\n';

/** The client a request comes from: the User-Agent's product token (KCrawl, got-scraping's browser UA…). */
export function clientOf(ua: string | undefined): string {
  if (!ua) return 'unknown';
  if (ua.startsWith('KCrawl')) return 'kcrawl';
  return 'peer';
}

export class SyntheticWeb {
  private readonly servers: Server[] = [];
  private trackers = new Map<string, PolitenessTracker>();
  /** Connections per client, counted at their first request: with keep-alive, far fewer than requests. */
  private connections = new Map<string, number>();
  private readonly sockets = new WeakSet<Socket>();
  private readonly filler = fillerHtml(PAGE_BYTES);
  port = 0;

  constructor(readonly hosts: number, readonly latencyMs: number) {}

  private tracker(client: string): PolitenessTracker {
    let t = this.trackers.get(client);
    if (!t) this.trackers.set(client, (t = new PolitenessTracker()));
    return t;
  }

  private handler(h: number, ip: string) {
    return (req: IncomingMessage, res: ServerResponse): void => {
      const path = req.url ?? '/';
      const isPage = path.startsWith('/p/') || path === '/';
      const client = clientOf(req.headers['user-agent']);
      const done = this.tracker(client).arrive(ip, Date.now(), isPage);
      if (!this.sockets.has(req.socket)) {
        this.sockets.add(req.socket);
        this.connections.set(client, (this.connections.get(client) ?? 0) + 1);
      }
      res.on('close', done);
      const respond = (): void => {
        if (path === '/robots.txt') {
          res.writeHead(200, { 'content-type': 'text/plain' }).end(ROBOTS);
          return;
        }
        const n = path === '/' ? 0 : Number(path.slice(3));
        if (!isPage || !Number.isInteger(n) || n < 0) {
          res.writeHead(404, { 'content-type': 'text/html' }).end('<h1>not found</h1>');
          return;
        }
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(pageHtml(h, n, this.hosts, this.port, this.filler, (req.headers.host ?? '').startsWith('host')));
      };
      if (this.latencyMs > 0) setTimeout(respond, this.latencyMs);
      else respond();
    };
  }

  async start(): Promise<void> {
    for (let h = 0; h < this.hosts; h++) {
      const ip = hostAddress(h);
      const server = createServer(this.handler(h, ip));
      server.keepAliveTimeout = 10_000;
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(this.port, ip, () => resolve());
      });
      if (h === 0) this.port = (server.address() as AddressInfo).port;
      this.servers.push(server);
    }
  }

  stats(): Record<string, PolitenessSummary> {
    return Object.fromEntries([...this.trackers].map(([k, t]) => [k, { ...t.summary(), connections: this.connections.get(k) ?? 0 }]));
  }

  reset(): void {
    this.trackers = new Map();
    this.connections = new Map();
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.map((s) => new Promise((r) => { s.closeAllConnections(); s.close(r); })));
  }
}

async function main(): Promise<void> {
  const web = new SyntheticWeb(Number(process.argv[2] ?? 5000), Number(process.argv[3] ?? 0));
  await web.start();
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'stats') process.send!({ stats: web.stats() });
    else if (m.cmd === 'reset') web.reset();
  });
  process.on('disconnect', () => void web.close().then(() => process.exit(0)));
  process.send!({ ready: true, port: web.port });
}

if (require.main === module) void main();
