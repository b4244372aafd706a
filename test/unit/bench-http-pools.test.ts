/**
 * The keep-alive pool bound of connectors/http-undici.ts (CRAWL_HTTP_MAX_POOLS): hosts in
 * rotation beyond maxPools evict each other's pools, so a host comes back to a new connection;
 * within it, the connection is reused. Loopback only: 127.20.0.1-3 stand for three hosts.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpClient } from '../../connectors/http-undici';
import type { HttpFetchOptions } from '../../connectors/types';
import { DEFAULTS } from '../../lib/config';

const OPTS: HttpFetchOptions = {
  userAgent: 'kcrawl-test/1.0 (+http://example.invalid/bot)',
  connectTimeoutMs: 2000, overallTimeoutMs: 5000, maxHeaderBytes: 16 * 1024, maxBodyBytes: 1024 * 1024,
  maxDecompressionRatio: 100, allowPrivateNetwork: true,
};

interface Host { server: http.Server; url: string; connections: number }

async function startHost(ip: string): Promise<Host> {
  const host = { connections: 0 } as Host;
  host.server = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<p>ok</p>'));
  host.server.keepAliveTimeout = 30_000;
  host.server.on('connection', () => host.connections++);
  await new Promise<void>((resolve) => host.server.listen(0, ip, resolve));
  host.url = `http://${ip}:${(host.server.address() as AddressInfo).port}/`;
  return host;
}

describe('http client pool bound', () => {
  let hosts: Host[] = [];
  beforeAll(async () => {
    hosts = await Promise.all(['127.20.0.1', '127.20.0.2', '127.20.0.3'].map(startHost));
  });
  afterAll(async () => {
    await Promise.all(hosts.map((h) => new Promise((r) => { h.server.closeAllConnections(); h.server.close(r); })));
  });

  /** Visits the hosts round-robin twice; returns the connections the first host saw. */
  async function rotate(maxPools: number): Promise<number> {
    const before = hosts[0].connections;
    const client = createHttpClient({ maxPools });
    try {
      for (let round = 0; round < 2; round++) {
        for (const h of hosts) expect((await client.fetch(h.url, OPTS)).status).toBe(200);
      }
    } finally {
      await client.close();
    }
    return hosts[0].connections - before;
  }

  it('reuses a host connection when every host in rotation keeps its pool', async () => {
    expect(await rotate(3)).toBe(1);
  });

  it('opens a new connection when the rotation is wider than the pool bound', async () => {
    expect(await rotate(2)).toBe(2);
  });

  it('forgets a pool idle past its keep-alive once its connection is closed, however many the bound allows', async () => {
    // Servers that close idle connections after 100 ms (and say so: Keep-Alive: timeout=0).
    const quick = await Promise.all(['127.20.0.5', '127.20.0.6'].map(startHost));
    for (const h of quick) h.server.keepAliveTimeout = 100;
    const client = createHttpClient({ maxPools: 100, keepAliveTimeoutMs: 100 });
    try {
      for (const h of quick) expect((await client.fetch(h.url, OPTS)).status).toBe(200);
      expect(client.openPools).toBe(2);
      // Past keep-alive and its slack (1 s): both connections are closed, both pools forgotten.
      await new Promise((r) => setTimeout(r, 1300));
      expect((await client.fetch(hosts[2].url, OPTS)).status).toBe(200);
      expect(client.openPools).toBe(1);
      // A pool just used stays, and keeps its connection.
      const before = hosts[2].connections;
      expect((await client.fetch(hosts[2].url, OPTS)).status).toBe(200);
      expect(hosts[2].connections - before).toBe(0);
    } finally {
      await client.close();
      await Promise.all(quick.map((h) => new Promise((r) => { h.server.closeAllConnections(); h.server.close(r); })));
    }
  });

  it('keeps an idle pool whose connection the server keeps open longer (Keep-Alive: timeout=30)', async () => {
    const client = createHttpClient({ maxPools: 100, keepAliveTimeoutMs: 100 });
    const before = hosts[0].connections;
    try {
      expect((await client.fetch(hosts[0].url, OPTS)).status).toBe(200);
      await new Promise((r) => setTimeout(r, 1300));
      expect((await client.fetch(hosts[1].url, OPTS)).status).toBe(200);
      expect(client.openPools).toBe(2);
      expect((await client.fetch(hosts[0].url, OPTS)).status).toBe(200);
      expect(hosts[0].connections - before).toBe(1);
    } finally {
      await client.close();
    }
  });

  it('defaults to a bound that covers thousands of hosts', () => {
    expect(DEFAULTS.httpMaxPools).toBeGreaterThanOrEqual(5000);
  });
});
