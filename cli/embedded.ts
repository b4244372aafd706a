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
import { HostPolicyTable } from '../lib/host-policy';
import type { FetchedPageMsg, LinkMsg } from '../lib/messages';
import { WarcWriter } from '../lib/warc/writer';
import type { FrontierStage } from '../processors/frontier';
import { AvroFileSink } from '../runtime/avro-file-sink';
import { buildStages, STAGE_NAMES } from '../runtime/build-stages';
import { EmbeddedRunner } from '../runtime/embedded-runner';
import { embeddedHoldRules, holdWhileOf, UncommittedBytes, withParseBacklogBytes, withWarcBacklog } from '../runtime/backlog-holds';
import { fetchedBytes } from '../lib/fetched-body';
import { fetchedWithoutBody } from '../runtime/fetched-disk-form';
import { FileLog } from '../runtime/file-log';
import { TimeSlice } from '../runtime/time-slice';
import type { OutRecord, Stage } from '../runtime/stage';
import { topics } from '../topologies/crawl';
import type { GroupLag } from '../api/embedded-status';
import { crawlView, ProgressReporter, type ProgressCounts } from './progress';
import { RunTally, type NotHandedOff } from './run-summary';
import { SeedFeed } from './seed-feed';
import { prepareOutDir } from './out-dir';
import { refusedSeedHint } from './seed-hint';
import { OperatorInbox, type InboxRequest } from './operator-inbox';

export interface RunOptions {
  /** Seed URLs (--seed); one without a scheme is taken as https://. */
  seeds: string[];
  /** Feed URLs (RSS, Atom, news sitemaps) to poll, in priority class 1 (`--feed`). */
  feeds?: string[];
  /** Do not stop once the crawl is idle: poll feeds and recrawl what comes due until maxSecs, maxPages or a signal (`--keep-running`). */
  keepRunning?: boolean;
  /** A list of seed URLs, one a line (--seeds-file): a path, or `-` for standard input; streamed (cli/seed-feed.ts). */
  seedsFile?: string;
  /** Where to tell the user about seeds refused or taken as https:// (the first few of each); default: the log. */
  notice?: (line: string) => void;
  out: string;
  maxPages?: number;
  maxSecs?: number;
  allowPrivateNetwork?: boolean;
  /** 'domain' (default): stay within the seeds' registered domains; 'host'; 'any'. */
  scope?: 'domain' | 'host' | 'any';
  config?: Partial<CrawlConfig>;
  logger?: Logger;
  /** Print a progress line to stderr every second (cli/progress.ts). */
  progress?: boolean;
  /** Serve the live status page, /stats and /metrics on 127.0.0.1:<port> while crawling (0 = any free port). */
  statusPort?: number;
  /** With statusPort: also serve the operator's endpoints (seeds, feeds, blocks, crawl rates, opt-outs) to this bearer token (CRAWL_API_TOKEN). */
  apiToken?: string;
}

export interface RunSummary {
  /** HTML pages stored in WARC files and sent on to parse (crawl.fetched records): what --max-pages counts. */
  pagesStored: number;
  /** Other responses stored (redirects, 4xx pages, not-modified revisits, non-HTML as metadata; a stored 5xx counts as a failure); robots.txt not counted. */
  otherResponsesStored: number;
  failures: number;
  /** The failures by reason ("timeout (30 s deadline)", "DNS", "HTTP 5xx", "robots.txt unavailable", …: run-summary.ts failureReason). */
  failuresByReason: Record<string, number>;
  /** HTML pages cut at the body cap, stored marked WARC-Truncated. */
  truncated: number;
  handoffEvents: number;
  /** Parsed pages that were not handed off, by reason. */
  notHandedOff: NotHandedOff;
  /** Pages through parse in this run (crawl.parsed records): links followed, duplicates judged. */
  pagesParsed: number;
  /** Of pagesParsed, those parsed before the stop began (the rest were drained while stopping). */
  pagesParsedBeforeStop: number;
  /** Stored pages not parsed yet, and parsed pages (or their events) not through handoff yet: the next run with the same --out takes them up. */
  leftForNextRun: { unparsed: number; notHandedOff: number };
  warcFiles: number;
  seconds: number;
  pagesPerSecond: number;
  stoppedBy: 'done' | 'max-pages' | 'max-secs' | 'signal';
  handoffFile: string;
  /** URLs parked for a later retry or behind a host that may not be contacted for a while (Retry-After, a 503 pause); a re-run takes them up when due. */
  waitingRetry: number;
  /** What became of the seeds: "N accepted, M refused (reason n, …)…" (lib/seed-source.ts SeedTally). */
  seeds: string;
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

/** How long the stop may spend parsing and handing off what the crawl stored before it stopped. */
const DRAIN_MAX_MS = 30_000;

/**
 * `crawl run`'s own WARC defaults, under any CRAWL_WARC_* variable set. Its files go to local
 * disk, where a file costs no PUT, so they are stored sooner than a cluster's: every 2 s (the 30 s
 * default would hold every page of a small crawl back from parse that long) and at 1,000 records,
 * about 500 pages, rather than 4,000. Pages reach parse only once their file is stored; on the
 * benchmark's web with 200 ms responses, files of 500 pages kept the crawler 91.4-92.7% busy
 * against 87.3-90.3% with 2,000 (four pairs, bench/HISTORY.md, 29th edition).
 */
export const EMBEDDED_WARC_DEFAULTS: Readonly<Partial<CrawlConfig>> = { warcMaxAgeMs: 2000, warcMaxRecords: 1000 };

/**
 * `crawl run` keeps at most 8,192 leases in flight (CRAWL_FRONTIER_MAX_LEASES): its log holds
 * each lease (a crawl.fetch record) and each answer (crawl.fetch-status) in memory until taken
 * in. Without a cap the frontier leased every due host at once: with 2 million seeds over
 * 100,000 hosts, 17,000 leases were out and 58,000 answers waited for the frontier after 140 s,
 * growing (docs/frontier-store.md, Figures). Twice fetch's most concurrent fetches
 * (CRAWL_FETCH_CONCURRENCY_MAX, 4,096), so fetch always has the next lease at hand.
 */
export const EMBEDDED_LEASE_DEFAULTS: Readonly<Partial<CrawlConfig>> = { frontierMaxLeases: 8192 };

export async function runEmbedded(opts: RunOptions, signal?: AbortSignal): Promise<RunSummary> {
  prepareOutDir(opts.out);
  const log = opts.logger ?? createLogger({ file: join(opts.out, 'crawl.log') });
  const config = loadConfig(
    process.env,
    { ...opts.config, allowPrivateNetwork: opts.allowPrivateNetwork ?? false },
    { ...EMBEDDED_WARC_DEFAULTS, ...EMBEDDED_LEASE_DEFAULTS },
  );
  const feed = new SeedFeed({ args: opts.seeds, file: opts.seedsFile, scope: opts.scope ?? 'domain' }, log, opts.notice ?? ((line) => log.warn(line)));
  await feed.readScope();
  // Feeds are seeds of priority class 1; the frontier polls whatever answers as a feed.
  const firstSeeds = [...feed.feedLinks(opts.feeds ?? []), ...(await feed.first())];
  if (firstSeeds.length === 0) {
    await feed.close();
    throw new Error(`no valid seed URL (${feed.tally.summary()}): give --seed URL, --seeds-file FILE or --feed URL`);
  }

  // The operator's changes from other processes (`crawl seed|block|optout … --out DIR`).
  const inbox = new OperatorInbox(opts.out);
  inbox.claim();
  const opening = performance.now();
  const fileLog = new FileLog({ dir: join(opts.out, 'state'), partitions: config.partitions, diskForms: { fetched: fetchedWithoutBody } });
  log.info({ ms: Math.round(performance.now() - opening), sinceStartMs: Math.round(performance.now()) }, 'journal opened');
  removePartials(join(opts.out, 'warc'), log);
  const store = new LocalPageStore(opts.out);
  const warc = new WarcWriter({
    store, prefix: config.warcPrefix, maxRecords: config.warcMaxRecords, maxBytes: config.warcMaxBytes, maxAgeMs: config.warcMaxAgeMs, gzipLevel: config.warcGzipLevel,
    software: 'kcrawl/0.1', onError: (err, key) => log.error({ err, key }, 'CDXJ index not stored'), slice: new TimeSlice(),
  });
  // parse's WET-style text records go to their own files (warc/<prefix>-wet-*.warc.gz).
  const textWarc = new WarcWriter({
    store, prefix: `${config.warcPrefix}-wet`, maxRecords: config.warcMaxRecords, maxBytes: config.warcMaxBytes, maxAgeMs: config.warcMaxAgeMs, gzipLevel: config.warcGzipLevel,
    software: 'kcrawl/0.1', onError: (err, key) => log.error({ err, key }, 'CDXJ index not stored'), slice: new TimeSlice(),
  });
  const http = createHttpClient({ maxPools: config.httpMaxPools });
  mkdirSync(join(opts.out, 'handoff'), { recursive: true });
  const handoffFile = join(opts.out, 'handoff', 'crawl.handoff.v3.avro');
  const sink = new AvroFileSink(handoffFile, avroType('crawl.handoff.v3'), loadSchema('crawl.handoff.v3'));
  const handoffAtStart = sink.count;
  const ended = (topic: 'fetched' | 'parsed'): number => Array.from({ length: fileLog.partitions }, (_, p) => fileLog.endOffset(topic, p)).reduce((a, b) => a + b, 0);
  // Pages stored and parsed in this run, as the log has them: a page's crawl.fetched record is
  // appended once its WARC file is stored, and parse reads exactly those.
  const fetchedAtStart = ended('fetched');
  const parsedAtStart = ended('parsed');
  const pagesStored = (): number => ended('fetched') - fetchedAtStart;
  const pagesParsed = (): number => ended('parsed') - parsedAtStart;
  const tally = new RunTally();
  fileLog.on('append', tally.add);

  // pages: handoff events written; responses: responses in hand as they arrive (their WARC file may still be open).
  const counts = { pages: 0, failures: 0, responses: 0 };
  // One host-policy view for seen-test, the frontier, fetch and the status page (runtime/build-stages.ts).
  const hostPolicy = new HostPolicyTable();
  // parse's duplicate stores beside the frontier's (docs/dedup-store.md).
  const parseStateDir = join(opts.out, 'state', 'parse');
  const stages = buildStages(STAGE_NAMES, {
    config, http, warc, textWarc, scope: feed.scope, frontierStateDir: join(opts.out, 'state', 'frontier'), parseStateDir, hostPolicy,
    onOutcome: (outcome, status, reason) => {
      if (tally.outcome(outcome, status, reason)) counts.failures++;
    },
    onFetchStatus: (s) => {
      if (!s.stored && s.http_status !== null) counts.responses++;
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
  const urlTable = (await import('../api/url-table')).frontierTable(frontier.state);
  // The operator's records (the inbox's, the API's): seeds widen the scope as `--seed` does; in the journal before they are answered.
  const operatorAppend = (outs: OutRecord[]): void => {
    for (const o of outs) if (o.topic === 'links' && o.host) feed.admit(o.host);
    fileLog.append(outs);
    fileLog.flush();
  };
  const status = opts.statusPort === undefined ? null : (await import('../api/embedded-status')).embeddedStatus(
    opts.statusPort, log, {
      warcStats: () => warc.stats, lags, webmaster: { config, append: (outs) => fileLog.append(outs) },
      urls: urlTable, policy: hostPolicy,
      ...(opts.apiToken ? { operator: { token: opts.apiToken, send: async (outs: OutRecord[]) => operatorAppend(outs) } } : {}),
    },
  );
  const applyRequest = async (req: InboxRequest): Promise<string> => {
    const h = req.knownHost;
    if (h !== undefined && hostPolicy.fields(h).length === 0 && !(await urlTable.hostKnown(h))) throw new Error(`the crawl does not know ${h}; give --force to set it anyway`);
    operatorAppend(req.records);
    return `${req.records.length} record(s) in the journal`;
  };
  let taking: Promise<unknown> | null = null;
  const takeInbox = (): void => {
    taking ??= inbox
      .take(applyRequest, (req, reply, file) => log.info({ file, what: req?.what ?? null, ok: reply.ok, message: reply.message }, 'operator request'))
      .catch((err: unknown) => log.error({ err }, 'operator inbox not read'))
      .finally(() => (taking = null));
  };
  // Fetch may run ahead of parse by CRAWL_PARSE_BACKLOG_MAX stored pages (4,096; each waits as its
  // compressed WARC record), no more: beyond, pages only wait in memory. A page reaches parse only
  // once its WARC file is stored (about 1,000 pages a file), so a smaller lead left parse waiting
  // after each hold: 2,048 read 935 and 978 pages/s with 200 ms responses against 1,007 and 1,009.
  // And by bytes (CRAWL_PARSE_BACKLOG_MAX_BYTES, 64 MiB): 4,096 pages of the real web wait as
  // about 225 MB of gzipped records, lorem ipsum's as 6 MB.
  // Parse and seen-test wait likewise on the stage after them (runtime/backlog-holds.ts).
  const parseBacklog = new UncommittedBytes('fetched', fileLog.partitions, (v) => fetchedBytes(v as FetchedPageMsg), (p) => fileLog.committed('crawl.parse').fetched?.[p] ?? 0);
  fileLog.on('append', parseBacklog.add);
  const holds = holdWhileOf(embeddedHoldRules(config), (group, topic) => fileLog.lag(group, topic));
  const runner = new EmbeddedRunner(fileLog, [...stages, sinkStage, ...(status ? [status.stage] : [])], log, {
    holdWhile: withWarcBacklog(withParseBacklogBytes(holds, parseBacklog, config.parseBacklogMaxBytes), warc, config.warcMaxBytes),
  });
  await runner.start();
  await status?.listen();
  const appendSeeds = (links: LinkMsg[]): void => {
    fileLog.append(links.map((l) => {
      const host = new URL(l.url).hostname;
      return { topic: 'links' as const, key: host, host, value: l };
    }));
  };
  appendSeeds(firstSeeds);
  takeInbox();
  // Said once, for the first seed (of the first batch) the SSRF guard will refuse.
  for (const l of firstSeeds) {
    const hint = refusedSeedHint(l.url, new URL(l.url).hostname, config);
    if (hint) {
      (opts.notice ?? ((line) => log.warn(line)))(hint);
      break;
    }
  }
  // How long the start took (node's own start included): restoring state, reading back the journal.
  log.info({ out: opts.out, startMs: Math.round(performance.now()) }, 'crawl started');
  // The rest of the seeds, a batch at a time while seen-test keeps up (CRAWL_STAGE_BACKLOG_MAX).
  let seedError: unknown = null;
  const seenTestLag = (): number => fileLog.lag('crawl.seen-test', 'links');
  const seeding = feed
    .feed(appendSeeds, () => config.stageBacklogMax > 0 && seenTestLag() > config.stageBacklogMax)
    .catch((err: unknown) => void (seedError = err));

  const started = Date.now();
  const progressCounts = (): ProgressCounts => {
    const st = frontier.state.stats();
    return { fetched: counts.responses, stored: pagesStored(), parsed: pagesParsed(), handedOff: counts.pages, queued: st.queued, inFlight: st.leased, hosts: st.hosts };
  };
  const progress = opts.progress ? new ProgressReporter(process.stderr, crawlView(progressCounts, { maxPages: opts.maxPages, maxSecs: opts.maxSecs })) : null;
  progress?.start();
  let stoppedBy: RunSummary['stoppedBy'] = 'done';
  let idleTicks = 0;
  let ticks = 0;
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    if (seedError) break;
    if (signal?.aborted) { stoppedBy = 'signal'; break; }
    if (opts.maxPages !== undefined && pagesStored() >= opts.maxPages) { stoppedBy = 'max-pages'; break; }
    if (opts.maxSecs !== undefined && Date.now() - started >= opts.maxSecs * 1000) { stoppedBy = 'max-secs'; break; }
    // Not idle while an operator's request is being applied (taken up at the end of the tick
    // before: an empty inbox is read by the next one).
    idleTicks = runner.idle() && feed.done && taking === null ? idleTicks + 1 : 0;
    if (idleTicks >= 5 && !opts.keepRunning) break;
    // The operator's requests, once a second.
    if (++ticks % 5 === 0) takeInbox();
  }
  const waitingRetry = frontier.state.stats().retrying + frontier.state.parked(Date.now());
  const pagesParsedBeforeStop = pagesParsed();
  progress?.stop();
  await taking;
  inbox.release();
  await feed.close();
  await seeding;
  await runner.stop();
  await warc.close();
  await http.close();
  // Drain what stopping produced (the last WARC file's pages) through parse and handoff.
  const drain = new EmbeddedRunner(fileLog, [...buildStages(['parse', 'handoff'], { config, http, warc, textWarc, parseStateDir }), sinkStage], log);
  log.info({ unparsed: fileLog.lag('crawl.parse', 'fetched'), notHandedOff: fileLog.lag('crawl.handoff', 'parsed') }, 'stopping: parsing and handing off what was stored');
  await drain.start();
  // Bounded: at most CRAWL_PARSE_BACKLOG_MAX pages plus the last WARC file's are left to parse.
  // Parsed pages wait for their text records' file, which nothing stores before its age limit
  // (CRAWL_WARC_MAX_AGE_MS) now the crawl is stopping: it is stored whenever that is all the
  // drain waits for.
  const drainUntil = Date.now() + DRAIN_MAX_MS;
  while (!drain.idle() && Date.now() < drainUntil) {
    await new Promise((r) => setTimeout(r, 20));
    if (drain.stalled() && !drain.idle()) await textWarc.flush();
  }
  await drain.stop();
  await textWarc.close();
  await status?.stop();
  fileLog.off('append', tally.add);
  fileLog.off('append', parseBacklog.add);
  const leftForNextRun = {
    unparsed: fileLog.lag('crawl.parse', 'fetched'),
    notHandedOff: fileLog.lag('crawl.handoff', 'parsed') + fileLog.lag(`crawl.${sinkStage.id}`, 'handoff'),
  };
  fileLog.close();
  sink.close();
  const seconds = (Date.now() - started) / 1000;
  const summary: RunSummary = {
    pagesStored: pagesStored(), otherResponsesStored: tally.storedResponses - pagesStored(), failures: counts.failures, failuresByReason: Object.fromEntries(tally.failures), truncated: tally.truncated, handoffEvents: sink.count - handoffAtStart,
    notHandedOff: tally.notHandedOff, pagesParsed: pagesParsed(), pagesParsedBeforeStop, leftForNextRun,
    warcFiles: warc.stats.files, seconds, pagesPerSecond: pagesStored() / seconds, stoppedBy, handoffFile, waitingRetry, seeds: feed.tally.summary(),
  };
  log.info(summary, 'crawl stopped');
  if (seedError) throw seedError;
  return summary;
}
