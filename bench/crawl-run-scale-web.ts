/**
 * The servers of bench/crawl-run-scale.ts, a child process: a small page for any path on
 * hosts 0 … n-1 of the benchmark's loopback addresses (bench/synthetic-web.ts hostAddress), as
 * many as this process may open sockets for, all on one port. Over IPC: `mark` starts a new
 * count, `since` answers the requests since the mark and when the first arrived.
 *
 *   node dist/bench/crawl-run-scale-web.js <hosts>
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { hostAddress } from './synthetic-web';

/** Descriptors kept free for connections (the limit here is 20,000). */
const SPARE_FDS = 2000;
const FD_LIMIT = 20_000;

const PAGE = `<!doctype html><html lang="en"><head><title>seed</title></head><body><p>${'a seed page with nothing to follow. '.repeat(20)}</p></body></html>`;

async function main(): Promise<void> {
  const hosts = Number(process.argv[2] ?? 1000);
  let requests = 0;
  let firstAt: number | null = null;
  const servers: Server[] = [];
  let port = 0;
  for (let h = 0; h < Math.min(hosts, FD_LIMIT - SPARE_FDS); h++) {
    const server = createServer((req, res) => {
      requests++;
      firstAt ??= Date.now();
      if (req.url === '/robots.txt') res.writeHead(200, { 'content-type': 'text/plain' }).end('User-agent: *\nAllow: /\n');
      else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
    });
    server.keepAliveTimeout = 5000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, hostAddress(h), () => resolve());
    });
    if (h === 0) port = (server.address() as AddressInfo).port;
    servers.push(server);
  }
  process.on('message', (m: { cmd: string }) => {
    if (m.cmd === 'mark') {
      requests = 0;
      firstAt = null;
      process.send!({ ok: true });
    } else if (m.cmd === 'since') process.send!({ requests, firstAt });
  });
  process.send!({ port, listening: servers.length });
}

void main();
