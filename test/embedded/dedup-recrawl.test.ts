/**
 * The indexer's contract, end to end in the embedded default (the built CLI in a child
 * process) over two crawl cycles of a fixture web on 127.0.7.x that has exact duplicates under
 * different URLs, near-duplicates (a footer that changes on every fetch), a page that changes
 * between the cycles and pages that do not (they answer If-None-Match with 304).
 *
 * The second cycle is the frontier's recrawl: the same `crawl run --out` resumed after the
 * pages came due (CRAWL_RECRAWL_INITIAL_MS makes them due after a few seconds).
 *
 * Judged from the outside: the handoff .avro file, the WARC and WET-style files read back by
 * warcio, and the server's own request log.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as avro from 'avsc';
import type { HandoffEvent } from '../../lib/messages';
import { FixtureWeb, page } from '../fixtures/web';
import { readAllWarcs } from '../support/cli';
import { readOneRecord } from '../support/warc-read';

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');
const IP = '127.0.7.1';
const RECRAWL_MS = 5000;

function runCli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
}

async function readHandoff(file: string): Promise<HandoffEvent[]> {
  const events: HandoffEvent[] = [];
  await new Promise<void>((resolve, reject) => {
    avro.createFileDecoder(file).on('data', (e: HandoffEvent) => events.push(e)).on('end', resolve).on('error', reject);
  });
  return events;
}

/** A page served with an ETag, answering a matching If-None-Match with 304. */
function conditional(body: () => string): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const b = body();
    const etag = `"${Buffer.from(b).length}-${hash(b)}"`;
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, { etag }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', etag }).end(b);
  };
}

function hash(s: string): string {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(h, 31) + s.charCodeAt(i)) | 0;
  return (h >>> 0).toString(16);
}

const article = (topic: string, footer: string): string =>
  page(topic, ['/'], Array.from({ length: 60 }, (_, i) => `${topic} paragraph ${i} explains one more detail of the subject`).join('. ') + ` <footer>${footer}</footer>`);

describe('dedup and recrawl: the handoff is exactly the NEW and CHANGED distinct pages', () => {
  let web: FixtureWeb;
  let out: string;
  let cycle = 1;
  let served = 0;
  const runs: Array<{ code: number | null; stdout: string; stderr: string }> = [];
  let events: HandoffEvent[] = [];
  let firstCycleEvents = 0;
  let firstCycleRequests = 0;
  const url = (path: string): string => `${web.origin(IP)}${path}`;

  beforeAll(async () => {
    const dup = article('Duplicated article', 'same everywhere');
    web = await FixtureWeb.start([
      {
        ip: IP,
        robots: 'User-agent: *\nAllow: /\n',
        pages: {
          '/': conditional(() => page('Home', ['/dup-a', '/dup-b', '/dup-c', '/near/1', '/near/2', '/near/3', '/stable-1', '/stable-2', '/changing'])),
          '/dup-a': conditional(() => dup),
          '/dup-b': conditional(() => dup),
          '/dup-c': conditional(() => dup),
          // Near-duplicates: the footer names the page and counts every response, so no two copies are equal.
          '/near/1': conditional(() => article('Near article', `near 1, response ${++served}`)),
          '/near/2': conditional(() => article('Near article', `near 2, response ${++served}`)),
          '/near/3': conditional(() => article('Near article', `near 3, response ${++served}`)),
          '/stable-1': conditional(() => article('Stable one about rivers', 'unchanging footer')),
          '/stable-2': conditional(() => article('Stable two about mountains', 'unchanging footer')),
          '/changing': conditional(() => (cycle === 1 ? article('Weather today is sunny', 'v1') : article('Election results are in', 'v2'))),
        },
      },
    ]);
    out = mkdtempSync(join(tmpdir(), 'crawl-dedup-'));
    const env = {
      CRAWL_MIN_HOST_DELAY_MS: '50', CRAWL_WARC_MAX_AGE_MS: '200', CRAWL_RECRAWL_INITIAL_MS: String(RECRAWL_MS), CRAWL_RECRAWL_MIN_MS: '3000',
    };
    const args = ['run', '--seed', `${url('/')}`, '--out', out, '--allow-private-network'];
    const started = Date.now();
    runs.push(await runCli([...args, '--max-secs', '60'], env));
    firstCycleEvents = (await readHandoff(join(out, 'handoff', 'crawl.handoff.v3.avro'))).length;
    firstCycleRequests = web.log.length;
    // Cycle 2: the changing page changes; the frontier recrawls once the pages are due.
    cycle = 2;
    await new Promise((r) => setTimeout(r, Math.max(0, started + RECRAWL_MS + 1500 - Date.now())));
    // Pages that keep changing (the near-duplicates' footers) stay due every few seconds, so
    // the second cycle is bounded by time rather than by running out of work.
    runs.push(await runCli([...args, '--max-secs', '12'], env));
    events = await readHandoff(join(out, 'handoff', 'crawl.handoff.v3.avro'));
  });

  afterAll(async () => {
    await web?.stop();
  });

  test('both cycles exit 0', () => {
    expect(runs.map((r) => r.code)).toEqual([0, 0]);
  });

  test('cycle 1: one NEW event per distinct page; one of each duplicate group', () => {
    const first = events.slice(0, firstCycleEvents);
    expect(first.every((e) => e.change === 'NEW')).toBe(true);
    const urls = first.map((e) => e.url);
    expect(new Set(urls).size).toBe(urls.length);
    const distinct = ['/', '/stable-1', '/stable-2', '/changing'].map(url);
    for (const u of distinct) expect(urls).toContain(u);
    expect(urls.filter((u) => /\/dup-[abc]$/.test(u))).toHaveLength(1);
    expect(urls.filter((u) => /\/near\/\d$/.test(u))).toHaveLength(1);
    expect(urls).toHaveLength(6);
  });

  test('cycle 2: exactly the changed page, as CHANGED', () => {
    const second = events.slice(firstCycleEvents);
    expect(second.map((e) => [e.url, e.change])).toEqual([[url('/changing'), 'CHANGED']]);
  });

  test('cycle 2 fetched every page again, conditionally; unchanged ones answered 304 (revisit records), with the bytes saved', async () => {
    const secondCycle = web.log.slice(firstCycleRequests).map((r) => r.path);
    for (const p of ['/', '/dup-a', '/dup-b', '/dup-c', '/stable-1', '/stable-2', '/changing']) expect(secondCycle).toContain(p);
    const records = await readAllWarcs(join(out, 'warc'));
    const revisits = records.filter((r) => r.type === 'revisit').map((r) => r.targetUri);
    for (const p of ['/', '/dup-a', '/dup-b', '/dup-c', '/stable-1', '/stable-2']) expect(revisits).toContain(url(p));
    // The changed page came back whole (200) in cycle 2; later recrawls of it may be 304s.
    const changing = records.filter((r) => r.type === 'response' && r.targetUri === url('/changing'));
    expect(changing.length).toBeGreaterThanOrEqual(2);
    expect(changing[1]!.payload.toString()).toContain('Election results are in');
    // Bytes saved: the payloads the 304s did not resend (their first responses' sizes).
    const firstResponse = new Map<string, number>();
    for (const r of records) if (r.type === 'response' && r.targetUri && !firstResponse.has(r.targetUri)) firstResponse.set(r.targetUri, r.payload.length);
    const saved = [...new Set(revisits)].reduce((n, u) => n + (firstResponse.get(u!) ?? 0), 0);
    expect(saved).toBeGreaterThan(5 * 2000);
    process.stdout.write(`dedup-recrawl: cycle 2 got ${revisits.length} 304s, ${saved} payload bytes not resent\n`);
  });

  test('every event points at its response bytes and at a WET-style text record referring to that response', async () => {
    for (const e of events) {
      const resp = await readOneRecord(readFileSync(new URL(e.warc.uri)), e.warc.offset, e.warc.length);
      expect(resp.type).toBe('response');
      expect(resp.targetUri).toBe(e.url);
      expect(e.text).not.toBeNull();
      expect(e.text!.uri).toMatch(/-wet-[^/]*\.warc\.gz$/);
      const text = await readOneRecord(readFileSync(new URL(e.text!.uri)), e.text!.offset, e.text!.length);
      expect(text.type).toBe('conversion');
      expect(text.targetUri).toBe(e.url);
      expect(text.headers.get('warc-refers-to')).toBe(resp.headers.get('warc-record-id'));
      expect(text.payload.toString('utf8')).not.toContain('<');
      expect(e.simhash64).toMatch(/^[0-9a-f]{16}$/);
    }
    const changed = events.find((e) => e.change === 'CHANGED')!;
    const text = await readOneRecord(readFileSync(new URL(changed.text!.uri)), changed.text!.offset, changed.text!.length);
    expect(text.payload.toString('utf8')).toContain('Election results are in paragraph 0');
  });

  test('the example indexer reads the same events and their bytes from the handoff file', async () => {
    const indexer = join(__dirname, '..', '..', 'dist', 'examples', 'indexer.js');
    const r = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = spawn(process.execPath, [indexer, '--avro', join(out, 'handoff', 'crawl.handoff.v3.avro')], { stdio: ['ignore', 'pipe', 'inherit'] });
      let stdout = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.on('close', (code) => resolve({ code, stdout }));
    });
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`${events.length} page(s)`);
    expect(r.stdout).toContain(`CHANGED ${url('/changing')} http=200`);
    expect(r.stdout).toContain('Election results are in paragraph 0');
  });
});
