/**
 * CPU a page of each stage of the crawl, on the benchmark's web, run in the benchmark's own
 * process right after its web server starts: the crawler's stages (runtime/build-stages.ts's
 * seen-test, frontier, fetch with its WARC writer, parse with its text records), chained by hand
 * one step at a time, so the process's CPU over each step is that stage's alone (parse on this
 * thread, as `crawl run` does with CRAWL_PARSE_THREADS=0). Round 1 fetches every host's root
 * page (and its robots.txt) and warms the JIT; rounds 2 on are measured, one page per host each,
 * hosts first met through a page's links included (their robots.txt in fetch's figure, as in
 * a crawl's first minutes, when nearly every page is its host's first).
 * The frontier and fetch run on a virtual clock that moves 2 s a round, so politeness never
 * makes a step wait; no request reaches a host sooner than a second after its last one, real
 * time, either (a round takes longer than that).
 *
 * Beside the stages, the same pages through the parts that matter: extraction (charset and
 * extract()), SimHash of its text, SHA-256 (the payload digest and the WARC block digest, over
 * the body twice), gzip of the body at the WARC writer's level, Avro encoding of every record the
 * stages emitted (the log's and Kafka's value encoding; Kafka's batching and LZ4 are not in it),
 * and the parser's floor: a bare parse5 SAX pass over each page.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createHttpClient } from '../connectors/http-undici';
import { LocalPageStore } from '../connectors/page-store-local';
import { encodeAvro, avroType } from '../lib/avro';
import { loadConfig } from '../lib/config';
import { fetchedBody } from '../lib/fetched-body';
import { extract, scanForm, wholeText } from '../lib/html/extract';
import type { FetchedPageMsg, HostPolicyMsg, LinkMsg } from '../lib/messages';
import { simhashWithCount } from '../lib/simhash';
import { DEFAULT_GZIP_LEVEL } from '../lib/warc/record';
import { GZIP_MEM_LEVEL, gzipEngine, gzipMember } from '../lib/warc/gzip-member';
import { WarcWriter } from '../lib/warc/writer';
import { fetchOptions, fetchStage, robotsFetcher } from '../processors/fetch';
import { frontierStage } from '../processors/frontier';
import { buildStages } from '../runtime/build-stages';
import type { HandleResult, InRecord, OutRecord, Stage, StageContext } from '../runtime/stage';
import { topics } from '../topologies/crawl';
import { bareHtmlparser2Pass, barePass, processCpuMs } from './parser-floor';
import { hostAddress } from './synthetic-web';

export interface StageRow {
  stage: string;
  msPerPage: number;
  /** What the row holds, where a reader could take it for something else. */
  note?: string;
}

export interface StageCpu {
  /** Pages fetched and parsed in the measured rounds. */
  pages: number;
  /** Their mean size in bytes. */
  meanBytes: number;
  rows: StageRow[];
}

const asIn = (o: OutRecord, offset: number): InRecord => ({ topic: o.topic, partition: 0, offset, key: o.key, value: o.value, timestamp: 0 });

/**
 * A batch's emits, told to the stage as written to the log, as the runtimes do
 * (runtime/embedded-runner.ts): produced() gets the very array handleBatch or tick returned
 * (runtime/stage.ts), by which the frontier knows which batch's new rows are now written and
 * stops looking them up. Before, the frontier here was never told: it kept every batch's rows
 * as unwritten, searched them for each candidate, and emitted a known URL's row again.
 */
export async function produced(stage: Stage, outs: OutRecord[] | Promise<OutRecord[]>): Promise<OutRecord[]> {
  const o = await outs;
  await stage.produced?.(o);
  return o;
}

/** Run `fn` and add the process CPU it took to `into[name]`. */
async function timed<T>(into: Map<string, number>, name: string, fn: () => Promise<T> | T): Promise<T> {
  const t0 = processCpuMs();
  const r = await fn();
  into.set(name, (into.get(name) ?? 0) + processCpuMs() - t0);
  return r;
}

/** At most `n` calls of fn over items at once, in order. */
async function eachLimited<T, R>(items: readonly T[], n: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]);
    }
  }));
  return out;
}

/**
 * The stages' CPU a page over `hosts` hosts of the web at `port` (at most the web's own host
 * count), `rounds` rounds, the first not counted, each of at most 4 pages a seed host (hosts
 * first met through links included).
 */
export async function stageCpu(port: number, hosts: number, rounds = 4): Promise<StageCpu> {
  const dir = mkdtempSync(join(tmpdir(), 'kcrawl-stages-'));
  let clock = Date.now();
  const now = (): number => clock;
  const config = loadConfig({}, { allowPrivateNetwork: true, parseThreads: 0, partitions: 1 });
  const store = new LocalPageStore(dir);
  const warc = new WarcWriter({ store, prefix: 'stage', maxRecords: 100_000, maxAgeMs: 600_000 });
  const textWarc = new WarcWriter({ store, prefix: 'stage-text', maxRecords: 100_000, maxAgeMs: 600_000 });
  const http = createHttpClient();
  const [seen, parse] = buildStages(['seen-test', 'parse'], { config, http, warc, textWarc });
  // frontier and fetch on the virtual clock, fetch never sleeping: the rounds space a host's requests already.
  const frontier: Stage = frontierStage(config, { partitions: config.partitions, now, stateDir: join(dir, 'frontier') });
  const fetch: Stage = fetchStage({ http, archive: (e, onBuilt) => warc.append(e, onBuilt), config, now, sleep: async () => undefined });
  const ctx: StageContext = { now, log: pino({ level: 'silent' }) };
  // The frontier's store starts empty (an empty changelog), as a first crawl's does.
  await frontier.restoreChangelog!([0], { ends: async (ps) => new Map(ps.map((p) => [p, 0])), read: async () => undefined }, ctx);
  const cpu = new Map<string, number>();
  const emitted: OutRecord[] = [];
  const measuredPages: FetchedPageMsg[] = [];
  /** The measured pages' URLs, a round at a time (one page a host each, at most 4 a seed host). */
  const pageRounds: string[][] = [];
  let offset = 0;

  const seeds: OutRecord[] = Array.from({ length: hosts }, (_, h) => {
    const url = `http://${hostAddress(h)}:${port}/`;
    const link: LinkMsg = { url, source_url: null, depth: 0, discovered_at: clock, is_seed: true, priority: null };
    return { topic: 'links', key: hostAddress(h), host: hostAddress(h), value: link };
  });
  let links = seeds;
  for (let round = 0; round < rounds; round++) {
    const measured = round > 0;
    const into = measured ? cpu : new Map<string, number>();
    const keep = (outs: OutRecord[]): OutRecord[] => {
      if (measured) emitted.push(...outs);
      return outs;
    };
    // seen-test: the last round's links, in batches as the runtimes hand them over.
    const candidates = await timed(into, 'seen-test', async () => {
      const out: OutRecord[] = [];
      const recs = links.map((l) => asIn(l, offset++));
      for (let i = 0; i < recs.length; i += 64) {
        out.push(...(await produced(seen, seen.handleBatch!(recs.slice(i, i + 64), ctx))));
      }
      return keep(out);
    });
    // frontier: the candidates in, then its ticks release one lease per host that is due.
    clock += 2_000;
    const requests = await timed(into, 'frontier', async () => {
      const out: OutRecord[] = [];
      out.push(...(await produced(frontier, frontier.handleBatch!(candidates.filter((c) => c.topic === 'frontier').map((c) => asIn(c, offset++)), ctx))));
      out.push(...(await produced(frontier, frontier.tick!(ctx))));
      // At most 4 fetches a seed host a round: the links of real pages reach ~25 new hosts a
      // page, and every measured page is kept in memory for the parts below (64 seed hosts
      // unbounded went past 5,000 pages of 280 KiB and out of a 4 GiB heap).
      return keep(out).filter((o) => o.topic === 'fetch').slice(0, hosts * 4);
    });
    // fetch, with its WARC records (stored once the round's fetches are in).
    const fetched = await timed(into, 'fetch + WARC', async () => {
      const results = await eachLimited(requests, 32, async (r): Promise<HandleResult> => fetch.handle(asIn(r, offset++), ctx));
      const early = results.flatMap((r) => (Array.isArray(r) ? r : r.early ?? []));
      // The round's WARC file written, fsynced, renamed and indexed: a part of fetch's row.
      await timed(into, 'WARC store', () => warc.flush());
      const late = (await Promise.all(results.map((r) => (Array.isArray(r) ? [] : r.pending)))).flat();
      return keep([...early, ...late]);
    });
    // The statuses go back to the frontier (twice a page: response in, file stored).
    await timed(into, 'frontier', async () => {
      keep(await produced(frontier, frontier.handleBatch!(fetched.filter((s) => s.topic === 'fetchStatus').map((s) => asIn(s, offset++)), ctx)));
    });
    const pages = fetched.filter((o) => o.topic === 'fetched').map((o) => o.value as FetchedPageMsg);
    if (measured) {
      measuredPages.push(...pages);
      pageRounds.push(pages.map((p) => p.url));
    }
    // parse, on this thread, with its text records.
    const parsed = await timed(into, 'parse', async () => {
      const handled = await Promise.all(pages.map((p) => parse.handle({ topic: 'fetched', partition: 0, offset: offset++, key: p.host, value: p, timestamp: 0 }, ctx)));
      const early = handled.flatMap((r) => (Array.isArray(r) ? r : r.early ?? []));
      await textWarc.flush();
      const rest = (await Promise.all(handled.map((r) => (Array.isArray(r) ? [] : r.pending)))).flat();
      return keep([...early, ...rest]);
    });
    links = parsed.filter((o) => o.topic === 'links');
  }
  await frontier.close?.();
  const pages = measuredPages.length;
  const per = (ms: number): number => (pages > 0 ? ms / pages : 0);

  // The HTTP exchanges alone: the measured pages fetched again through a client of their own
  // (bodies kept as the chunks they came in, as fetch keeps them), round by round, every host's
  // last request more than a second before (the rounds above took longer than that). Its
  // connections are new ones or reused as fetch's were: the same client options and keep-alive.
  await http.close();
  const httpOnly = createHttpClient();
  const opts = fetchOptions(config);
  const parts = new Map<string, number>();
  for (const urls of pageRounds) {
    const byHost = new Map<string, string[]>();
    for (const u of urls) {
      const h = new URL(u).host;
      const list = byHost.get(h);
      if (list) list.push(u);
      else byHost.set(h, [u]);
    }
    // A host's pages one after another, a second apart; hosts side by side.
    for (let i = 0; ; i++) {
      const wave = [...byHost.values()].filter((us) => us.length > i).map((us) => us[i]);
      if (wave.length === 0) break;
      await new Promise((r) => setTimeout(r, 1_100));
      await timed(parts, 'HTTP', () => eachLimited(wave, 32, (u) => httpOnly.fetch(u, opts)));
    }
  }
  await httpOnly.close();

  // robots.txt of the hosts first met in the measured rounds (fetch reads it before a host's
  // first page; in these rounds most pages are their host's first, far more than in a crawl's
  // sustained run): each fetched again through a client of its own (new connections, as fetch's
  // were) and archived as fetch archives it (request and response records, built and stored).
  const robotsOrigins = emitted
    .filter((o) => o.topic === 'hostPolicy' && (o.value as HostPolicyMsg).field === 'robots' && (o.value as HostPolicyMsg).robots_origin)
    .map((o) => (o.value as HostPolicyMsg).robots_origin!);
  if (robotsOrigins.length > 0) {
    const robotsHttp = createHttpClient();
    const robotsWarc = new WarcWriter({ store, prefix: 'stage-robots', maxRecords: 100_000, maxAgeMs: 600_000 });
    const archived: Promise<unknown>[] = [];
    const fetchRobots = robotsFetcher({ http: robotsHttp, config, archive: (e) => {
      const p = robotsWarc.append(e);
      archived.push(p);
      return p;
    } });
    await new Promise((r) => setTimeout(r, 1_100));
    await timed(parts, 'robots.txt', async () => {
      await eachLimited(robotsOrigins, 32, (o) => fetchRobots(o));
      await robotsWarc.flush();
      await Promise.all(archived);
    });
    await robotsHttp.close();
  }

  // The parts, over the same pages.
  const bodies = measuredPages.map((p) => fetchedBody(p));
  // As parse reads a page: a UTF-8 page as its bytes, decoded only where kept (charset.ts scanForm).
  const scanned: Array<ReturnType<typeof scanForm>> = new Array(measuredPages.length);
  const texts = await timed(parts, 'extraction', () => measuredPages.map((p, i) => extract((scanned[i] = scanForm(bodies[i], p.content_type)).html, p.final_url).text));
  // The parser floors read the page decoded whole, as a bare parser is given it: from what scanForm
  // made of it (a page of another charset was decoded there already; decodeBody decoded it again).
  const htmls = scanned.map((s) => wholeText(s));
  const utf8 = texts.map((t) => Buffer.from(t, 'utf8'));
  await timed(parts, 'SimHash', () => utf8.forEach((u) => simhashWithCount(u)));
  await timed(parts, 'SHA-256', () => bodies.forEach((b) => {
    createHash('sha256').update(b).digest('hex');
    createHash('sha256').update(b).digest('hex');
  }));
  await timed(parts, 'gzip', () => bodies.forEach((b) => gzipMember([b], DEFAULT_GZIP_LEVEL)));
  await timed(parts, 'encoding', () => emitted.forEach((o) => encodeAvro(avroType(topics[o.topic].valueSchema), o.value)));
  await timed(parts, 'floor', () => htmls.forEach((h) => barePass(h)));
  await timed(parts, 'htmlparser2 floor', () => htmls.forEach((h) => bareHtmlparser2Pass(h)));
  rmSync(dir, { recursive: true, force: true });

  const rows: StageRow[] = [
    { stage: 'fetch + WARC writing', msPerPage: per(cpu.get('fetch + WARC') ?? 0), note: 'the fetch stage: HTTP, robots check, SHA-256, WARC records built, gzipped and stored' },
    { stage: '  of which SHA-256', msPerPage: per(parts.get('SHA-256')!), note: 'payload and WARC block digests: the body twice' },
    { stage: '  of which gzip', msPerPage: per(parts.get('gzip')!), note: `the body at level ${DEFAULT_GZIP_LEVEL} as the WARC writer makes it (${gzipEngine(DEFAULT_GZIP_LEVEL) === 'libdeflate' ? 'libdeflate' : `zlib, memLevel ${GZIP_MEM_LEVEL}`})` },
    { stage: '  of which HTTP', msPerPage: per(parts.get('HTTP') ?? 0), note: 'the same pages fetched again by the HTTP client alone (undici, body kept as its chunks), robots.txt aside' },
    { stage: '  of which robots.txt', msPerPage: per(parts.get('robots.txt') ?? 0), note: `the ${robotsOrigins.length} robots.txt exchanges of hosts first met (${(robotsOrigins.length / Math.max(pages, 1)).toFixed(2)} a page), fetched again on new connections and archived` },
    { stage: '  of which WARC store', msPerPage: per(cpu.get('WARC store') ?? 0), note: 'the WARC files written, fsynced, renamed and indexed' },
    { stage: 'parse', msPerPage: per(cpu.get('parse') ?? 0), note: 'the parse stage on one thread: inflate, charset, extraction, SimHash, language, duplicates, links, text record' },
    { stage: '  of which extraction', msPerPage: per(parts.get('extraction')!), note: 'charset decoding (a UTF-8 page: read as its bytes) and extract()' },
    { stage: '  of which SimHash', msPerPage: per(parts.get('SimHash')!), note: 'version 2, from the text\'s UTF-8 bytes' },
    { stage: 'seen-test', msPerPage: per(cpu.get('seen-test') ?? 0), note: 'normalisation, trap screen, Bloom filter' },
    { stage: 'frontier', msPerPage: per(cpu.get('frontier') ?? 0), note: 'candidates, leases, two statuses a page' },
    { stage: 'log encoding', msPerPage: per(parts.get('encoding')!), note: `Avro values of the ${emitted.length} records the stages emitted (${(emitted.length / Math.max(pages, 1)).toFixed(1)} a page)` },
    { stage: 'parser floor', msPerPage: per(parts.get('floor')!), note: 'a bare parse5 SAX pass over each page' },
    { stage: 'parser floor (htmlparser2)', msPerPage: per(parts.get('htmlparser2 floor')!), note: 'a bare htmlparser2 Parser pass over each page (the tokenizer extraction uses)' },
  ];
  const meanBytes = bodies.reduce((n, b) => n + b.length, 0) / Math.max(pages, 1);
  return { pages, meanBytes, rows };
}

/** The rows as a markdown table, with each stage's share of the sum of the top-level stages. */
export function stageTable(s: StageCpu): string {
  const floor = (r: StageRow): boolean => r.stage.startsWith('parser floor');
  const top = s.rows.filter((r) => !r.stage.startsWith(' ') && !floor(r));
  const sum = top.reduce((n, r) => n + r.msPerPage, 0);
  const lines = s.rows.map((r) => `| ${r.stage} | ${r.msPerPage.toFixed(3)} | ${r.stage.startsWith(' ') || floor(r) ? '' : `${((100 * r.msPerPage) / sum).toFixed(0)}%`} | ${r.note ?? ''} |`);
  return [
    `Per stage, CPU ms a page (${s.pages} pages of ${(s.meanBytes / 1024).toFixed(0)} KiB on average, each stage run alone in the benchmark's process; bench/stage-cpu.ts):`,
    '',
    '| stage | ms/page | share | what |',
    '|---|---:|---:|---|',
    ...lines,
    `| all stages | ${sum.toFixed(3)} | 100% | the top-level rows above, parser floor aside |`,
  ].join('\n');
}
