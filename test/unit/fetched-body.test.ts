/**
 * A stored page travels from fetch to parse as its WARC response record's gzip member
 * (FetchedPageMsg.record_gz, lib/fetched-body), not as a second, uncompressed copy of its body.
 * Real WARC records and a real WARC file on local disk; no network.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, openSync, readSync, closeSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import pino from 'pino';
import { LocalPageStore } from '../../connectors/page-store-local';
import type { HttpCapture, HttpClient } from '../../connectors/types';
import { avroType } from '../../lib/avro';
import { DEFAULTS, type CrawlConfig } from '../../lib/config';
import { fetchedBody } from '../../lib/fetched-body';
import type { FetchRequestMsg, FetchedPageMsg } from '../../lib/messages';
import { exchangeRecords } from '../../lib/warc/record';
import { WarcWriter } from '../../lib/warc/writer';
import { fetchStage } from '../../processors/fetch';
import { analyzePage } from '../../processors/parse';
import { fetchedWithoutBody } from '../../runtime/fetched-disk-form';
import type { HandleResult, InRecord, OutRecord, StageContext } from '../../runtime/stage';
import { topics } from '../../topologies/crawl';
import { BINARY_BODY, capture } from './warc-fixtures';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/** The response record's gzip member of an exchange, as the WARC writer stores it. */
function responseMember(c: HttpCapture): Buffer {
  return exchangeRecords(c, { warcinfoId: '<urn:uuid:info>', payloadSha256: sha(c.body) })[1].gz;
}

function message(url: string, body: Buffer, recordGz: Buffer | null): FetchedPageMsg {
  return {
    url, final_url: url, host: new URL(url).hostname, depth: 1, fetched_at: 1, http_status: 200, content_type: 'text/html', body: recordGz ? Buffer.alloc(0) : body,
    truncated: false, sha256: sha(body), prev_sha256: null, warc: { uri: 'file:///w.warc.gz', offset: 0, length: recordGz?.length ?? 0 }, x_robots_tag: null,
    record_id: '<urn:uuid:r>', priority: null, record_gz: recordGz,
  };
}

describe('fetchedBody: the body of a crawl.fetched page', () => {
  test('from the response record it was sent as: the exact bytes, every byte value included', () => {
    const c = capture('http://a.test/bin', { body: BINARY_BODY });
    const body = fetchedBody(message(c.url, BINARY_BODY, responseMember(c)));
    expect(body.equals(BINARY_BODY)).toBe(true);
  });

  test('a message with its body (earlier releases, tests) gives that body as it is', () => {
    const body = Buffer.from('<html>inline</html>');
    expect(fetchedBody(message('http://a.test/', body, null))).toBe(body);
    // A body beside a record: the body is what was sent for parse.
    const c = capture('http://a.test/other');
    expect(fetchedBody({ ...message(c.url, body, responseMember(c)), body })).toBe(body);
  });

  test('an empty page stays empty', () => {
    const c = capture('http://a.test/empty', { body: Buffer.alloc(0) });
    expect(fetchedBody(message(c.url, Buffer.alloc(0), responseMember(c))).length).toBe(0);
  });

  test('the record of another page is refused: its payload digest is not the message\'s SHA-256', () => {
    const other = capture('http://a.test/other', { body: Buffer.from('<html>other</html>') });
    const page = message('http://a.test/mine', Buffer.from('<html>mine</html>'), responseMember(other));
    expect(() => fetchedBody(page)).toThrow(/the WARC record sent with http:\/\/a\.test\/mine has payload digest sha256:[0-9a-f]{64}, not sha256:/);
  });

  test('a damaged member is refused (gzip\'s CRC), naming the page', () => {
    const c = capture('http://a.test/damaged', { body: Buffer.from('<html>'.padEnd(2000, 'x') + '</html>') });
    const gz = Buffer.from(responseMember(c));
    gz[gz.length - 12] ^= 0xff; // inside the deflate stream, before the CRC and size trailer
    expect(() => fetchedBody(message(c.url, c.body, gz))).toThrow(/http:\/\/a\.test\/damaged cannot be read/);
    expect(() => fetchedBody(message(c.url, c.body, Buffer.from('not gzip')))).toThrow(/cannot be read/);
  });

  test('a record other than a response is refused', () => {
    const c = capture('http://a.test/req');
    const request = exchangeRecords(c, { warcinfoId: '<urn:uuid:info>' })[0].gz;
    expect(() => fetchedBody(message(c.url, c.body, request))).toThrow(/is a request record, not a response/);
  });
});

describe('fetch sends a stored page as its response record; parse reads it', () => {
  const CFG: CrawlConfig = { ...DEFAULTS, minHostDelayMs: 1000, maxCrawlDelayMs: 10_000 };
  const ctx: StageContext = { now: () => 0, log: pino({ level: 'silent' }) };
  const HTML = '<html lang="en"><head><title>Kept</title></head><body><p>Tomatoes and gardening, at length.</p><a href="/next">next</a></body></html>';
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'fetched-body-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  async function fetchOne(): Promise<FetchedPageMsg> {
    const http: HttpClient = {
      async fetch(url: string): Promise<HttpCapture> {
        if (url.endsWith('/robots.txt')) return capture(url, { headers: [['Content-Type', 'text/plain']], body: Buffer.from('User-agent: *\nAllow: /\n') });
        return capture(url, { headers: [['Content-Type', 'text/html; charset=utf-8']], body: Buffer.from(HTML) });
      },
      async close() {},
    };
    const warc = new WarcWriter({ store: new LocalPageStore(dir), prefix: 'test', maxRecords: 3 });
    let clock = 1_000_000;
    const stage = fetchStage({ http, archive: (e, onBuilt) => warc.append(e, onBuilt), config: CFG, now: () => clock++, sleep: async (ms) => void (clock += ms) });
    const req: FetchRequestMsg = {
      url: 'http://a.test/page', host: 'a.test', depth: 1, lease_id: 'lease-1', lease_expires_at: 2_000_000, attempt: 1, prev_sha256: null, etag: null,
      last_modified: null, redirects: 0, priority: null,
    };
    const rec: InRecord = { topic: 'fetch', partition: 0, offset: 0, key: req.host, value: req, timestamp: 0 };
    const r: HandleResult = await stage.handle(rec, ctx);
    const pending = Array.isArray(r) ? Promise.resolve(r) : r.pending;
    await warc.flush();
    const outs: OutRecord[] = await pending;
    const fetched = outs.filter((o) => o.topic === 'fetched').map((o) => o.value as FetchedPageMsg);
    expect(fetched).toHaveLength(1);
    return fetched[0];
  }

  test('the message holds the bytes stored at its WARC pointer, not the body', async () => {
    const page = await fetchOne();
    expect(page.body.length).toBe(0);
    expect(page.record_gz).toBeInstanceOf(Buffer);
    const fd = openSync(fileURLToPath(page.warc.uri), 'r');
    const stored = Buffer.alloc(page.warc.length);
    readSync(fd, stored, 0, stored.length, page.warc.offset);
    closeSync(fd);
    expect(page.record_gz!.equals(stored)).toBe(true);
    expect(sha(fetchedBody(page))).toBe(page.sha256);
    expect(fetchedBody(page).toString()).toBe(HTML);
  });

  test('parse analyses it as it analyses the body itself', async () => {
    const page = await fetchOne();
    const viaRecord = analyzePage(page, { userAgent: CFG.userAgent });
    const viaBody = analyzePage({ ...page, body: Buffer.from(HTML), record_gz: null }, { userAgent: CFG.userAgent });
    expect(viaRecord).toEqual(viaBody);
    expect(viaRecord.parsed.title).toBe('Kept');
    expect(viaRecord.linkUrls).toEqual(['http://a.test/next']);
  });

  test('it passes the crawl.fetched schema and an Avro round trip keeps the record', async () => {
    const page = await fetchOne();
    const type = avroType(topics.fetched.valueSchema);
    expect(type.isValid(page)).toBe(true);
    const back = type.fromBuffer(type.toBuffer(page)) as FetchedPageMsg;
    expect(back.record_gz!.equals(page.record_gz!)).toBe(true);
    expect(fetchedBody(back).toString()).toBe(HTML);
  });

  test('the embedded log writes neither the body nor the record to disk, and reads the body back from the WARC file', async () => {
    const page = await fetchOne();
    const onDisk = fetchedWithoutBody.toDisk(page) as FetchedPageMsg;
    expect(onDisk.body.length).toBe(0);
    expect(onDisk.record_gz).toBeNull();
    const back = fetchedWithoutBody.fromDisk(onDisk) as FetchedPageMsg;
    expect(back.body.toString()).toBe(HTML);
  });

  test('the body can be collected once its record is built, while the WARC file is not yet stored', async () => {
    // A full collection on demand (V8's own gc function, exposed for this test only).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    let body: WeakRef<Buffer> | null = null;
    const http: HttpClient = {
      async fetch(url: string): Promise<HttpCapture> {
        if (url.endsWith('/robots.txt')) return capture(url, { headers: [['Content-Type', 'text/plain']], body: Buffer.from('User-agent: *\nAllow: /\n') });
        // A body of its own ArrayBuffer, referenced by the capture alone.
        const b = Buffer.from(new TextEncoder().encode(HTML).buffer);
        body = new WeakRef(b);
        return capture(url, { headers: [['Content-Type', 'text/html; charset=utf-8']], body: b });
      },
      async close() {},
    };
    // A store that holds every file until released: the page's pointer stays pending.
    const local = new LocalPageStore(dir);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const store = Object.assign(Object.create(local) as LocalPageStore, {
      put: async (key: string, bytes: Buffer) => {
        await gate;
        return local.put(key, bytes);
      },
      putParts: async (key: string, parts: readonly Buffer[]) => {
        await gate;
        return local.putParts(key, parts);
      },
    });
    const warc = new WarcWriter({ store, prefix: 'test', maxRecords: 1000 });
    let clock = 1_000_000;
    const stage = fetchStage({ http, archive: (e, onBuilt) => warc.append(e, onBuilt), config: CFG, now: () => clock++, sleep: async (ms) => void (clock += ms) });
    const req: FetchRequestMsg = {
      url: 'http://a.test/page', host: 'a.test', depth: 1, lease_id: 'lease-1', lease_expires_at: 2_000_000, attempt: 1, prev_sha256: null, etag: null,
      last_modified: null, redirects: 0, priority: null,
    };
    const r = await stage.handle({ topic: 'fetch', partition: 0, offset: 0, key: req.host, value: req, timestamp: 0 }, ctx);
    expect(Array.isArray(r)).toBe(false);
    const pending = (r as { pending: Promise<OutRecord[]> }).pending;
    let settled = false;
    void pending.then(() => (settled = true));
    const flushed = warc.flush();
    // Turns of the event loop (a WeakRef's target is kept until the current job ends), then collect.
    for (let i = 0; i < 3; i++) {
      await new Promise((res) => setImmediate(res));
      gc();
    }
    expect(settled).toBe(false);
    expect(body).not.toBeNull();
    expect(body!.deref()).toBeUndefined();
    release();
    await flushed;
    const page = (await pending).find((o) => o.topic === 'fetched')!.value as FetchedPageMsg;
    expect(fetchedBody(page).toString()).toBe(HTML);
    // Three full collections of the test process's heap: slow with --runInBand late in the suite.
  }, 30_000);

  test('an archive that hands back no record: the message carries the body itself', async () => {
    const http: HttpClient = {
      async fetch(url: string): Promise<HttpCapture> {
        if (url.endsWith('/robots.txt')) return capture(url, { headers: [['Content-Type', 'text/plain']], body: Buffer.from('User-agent: *\nAllow: /\n') });
        return capture(url, { headers: [['Content-Type', 'text/html; charset=utf-8']], body: Buffer.from(HTML) });
      },
      async close() {},
    };
    let n = 0;
    const stage = fetchStage({
      http, archive: async () => ({ uri: 'file:///w.warc.gz', offset: ++n, length: 10, recordId: `<urn:uuid:${n}>` }), config: CFG,
      now: () => 1_000_000, sleep: async () => undefined,
    });
    const req: FetchRequestMsg = {
      url: 'http://a.test/page', host: 'a.test', depth: 1, lease_id: 'lease-1', lease_expires_at: 2_000_000, attempt: 1, prev_sha256: null, etag: null,
      last_modified: null, redirects: 0, priority: null,
    };
    const r = await stage.handle({ topic: 'fetch', partition: 0, offset: 0, key: req.host, value: req, timestamp: 0 }, ctx);
    const outs = Array.isArray(r) ? r : await r.pending;
    const page = outs.find((o) => o.topic === 'fetched')!.value as FetchedPageMsg;
    expect(page.record_gz).toBeNull();
    expect(page.body.toString()).toBe(HTML);
  });
});
