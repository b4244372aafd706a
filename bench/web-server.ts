/**
 * Serves the benchmark's web from a child process of the benchmark, so its CPU is never counted
 * as the crawler's: one node:http server per host address, all on the same port. The web is the
 * real-page one (bench/real-web.ts, the default) or the lorem-ipsum micro-benchmark
 * (bench/synthetic-web.ts fillerHtml); both have the same hosts, links and robots.txt. Talks to
 * its parent over IPC:
 *   -> { ready: true, port }            once every address listens
 *   <- { cmd: 'stats' }  -> { stats }   politeness and page counts per client (User-Agent product)
 *   <- { cmd: 'reset' }                 start counting afresh (the next contender)
 *
 *   node dist/bench/web-server.js <hosts> <latencyMs> [real|lorem]
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { templatePages } from './corpus';
import { prepareTemplate, realPage, type Template } from './real-web';
import { fillerHtml, hostAddress, pageHtml, PAGE_BYTES, PolitenessTracker, type PolitenessSummary } from './synthetic-web';

/** Which web to serve: real pages (the default, every headline figure) or lorem ipsum (a labelled micro-benchmark). */
export type WebKind = 'real' | 'lorem';

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
  private readonly filler: string | null;
  private readonly templates: Template[];
  port = 0;

  constructor(readonly hosts: number, readonly latencyMs: number, readonly kind: WebKind = 'real') {
    this.filler = kind === 'lorem' ? fillerHtml(PAGE_BYTES) : null;
    this.templates = kind === 'real' ? templatePages().map(prepareTemplate) : [];
  }

  /** Page n of host h, as bytes (by name: the peer's links go to host names, see peer-crawlee.ts). */
  page(h: number, n: number, byName: boolean): Buffer | string {
    return this.filler !== null ? pageHtml(h, n, this.hosts, this.port, this.filler, byName) : realPage(this.templates, h, n, this.hosts, this.port, byName);
  }

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
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(this.page(h, n, (req.headers.host ?? '').startsWith('host')));
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
  const kind = process.argv[4] ?? 'real';
  if (kind !== 'real' && kind !== 'lorem') throw new Error(`web-server: unknown web ${kind} (real or lorem)`);
  const web = new SyntheticWeb(Number(process.argv[2] ?? 5000), Number(process.argv[3] ?? 0), kind);
  await web.start();
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'stats') process.send!({ stats: web.stats() });
    else if (m.cmd === 'reset') web.reset();
  });
  process.on('disconnect', () => void web.close().then(() => process.exit(0)));
  process.send!({ ready: true, port: web.port });
}

if (require.main === module) void main();
