/**
 * The links' path on the crawl's event loop, per page of the benchmark web: a parse result
 * arriving from the worker (deserialised as structured clone does), parse's decision and
 * crawl.links records, then seen-test screening those links (normalisation, trap screen,
 * Bloom filter check and add). The page's analysis itself (the worker's part) is done once,
 * before timing. Median of rounds, µs per page.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/link-path-bench.js [rounds]
 *
 * Built against the stages' own interfaces, so two builds can be compared side by side: copy
 * this file's compiled form into the other build's dist/bench and run both in turn.
 */
import { serialize, deserialize } from 'node:v8';
import pino from 'pino';
import { MemoryBloom } from '../lib/bloom/memory';
import { bloomParams } from '../lib/bloom/sizing';
import { DEFAULTS } from '../lib/config';
import type { FetchedPageMsg, LinkMsg } from '../lib/messages';
import { analyzePage, parseStage } from '../processors/parse';
import type { ParseAnalyzer } from '../processors/parse-pool';
import { seenTestStage } from '../processors/seen-test';
import type { HandleResult, InRecord, OutRecord, StageContext } from '../runtime/stage';
import { median } from './parser-floor';
import { fillerHtml, hostAddress, pageHtml } from './synthetic-web';

const ROUNDS = Number(process.argv[2] ?? 15);
const PAGES = 400;
const HOSTS = 5000;
const PORT = 8080;

function pages(): FetchedPageMsg[] {
  const filler = fillerHtml(50 * 1024);
  return Array.from({ length: PAGES }, (_, i) => {
    const h = (i * 37) % HOSTS;
    const url = `http://${hostAddress(h)}:${PORT}/p/${i}`;
    return {
      url, final_url: url, host: hostAddress(h), depth: 1, fetched_at: 1_000 + i, http_status: 200, content_type: 'text/html; charset=utf-8',
      body: Buffer.from(pageHtml(h, i, HOSTS, PORT, filler)), truncated: false, sha256: `sha-${i}`, prev_sha256: null,
      warc: { uri: 'file:///w.warc.gz', offset: i, length: 1 }, x_robots_tag: null,
    };
  });
}

async function settle(r: HandleResult | Promise<HandleResult>): Promise<OutRecord[]> {
  const v = await r;
  return Array.isArray(v) ? v : [...(v.early ?? []), ...(await v.pending)];
}

async function main(): Promise<void> {
  const ctx: StageContext = { now: () => 10_000, log: pino({ level: 'silent' }) };
  const input = pages();
  // What the worker posts back, serialised once; each handle deserialises its page's copy.
  const posted = new Map(input.map((p) => [p, serialize(analyzePage(p, { userAgent: DEFAULTS.userAgent }))]));
  const analyzer: ParseAnalyzer = { threads: 1, analyze: async (p) => deserialize(posted.get(p)!), backlog: () => ({ bytes: 0, waiting: 0 }), close: async () => undefined };
  const parseUs: number[] = [];
  const seenUs: number[] = [];
  let links = 0;
  for (let r = 0; r < ROUNDS; r++) {
    // Fresh tables every round: each round does the same work as the first.
    const parse = parseStage({ userAgent: DEFAULTS.userAgent, analyzer });
    const seen = seenTestStage(new MemoryBloom(bloomParams(1_000_000, 0.01)), { maxDepth: 16, scope: new Set() });
    const t0 = process.hrtime.bigint();
    const outs: OutRecord[] = [];
    for (const p of input) for (const o of await settle(parse.handle({ topic: 'fetched', partition: 0, offset: 0, key: p.host, value: p, timestamp: 0 }, ctx))) outs.push(o);
    const t1 = process.hrtime.bigint();
    const linkRecs: InRecord[] = outs.filter((o) => o.topic === 'links').map((o, offset) => ({ topic: 'links', partition: 0, offset, key: o.key, value: o.value, timestamp: 0 }));
    for (let i = 0; i < linkRecs.length; i += 64) {
      const batch = linkRecs.slice(i, i + 64);
      await seen.produced!(await seen.handleBatch!(batch, ctx));
    }
    const t2 = process.hrtime.bigint();
    parseUs.push(Number(t1 - t0) / 1e3 / PAGES);
    seenUs.push(Number(t2 - t1) / 1e3 / PAGES);
    links = linkRecs.reduce((n, rec) => n + 1 + ((rec.value as LinkMsg).more_urls?.length ?? 0), 0);
  }
  process.stdout.write(
    `${PAGES} pages, ${(links / PAGES).toFixed(1)} links a page: parse's thread ${median(parseUs).toFixed(1)} µs, seen-test ${median(seenUs).toFixed(1)} µs per page (median of ${ROUNDS} rounds)\n`,
  );
}

void main();
