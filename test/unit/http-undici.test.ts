/**
 * The undici HttpClient against a real node:http server on loopback with misbehaving routes.
 * All traffic stays on 127.0.0.0/8; distinct 127.x addresses stand in for distinct hosts.
 */
import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import { createHttpClient } from '../../connectors/http-undici';
import { FetchError, type HttpCapture, type HttpClient, type HttpFetchOptions } from '../../connectors/types';
import { DnsCache, type DnsBackend, type ResolvedAddress } from '../../lib/net/dns-cache';

jest.setTimeout(30_000);

const MiB = 1024 * 1024;
const PAGE = Buffer.from(`<!doctype html><html><head><title>ok</title></head><body>${'hello crawler '.repeat(200)}</body></html>`);
const GZIP_BOMB = zlib.gzipSync(Buffer.alloc(10 * MiB), { level: 9 }); // ≈10 KiB → 10 MiB
// Gzip members concatenate: 1024 × (1 MiB of zeros) ≈ 1 MiB on the wire → 1 GiB decoded.
const GZIP_BOMB_HUGE = Buffer.concat(Array(1024).fill(zlib.gzipSync(Buffer.alloc(MiB), { level: 9 })));
const BROTLI_BOMB = zlib.brotliCompressSync(Buffer.alloc(64 * MiB), {
  params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 5 },
}); // ≈100 B → 64 MiB
const SIX_MIB = Buffer.alloc(6 * MiB, 'a');

function opts(over: Partial<HttpFetchOptions> = {}): HttpFetchOptions {
  return {
    userAgent: 'kcrawl-test/1.0 (+http://example.invalid/bot)',
    connectTimeoutMs: 2000,
    overallTimeoutMs: 5000,
    maxHeaderBytes: 16 * 1024,
    maxBodyBytes: 5 * MiB,
    maxDecompressionRatio: 100,
    allowPrivateNetwork: true,
    ...over,
  };
}

/** One node:http server per loopback address, counting requests and sockets. */
interface TestServer {
  server: http.Server;
  port: number;
  base: string;
  requests: number;
  sockets: number;
  hosts: string[];
}

function route(req: http.IncomingMessage, res: http.ServerResponse): void {
  const send = (body: Buffer, headers: http.OutgoingHttpHeaders = {}): void => {
    res.writeHead(200, { 'Content-Type': 'text/html', 'Content-Length': body.length, ...headers });
    res.end(body);
  };
  switch (req.url) {
    case '/ok':
    case '/':
      return send(PAGE);
    case '/gzip':
      return send(zlib.gzipSync(PAGE), { 'Content-Encoding': 'gzip' });
    case '/br':
      return send(zlib.brotliCompressSync(PAGE), { 'Content-Encoding': 'br' });
    case '/deflate':
      return send(zlib.deflateSync(PAGE), { 'Content-Encoding': 'deflate' });
    case '/deflate-raw':
      return send(zlib.deflateRawSync(PAGE), { 'Content-Encoding': 'deflate' });
    case '/gzip-bomb':
      return send(GZIP_BOMB, { 'Content-Encoding': 'gzip' });
    case '/gzip-bomb-huge':
      return send(GZIP_BOMB_HUGE, { 'Content-Encoding': 'gzip' });
    case '/brotli-bomb':
      return send(BROTLI_BOMB, { 'Content-Encoding': 'br' });
    case '/nested-encoding':
      return send(zlib.brotliCompressSync(zlib.gzipSync(PAGE)), { 'Content-Encoding': 'gzip, br' });
    case '/unknown-encoding':
      return send(Buffer.from('zstd-bytes'), { 'Content-Encoding': 'zstd' });
    case '/corrupt-gzip':
      return send(Buffer.concat([zlib.gzipSync(PAGE).subarray(0, 20), Buffer.alloc(200, 0xff)]), { 'Content-Encoding': 'gzip' });
    case '/six-mib':
      return send(SIX_MIB);
    case '/redirect':
      res.writeHead(302, { Location: '/ok', 'Content-Length': 0 });
      return void res.end();
    case '/slow-drip': {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      const t = setInterval(() => res.write('x'), 100);
      res.on('close', () => clearInterval(t));
      return;
    }
    case '/endless-chunked': {
      res.writeHead(200, { 'Content-Type': 'text/plain' }); // no length: chunked
      const chunk = Buffer.alloc(16 * 1024, 'z');
      const pump = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', pump);
      };
      return pump();
    }
    case '/huge-headers': {
      for (let i = 0; i < 64; i++) res.setHeader(`X-Pad-${i}`, 'p'.repeat(1000));
      return send(PAGE);
    }
    case '/close-mid-body':
      res.writeHead(200, { 'Content-Type': 'text/plain', 'Content-Length': 1000 });
      res.write(Buffer.alloc(100, 'c'));
      setTimeout(() => res.socket?.destroy(), 50);
      return;
    case '/reset':
      return void req.socket.destroy();
    case '/stall':
      return; // never answers
    case '/slow-answer':
      return void setTimeout(() => send(PAGE), 300);
    default:
      res.writeHead(404, { 'Content-Length': 0 });
      res.end();
  }
}

function startServer(host: string): Promise<TestServer> {
  return new Promise((resolve) => {
    const ts = { requests: 0, sockets: 0, hosts: [] as string[] } as TestServer;
    ts.server = http.createServer((req, res) => {
      ts.requests++;
      ts.hosts.push(req.headers.host ?? '');
      route(req, res);
    });
    ts.server.on('connection', () => ts.sockets++);
    ts.server.listen(0, host, () => {
      ts.port = (ts.server.address() as net.AddressInfo).port;
      ts.base = `http://${host}:${ts.port}`;
      resolve(ts);
    });
  });
}

/** A raw TCP server: records the exact request bytes and answers with `reply(path)`. */
function startRawServer(host: string, reply: (path: string) => string | null) {
  const state = { port: 0, received: [] as string[], sockets: new Set<net.Socket>(), server: null as unknown as net.Server };
  state.server = net.createServer((sock) => {
    state.sockets.add(sock);
    sock.on('close', () => state.sockets.delete(sock));
    let buf = '';
    sock.on('data', (d) => {
      buf += d.toString('latin1');
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const headText = buf.slice(0, end + 4);
      buf = buf.slice(end + 4);
      state.received.push(headText);
      const out = reply(headText.split(' ')[1]);
      if (out !== null) sock.write(out, 'latin1');
    });
    sock.on('error', () => undefined);
  });
  return new Promise<typeof state>((resolve) =>
    state.server.listen(0, host, () => {
      state.port = (state.server.address() as net.AddressInfo).port;
      resolve(state);
    }),
  );
}

async function fetchError(p: Promise<unknown>): Promise<FetchError> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(FetchError);
    return e as FetchError;
  }
  throw new Error('expected a FetchError');
}

/** Peak RSS / arrayBuffers growth while `fn` runs, sampled every 2 ms. */
async function measure<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const before = process.memoryUsage();
  let peakRss = before.rss;
  let peakAb = before.arrayBuffers;
  const t = setInterval(() => {
    const m = process.memoryUsage();
    peakRss = Math.max(peakRss, m.rss);
    peakAb = Math.max(peakAb, m.arrayBuffers);
  }, 2);
  try {
    return await fn();
  } finally {
    clearInterval(t);
    const after = process.memoryUsage();
    peakRss = Math.max(peakRss, after.rss);
    peakAb = Math.max(peakAb, after.arrayBuffers);
    const mb = (n: number): string => (n / MiB).toFixed(1);
    // eslint-disable-next-line no-console
    console.log(`[memory] ${label}: peak RSS +${mb(peakRss - before.rss)} MiB, peak arrayBuffers +${mb(peakAb - before.arrayBuffers)} MiB`);
  }
}

let s1: TestServer; // 127.0.0.1
let s2: TestServer; // 127.0.0.2
let raw: Awaited<ReturnType<typeof startRawServer>>; // 127.0.0.4
let silent: net.Server; // 127.0.0.3: accepts TCP, never speaks
const silentSockets = new Set<net.Socket>();
let client: HttpClient;

beforeAll(async () => {
  [s1, s2] = await Promise.all([startServer('127.0.0.1'), startServer('127.0.0.2')]);
  raw = await startRawServer('127.0.0.4', (path) => {
    if (path.startsWith('/echo')) return 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Dup: a\r\nx-dup: b\r\nServer:  spaced \r\n\r\nok';
    if (path === '/garbage') return 'HTCPCP/9 I am a teapot\r\n\r\n';
    if (path === '/bad-length') return 'HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\nxx';
    return null;
  });
  silent = net.createServer((s) => {
    silentSockets.add(s);
    s.on('close', () => silentSockets.delete(s));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.3', r));
  client = createHttpClient();
});

afterAll(async () => {
  await client.close();
  for (const s of [s1, s2]) {
    s.server.closeAllConnections();
    s.server.close();
  }
  for (const s of [...raw.sockets, ...silentSockets]) s.destroy();
  raw.server.close();
  silent.close();
});

describe('ordinary exchanges', () => {
  it('fetches /ok with status, raw headers, request head and address', async () => {
    const c = await client.fetch(`${s1.base}/ok#frag`, opts());
    expect(c.status).toBe(200);
    expect(c.statusText).toBe('OK');
    expect(c.body.equals(PAGE)).toBe(true);
    expect(c.truncated).toBe(false);
    expect(c.ip).toBe('127.0.0.1');
    expect(c.url).toBe(`${s1.base}/ok`);
    expect(c.headers).toContainEqual(['Content-Type', 'text/html']);
    expect(c.requestHead).toMatch(/^GET \/ok HTTP\/1\.1\r\nhost: 127\.0\.0\.1:\d+\r\n/);
    expect(c.requestHead).toContain('User-Agent: kcrawl-test/1.0');
    expect(c.requestHead).toContain('Accept-Encoding: gzip, deflate, br\r\n');
    expect(c.requestHead.endsWith('\r\n\r\n')).toBe(true);
  });

  it('requestHead is byte-for-byte what the server received; headers keep order, case and repeats', async () => {
    const c = await client.fetch(`http://127.0.0.4:${raw.port}/echo?q=1&r=%20`, opts({ headers: { 'If-None-Match': '"abc"' } }));
    expect(c.requestHead).toBe(raw.received[raw.received.length - 1]);
    expect(c.requestHead).toContain('If-None-Match: "abc"\r\n');
    expect(c.headers).toEqual([
      ['Content-Length', '2'],
      ['X-Dup', 'a'],
      ['x-dup', 'b'],
      ['Server', 'spaced'],
    ]);
    expect(c.body.toString()).toBe('ok');
  });

  it.each([['/gzip'], ['/br'], ['/deflate'], ['/deflate-raw']])('decodes %s', async (path) => {
    const c = await client.fetch(`${s1.base}${path}`, opts());
    expect(c.truncated).toBe(false);
    expect(c.body.equals(PAGE)).toBe(true);
  });

  it('stores an unknown encoding raw', async () => {
    const c = await client.fetch(`${s1.base}/unknown-encoding`, opts());
    expect(c.truncated).toBe(false);
    expect(c.body.toString()).toBe('zstd-bytes');
  });

  it('returns a redirect as-is without following it', async () => {
    const before = s1.requests;
    const c = await client.fetch(`${s1.base}/redirect`, opts());
    expect(c.status).toBe(302);
    expect(c.headers).toContainEqual(['Location', '/ok']);
    expect(s1.requests - before).toBe(1);
  });

  it('reuses one connection for sequential requests to the same origin', async () => {
    const s = await startServer('127.0.0.5');
    const c2 = createHttpClient();
    try {
      for (let i = 0; i < 3; i++) expect((await c2.fetch(`${s.base}/ok`, opts())).status).toBe(200);
      expect(s.requests).toBe(3);
      expect(s.sockets).toBe(1);
    } finally {
      await c2.close();
      s.server.closeAllConnections();
      s.server.close();
    }
  });
});

describe('hostile responses', () => {
  it('stops the 10 MiB gzip bomb by ratio, memory bounded', async () => {
    const c = await measure('gzip bomb 10 MiB (ratio 100, cap 5 MiB)', () => client.fetch(`${s1.base}/gzip-bomb`, opts()));
    expect(c.truncated).toBe('decompression');
    expect(c.body.length).toBeLessThanOrEqual(5 * MiB);
  });

  it('stops the 1 GiB gzip bomb at the body cap when the ratio allows it', async () => {
    const o = opts({ maxBodyBytes: 2 * MiB, maxDecompressionRatio: 1e9 });
    const c = await measure('gzip bomb 1 GiB (ratio off, cap 2 MiB)', () => client.fetch(`${s1.base}/gzip-bomb-huge`, o));
    expect(c.truncated).toBe('length');
    expect(c.body.length).toBe(2 * MiB);
  });

  it('stops the 64 MiB brotli bomb', async () => {
    const c = await measure('brotli bomb 64 MiB (ratio 100, cap 5 MiB)', () => client.fetch(`${s1.base}/brotli-bomb`, opts()));
    expect(c.truncated).toBe('decompression');
    expect(c.body.length).toBeLessThanOrEqual(5 * MiB);
    const o = opts({ maxBodyBytes: 3 * MiB, maxDecompressionRatio: 1e9 });
    const d = await measure('brotli bomb 64 MiB (ratio off, cap 3 MiB)', () => client.fetch(`${s1.base}/brotli-bomb`, o));
    expect(d.truncated).toBe('length');
    expect(d.body.length).toBe(3 * MiB);
  });

  it('refuses nested content-encodings with an empty body', async () => {
    const c = await client.fetch(`${s1.base}/nested-encoding`, opts());
    expect(c.status).toBe(200);
    expect(c.truncated).toBe('decompression');
    expect(c.body.length).toBe(0);
  });

  it('marks corrupt gzip as decompression-truncated', async () => {
    const c = await client.fetch(`${s1.base}/corrupt-gzip`, opts());
    expect(c.truncated).toBe('decompression');
  });

  it('cuts a slow drip at the overall deadline', async () => {
    const c = await client.fetch(`${s1.base}/slow-drip`, opts({ overallTimeoutMs: 1000 }));
    expect(c.status).toBe(200);
    expect(c.truncated).toBe('time');
    expect(c.body.length).toBeGreaterThan(0);
    expect(c.body.length).toBeLessThan(20);
    expect(c.elapsedMs).toBeLessThan(3000);
  });

  it('stops an endless chunked body at the cap', async () => {
    const c = await client.fetch(`${s1.base}/endless-chunked`, opts({ maxBodyBytes: MiB }));
    expect(c.truncated).toBe('length');
    expect(c.body.length).toBe(MiB);
  });

  it('stores at most the cap of a 6 MiB page', async () => {
    const c = await client.fetch(`${s1.base}/six-mib`, opts());
    expect(c.truncated).toBe('length');
    expect(c.body.length).toBe(5 * MiB);
  });

  it('keeps a large body as the chunks it arrived in; body joins the same bytes, capped ones too', async () => {
    const capped = await client.fetch(`${s1.base}/six-mib`, opts());
    expect(capped.bodyParts!.length).toBeGreaterThan(1);
    expect(Buffer.concat(capped.bodyParts!).equals(capped.body)).toBe(true);
    expect(capped.body.equals(SIX_MIB.subarray(0, 5 * MiB))).toBe(true);
    const whole = await client.fetch(`${s1.base}/six-mib`, opts({ maxBodyBytes: 8 * MiB }));
    expect(whole.bodyParts!.reduce((n, p) => n + p.length, 0)).toBe(SIX_MIB.length);
    expect(whole.body.equals(SIX_MIB)).toBe(true);
    expect(whole.body).toBe(whole.body); // joined once, then kept
    const gz = await client.fetch(`${s1.base}/gzip`, opts());
    expect(Buffer.concat(gz.bodyParts!)).toEqual(PAGE);
    expect(gz.body).toEqual(PAGE);
  });

  it('refuses 64 KiB of headers with a 16 KiB cap', async () => {
    const e = await fetchError(client.fetch(`${s1.base}/huge-headers`, opts()));
    expect(e.code).toBe('HEADERS_TOO_LARGE');
    expect(e.retriable).toBe(false);
  });

  it('keeps the partial body of a connection closed mid-body as disconnect', async () => {
    const c = await client.fetch(`${s1.base}/close-mid-body`, opts());
    expect(c.truncated).toBe('disconnect');
    expect(c.body.equals(Buffer.alloc(100, 'c'))).toBe(true);
  });

  it('maps a reset before headers to CONNECTION_RESET', async () => {
    const e = await fetchError(client.fetch(`${s1.base}/reset`, opts()));
    expect(e.code).toBe('CONNECTION_RESET');
    expect(e.retriable).toBe(true);
  });

  it('maps the deadline before headers to DEADLINE_EXCEEDED', async () => {
    const e = await fetchError(client.fetch(`${s1.base}/stall`, opts({ overallTimeoutMs: 500 })));
    expect(e.code).toBe('DEADLINE_EXCEEDED');
  });

  it.each([['/garbage'], ['/bad-length']])('maps a malformed response (%s) to PROTOCOL_ERROR', async (path) => {
    const e = await fetchError(client.fetch(`http://127.0.0.4:${raw.port}${path}`, opts()));
    expect([e.code, e.retriable]).toEqual(['PROTOCOL_ERROR', false]);
  });

  it('maps a closed port to CONNECT_FAILED', async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const e = await fetchError(client.fetch(`http://127.0.0.1:${port}/`, opts()));
    expect(e.code).toBe('CONNECT_FAILED');
  });

  it('maps a TLS handshake that never completes to CONNECT_TIMEOUT', async () => {
    // Loopback cannot blackhole a SYN; a TCP peer that never answers the ClientHello stalls
    // the connect phase (undici's connect timeout covers TCP + TLS) just the same.
    const e = await fetchError(client.fetch(`https://127.0.0.3:${(silent.address() as net.AddressInfo).port}/`, opts({ connectTimeoutMs: 300 })));
    expect(e.code).toBe('CONNECT_TIMEOUT');
  });

  it('rejects bad URLs and schemes', async () => {
    expect((await fetchError(client.fetch('not a url', opts()))).code).toBe('BAD_URL');
    expect((await fetchError(client.fetch('ftp://127.0.0.1/', opts()))).code).toBe('UNSUPPORTED_SCHEME');
  });
});

describe('SSRF guard', () => {
  const spellings = (port: number): string[] => [
    `http://127.0.0.1:${port}/ok`,
    `http://2130706433:${port}/`,
    `http://0x7f.1:${port}/`,
    `http://0177.0.0.1:${port}/`,
    `http://127.1:${port}/`,
    `http://[::ffff:127.0.0.1]:${port}/`,
    `http://localhost:${port}/`,
  ];

  it('refuses every spelling of loopback by default, before any request is sent', async () => {
    const before = { r: s1.requests, s: s1.sockets };
    for (const u of spellings(s1.port)) {
      const e = await fetchError(client.fetch(u, opts({ allowPrivateNetwork: false })));
      expect([u, e.code, e.retriable]).toEqual([u, 'SSRF_BLOCKED', false]);
    }
    expect(s1.requests).toBe(before.r);
    expect(s1.sockets).toBe(before.s);
  });

  it('allows them all with allowPrivateNetwork', async () => {
    for (const u of spellings(s1.port)) {
      const c = await client.fetch(u, opts({ allowPrivateNetwork: true }));
      expect([u, c.status, c.ip]).toEqual([u, 200, '127.0.0.1']);
    }
  });

  it('allowCidrs opens only the listed address', async () => {
    const o = opts({ allowPrivateNetwork: false, allowCidrs: ['127.0.0.2/32'] });
    expect((await client.fetch(`${s2.base}/ok`, o)).status).toBe(200);
    for (const u of spellings(s1.port)) expect((await fetchError(client.fetch(u, o))).code).toBe('SSRF_BLOCKED');
  });

  it('connects to the checked address: one resolution per fetch, no second lookup (rebinding)', async () => {
    const answers: ResolvedAddress[][] = [[{ address: '127.0.0.2', family: 4 }], [{ address: '127.0.0.3', family: 4 }]];
    const calls: string[] = [];
    const c = createHttpClient({
      resolver: async (h) => {
        calls.push(h);
        return answers[Math.min(calls.length - 1, 1)];
      },
    });
    try {
      const o = opts({ allowPrivateNetwork: false, allowCidrs: ['127.0.0.2/32'] });
      const hostsBefore = s2.hosts.length;
      const cap = await c.fetch(`http://rebind.test:${s2.port}/ok`, o);
      expect(cap.ip).toBe('127.0.0.2');
      expect(calls).toEqual(['rebind.test']);
      expect(s2.hosts.slice(hostsBefore)).toEqual([`rebind.test:${s2.port}`]); // original Host header
      // The name now "rebinds" to a forbidden address: refused, although a pooled socket exists.
      expect((await fetchError(c.fetch(`http://rebind.test:${s2.port}/ok`, o))).code).toBe('SSRF_BLOCKED');
      expect(calls).toHaveLength(2);
    } finally {
      await c.close();
    }
  });

  it('a warm DNS cache means zero lookups', async () => {
    let queries = 0;
    const backend: DnsBackend = {
      resolve4: async () => (queries++, [{ address: '127.0.0.2', ttl: 60 }]),
      resolve6: async () => {
        throw Object.assign(new Error('nodata'), { code: 'ENODATA' });
      },
      lookup: async () => {
        throw new Error('unexpected system lookup');
      },
      hosts: () => new Map(),
    };
    const c = createHttpClient({ resolver: new DnsCache({ backend }).resolve });
    try {
      const results: HttpCapture[] = [];
      for (let i = 0; i < 3; i++) results.push(await c.fetch(`http://cached.test:${s2.port}/ok`, opts()));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(queries).toBe(1);
    } finally {
      await c.close();
    }
  });

  it('response time is the server\'s: from the request written to the last byte, not our name lookup', async () => {
    const c = createHttpClient({
      resolver: async () => {
        await new Promise((r) => setTimeout(r, 400));
        return [{ address: '127.0.0.2', family: 4 }];
      },
    });
    try {
      const quick = await c.fetch(`http://slow-dns.test:${s2.port}/ok`, opts());
      expect(quick.elapsedMs).toBeGreaterThanOrEqual(390);
      expect(quick.responseMs).toBeLessThan(200); // the 400 ms lookup is ours, not the server's
      const slow = await c.fetch(`http://slow-dns.test:${s2.port}/slow-answer`, opts());
      expect(slow.responseMs).toBeGreaterThanOrEqual(290);
      expect(slow.responseMs).toBeLessThanOrEqual(slow.elapsedMs - 390);
    } finally {
      await c.close();
    }
  });

  it('maps a resolution failure to DNS_FAILED', async () => {
    const c = createHttpClient({
      resolver: async () => {
        throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
      },
    });
    const e = await fetchError(c.fetch('http://nowhere.invalid/', opts()));
    expect([e.code, e.retriable]).toEqual(['DNS_FAILED', false]);
    await c.close();
  });
});
