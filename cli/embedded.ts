/**
 * `crawl run`: the whole topology in one process over the embedded log, WARC files in
 * <out>/warc, handoff events in <out>/handoff/crawl.handoff.v3.avro, state journaled in
 * <out>/state so the same command resumes a killed crawl.
 */
import { join } from 'node:path';
import { existsSync, mkdirSync, readdirSync, unlinkSync } from 'node:fs';
import { createHttpClient } from '../connectors/http-undici';
import { LocalPageStore } from '../connectors/page-store-local';
import { loadSchema, avroType } from '../lib/avro';
import { loadConfig, type CrawlConfig } from '../lib/config';
import { createLogger, type Logger } from '../lib/logger';
import type { LinkMsg } from '../lib/messages';
import { normalizeUrl, registeredDomain } from '../lib/url-normalize';
import { WarcWriter } from '../lib/warc/writer';
import type { FrontierStage } from '../processors/frontier';
import { AvroFileSink } from '../runtime/avro-file-sink';
import { buildStages, STAGE_NAMES } from '../runtime/build-stages';
import { EmbeddedRunner } from '../runtime/embedded-runner';
import { embeddedHoldRules, holdWhileOf } from '../runtime/backlog-holds';
import { fetchedWithoutBody } from '../runtime/fetched-disk-form';
import { FileLog } from '../runtime/file-log';
import type { OutRecord, Stage } from '../runtime/stage';
import { topics } from '../topologies/crawl';
import type { GroupLag } from '../api/embedded-status';
import { Progress } from './progress';
import { feedSeeds } from './seed-intake';

export interface RunOptions {
  /** Seed URLs given one by one (--seed). */
  seeds: string[];
  /**
   * More seeds, streamed (a --seeds-file of any size): fed to crawl.links while the crawl runs.
   * `id` names the source so a re-run after a kill goes on where this one stopped (null: not resumable).
   */
  seedSource?: { seeds: AsyncIterable<string>; id: string | null };
  out: string;
  maxPages?: number;
  maxSecs?: number;
  allowPrivateNetwork?: boolean;
  /** 'domain' (default): stay within the seeds' registered domains; 'host'; 'any'. */
  scope?: 'domain' | 'host' | 'any';
  config?: Partial<CrawlConfig>;
  logger?: Logger;
  /** Print a progress line to stderr every second. */
  progress?: boolean;
  /** Serve the live status page, /stats and /metrics on 127.0.0.1:<port> while crawling (0 = any free port). */
  statusPort?: number;
}

export interface RunSummary {
  pagesStored: number;
  fetches: number;
  failures: number;
  handoffEvents: number;
  /** Pages through parse in this run (crawl.parsed records): links followed, duplicates judged. */
  pagesParsed: number;
  /** Of pagesParsed, those parsed before the stop began (the rest were drained while stopping). */
  pagesParsedBeforeStop: number;
  warcFiles: number;
  seconds: number;
  pagesPerSecond: number;
  stoppedBy: 'done' | 'max-pages' | 'max-secs' | 'signal';
  handoffFile: string;
  /** URLs parked for a later retry or behind a host that may not be contacted for a while (Retry-After, a 503 pause); a re-run takes them up when due. */
  waitingRetry: number;
}

/** Valid seeds as links; each invalid one is reported and skipped. */
export function seedLinks(seeds: readonly string[], log: Logger, now = Date.now()): LinkMsg[] {
  const links: LinkMsg[] = [];
  for (const s of seeds) {
    const n = normalizeUrl(s);
    if (!n.ok) {
      log.error({ seed: s, reason: n.reason, detail: n.detail }, 'invalid seed URL: skipped');
      continue;
    }
    links.push({ url: n.url, source_url: null, depth: 0, discovered_at: now, is_seed: true });
  }
  return links;
}

export function scopeOf(links: readonly LinkMsg[], scope: RunOptions['scope']): Set<string> {
  if (scope === 'any') return new Set();
  return new Set(
    links.map((l) => {
      const host = new URL(l.url).hostname;
      return scope === 'host' ? host : registeredDomain(host) ?? host;
    }),
  );
}

/** A killed crawl may leave a half-written `.partial` file; its pages are fetched again. */
function removePartials(dir: string, log: Logger): void {
  if (!existsSync(dir)) return;
  for (const f of readdirSync(dir)) {
    if (!f.endsWith('.partial')) continue;
    unlinkSync(join(dir, f));
    log.warn({ file: f }, 'removed an unfinished WARC file from an interrupted run');
  }
}

/**
 * `crawl run`'s own WARC defaults, under any CRAWL_WARC_* variable set. Its files go to local
 * disk, where a file costs no PUT, so they are stored sooner than a cluster's: every 2 s (the 30 s
 * default would hold every page of a small crawl back from parse that long) and at 1,000 records,
 * about 500 pages, rather than 4,000. Pages reach parse only once their file is stored; on the
 * benchmark's web with 200 ms responses, files of 500 pages kept the crawler 91.4-92.7% busy
 * against 87.3-90.3% with 2,000 (four pairs, README "Performance").
 */
export const EMBEDDED_WARC_DEFAULTS: Readonly<Partial<CrawlConfig>> = { warcMaxAgeMs: 2000, warcMaxRecords: 1000 };

export async function runEmbedded(opts: RunOptions, signal?: AbortSignal): Promise<RunSummary> {
  mkdirSync(opts.out, { recursive: true });
  const log = opts.logger ?? createLogger({ file: join(opts.out, 'crawl.log') });
  const config = loadConfig(
    process.env,
    { ...opts.config, allowPrivateNetwork: opts.allowPrivateNetwork ?? false },
    EMBEDDED_WARC_DEFAULTS,
  );
  const seeds = seedLinks(opts.seeds, log);
  if (seeds.length === 0 && !opts.seedSource) throw new Error('no valid seed URL: give --seed http(s)://… or --seeds-file');
  const scopeBy = opts.scope ?? 'domain';
  const scope = scopeOf(seeds, scopeBy);

  const fileLog = new FileLog({ dir: join(opts.out, 'state'), partitions: config.partitions, diskForms: { fetched: fetchedWithoutBody } });
  removePartials(join(opts.out, 'warc'), log);
  const store = new LocalPageStore(opts.out);
  const warc = new WarcWriter({
    store, prefix: config.warcPrefix, maxRecords: config.warcMaxRecords, maxBytes: config.warcMaxBytes, maxAgeMs: config.warcMaxAgeMs, gzipLevel: config.warcGzipLevel,
    software: 'kcrawl/0.1', onError: (err, key) => log.error({ err, key }, 'CDXJ index not stored'),
  });
  // parse's WET-style text records go to their own files (warc/<prefix>-wet-*.warc.gz).
  const textWarc = new WarcWriter({
    store, prefix: `${config.warcPrefix}-wet`, maxRecords: config.warcMaxRecords, maxBytes: config.warcMaxBytes, maxAgeMs: config.warcMaxAgeMs, gzipLevel: config.warcGzipLevel,
    software: 'kcrawl/0.1', onError: (err, key) => log.error({ err, key }, 'CDXJ index not stored'),
  });
  const http = createHttpClient({ maxPools: config.httpMaxPools });
  mkdirSync(join(opts.out, 'handoff'), { recursive: true });
  const handoffFile = join(opts.out, 'handoff', 'crawl.handoff.v3.avro');
  const sink = new AvroFileSink(handoffFile, avroType('crawl.handoff.v3'), loadSchema('crawl.handoff.v3'));
  const handoffAtStart = sink.count;
  const parsedEnd = (): number => Array.from({ length: fileLog.partitions }, (_, p) => fileLog.endOffset('parsed', p)).reduce((a, b) => a + b, 0);
  const parsedAtStart = parsedEnd();

  const counts = { pages: 0, fetches: 0, failures: 0 };
  const stages = buildStages(STAGE_NAMES, {
    config, http, warc, textWarc, scope, frontierStateDir: join(opts.out, 'state', 'frontier'),
    onOutcome: (outcome, status) => {
      if (outcome === 'FETCHED' || outcome === 'NOT_HTML') {
        if (status !== null) counts.fetches++;
      } else if (outcome === 'FAILED' || outcome === 'REFUSED' || outcome === 'ROBOTS_UNAVAILABLE') counts.failures++;
    },
    onReject: (reason, url) => log.debug({ reason, url }, 'link dropped'),
  });
  const sinkStage: Stage = {
    id: 'handoff-file',
    inputs: ['handoff'],
    outputs: [],
    handle: (rec) => {
      sink.append([rec.value]);
      counts.pages++;
      return [] as OutRecord[];
    },
  };
  // Consumer lag of every stage's group on each of its inputs: what waits in memory.
  const lags = (): GroupLag[] =>
    [...stages, sinkStage].flatMap((s) => s.inputs.map((t) => ({ group: `crawl.${s.id}`, topic: topics[t].name, records: fileLog.lag(`crawl.${s.id}`, t) })));
  const frontier = stages.find((s) => s.id === 'frontier') as FrontierStage;
  const status = opts.statusPort === undefined ? null : await (await import('../api/embedded-status')).startEmbeddedStatus(
    opts.statusPort, log, () => warc.stats, lags, { config, append: (outs) => fileLog.append(outs) }, (await import('../api/url-table')).frontierTable(frontier.state),
  );
  // Fetch may run ahead of parse by CRAWL_PARSE_BACKLOG_MAX stored pages (4,096; each waits as its
  // compressed WARC record), no more: beyond, pages only wait in memory. A page reaches parse only
  // once its WARC file is stored (about 1,000 pages a file), so a smaller lead left parse waiting
  // after each hold: 2,048 read 935 and 978 pages/s with 200 ms responses against 1,007 and 1,009.
  // Parse and seen-test wait likewise on the stage after them (runtime/backlog-holds.ts).
  const runner = new EmbeddedRunner(fileLog, [...stages, sinkStage, ...(status ? [status.stage] : [])], log, {
    holdWhile: holdWhileOf(embeddedHoldRules(config), (group, topic) => fileLog.lag(group, topic)),
  });
  await runner.start();
  fileLog.append(seeds.map((l) => ({ topic: 'links' as const, key: new URL(l.url).hostname, host: new URL(l.url).hostname, value: l })));
  log.info({ seeds: seeds.length, seedSource: opts.seedSource?.id ?? null, out: opts.out }, 'crawl started');
  // A seeds file streams in beside the crawl (the frontier leases the first seeds while later ones are read).
  let feeding: Promise<void> | null = null;
  const feedStop = new AbortController();
  if (opts.seedSource) {
    const source = opts.seedSource;
    feeding = feedSeeds({
      log: fileLog, source: source.seeds, sourceId: source.id, progressFile: join(opts.out, 'state', 'seeds-fed.json'),
      scope: scopeBy === 'any' ? null : { set: scope, by: scopeBy }, logger: log, maxLag: config.stageBacklogMax || 20_000, signal: feedStop.signal,
    }).then(
      (r) => {
        log.info(r, 'seeds fed');
        if (r.fed === 0 && r.resumedAfter === 0 && seeds.length === 0) log.error('no valid seed URL in the seeds file');
      },
      (err: unknown) => log.error({ err }, 'reading the seeds failed'),
    ).finally(() => (feeding = null));
  }

  const started = Date.now();
  const progress = opts.progress ? new Progress(process.stderr) : null;
  let stoppedBy: RunSummary['stoppedBy'] = 'done';
  let idleTicks = 0;
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const st = frontier.state.stats();
    progress?.update(counts.fetches, `queued ${st.queued}, in flight ${st.leased}, hosts ${st.hosts}, parsed ${parsedEnd() - parsedAtStart}, handoff ${counts.pages}`);
    if (signal?.aborted) { stoppedBy = 'signal'; break; }
    if (opts.maxPages !== undefined && counts.fetches >= opts.maxPages) { stoppedBy = 'max-pages'; break; }
    if (opts.maxSecs !== undefined && Date.now() - started >= opts.maxSecs * 1000) { stoppedBy = 'max-secs'; break; }
    idleTicks = runner.idle() && feeding === null ? idleTicks + 1 : 0;
    if (idleTicks >= 5) break;
  }
  feedStop.abort();
  await feeding;
  const waitingRetry = frontier.state.stats().retrying + frontier.state.parked(Date.now());
  const pagesParsedBeforeStop = parsedEnd() - parsedAtStart;
  await runner.stop();
  await warc.close();
  await http.close();
  // Drain what stopping produced (the last WARC file's pages) through parse and handoff.
  const drain = new EmbeddedRunner(fileLog, [...buildStages(['parse', 'handoff'], { config, http, warc, textWarc }), sinkStage], log);
  await drain.start();
  // Bounded: at most CRAWL_PARSE_BACKLOG_MAX pages plus the last WARC file's are left to parse.
  for (let i = 0; i < 1500 && !drain.idle(); i++) await new Promise((r) => setTimeout(r, 20));
  await drain.stop();
  await textWarc.close();
  await status?.stop();
  const pagesParsed = parsedEnd() - parsedAtStart;
  fileLog.close();
  sink.close();
  progress?.done();
  const seconds = (Date.now() - started) / 1000;
  const summary: RunSummary = {
    pagesStored: counts.fetches, fetches: counts.fetches, failures: counts.failures, handoffEvents: sink.count - handoffAtStart, pagesParsed, pagesParsedBeforeStop,
    warcFiles: warc.stats.files, seconds, pagesPerSecond: counts.fetches / seconds, stoppedBy, handoffFile, waitingRetry,
  };
  log.info(summary, 'crawl stopped');
  return summary;
}
