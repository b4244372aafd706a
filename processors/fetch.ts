/**
 * fetch: one leased URL -> robots check -> one HTTP exchange -> WARC records -> statuses.
 * In: crawl.fetch. Out: crawl.fetch-status (twice per lease: at once when the response is in,
 * so the host's politeness clock starts; again once the WARC file is stored), crawl.fetched
 * (stored HTML pages, for parse), crawl.links (redirect targets).
 *
 * Redirects are not followed inline: the 3xx is stored and its Location goes back through
 * crawl.links, so every hop is normalised, seen-tested, scheduled politely and robots-checked
 * like any other URL, and a redirect loop ends at the seen test.
 */
import { FetchError, type HttpCapture, type HttpClient, type HttpFetchOptions } from '../connectors/types';
import type { CrawlConfig } from '../lib/config';
import { bodyHead, bodyLength, bodySha256 } from '../lib/net/capture-body';
import { HostPolicyTable, hostPolicyKey } from '../lib/host-policy';
import type { FetchOutcome, FetchRequestMsg, FetchStatusMsg, FetchedPageMsg, HostPolicyMsg, LinkMsg, OptOutMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import { partitionForHost } from '../lib/partitioner';
import { nextRedirectHop, TOO_MANY_REDIRECTS } from '../lib/redirect-hops';
import { crawlDelayMs, isAllowed, sitemaps, type RobotsFetchResult } from '../lib/robots';
import type { WarcEntry, WarcPointer } from '../lib/warc/writer';
import type { FollowsOptOuts } from '../runtime/registry-report';
import type { HandleResult, OutRecord, Stage, StageContext } from '../runtime/stage';
import { backoffWait, firstContactAt, gate, HostPacer, PartitionGains, type HostSlot } from './fetch-gate';
import { RobotsCache, type RobotsEntry } from './robots-cache';
import { feedLinks, feedOf, feedStatusFields } from './feeds';
import { newsEntries, sitemapLinks, sitemapOf, sitemapSeeds } from './sitemaps';

/**
 * Stores an entry; resolves with its pointer once the file holding it is stored. `onBuilt`, if
 * the archive calls it, says the entry's records are built (compressed): from then on the
 * caller need not keep the capture's body (lib/warc/writer.ts calls it; test doubles may not).
 */
export type Archive = (entry: WarcEntry, onBuilt?: () => void) => Promise<WarcPointer>;

export interface FetchDeps {
  http: HttpClient;
  archive: Archive;
  config: CrawlConfig;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
  /** Told of every outcome, for metrics and progress. */
  onOutcome?: (outcome: FetchOutcome, status: number | null, reason: string | null) => void;
  /** The host-policy view, when stages of one process share it (runtime/build-stages.ts); else one of its own. */
  policy?: HostPolicyTable;
}

const EMPTY_BODY = Buffer.alloc(0);
const HTML_TYPES = /^\s*(text\/html|application\/xhtml\+xml)\b/i;
const MAX_ROBOTS_REDIRECTS = 5;

export function header(c: HttpCapture, name: string): string | null {
  const lower = name.toLowerCase();
  for (const [k, v] of c.headers) if (k.toLowerCase() === lower) return v;
  return null;
}

/** Retry-After as ms from now: delta-seconds or an HTTP-date (RFC 9110 §10.2.3). */
export function retryAfterMs(value: string | null, now: number): number | null {
  if (!value) return null;
  if (/^\s*\d+\s*$/.test(value)) return Number(value) * 1000;
  const t = Date.parse(value);
  return Number.isNaN(t) ? null : Math.max(0, t - now);
}

export function isHtml(c: HttpCapture): boolean {
  const ct = header(c, 'content-type');
  if (ct) return HTML_TYPES.test(ct);
  return /^\s*(<!doctype html|<html)/i.test(bodyHead(c, 512).toString('latin1'));
}

export function fetchOptions(config: CrawlConfig, headers: Record<string, string> = {}): HttpFetchOptions {
  return {
    userAgent: config.userAgent,
    headers: { Accept: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.1', ...headers },
    connectTimeoutMs: config.connectTimeoutMs,
    overallTimeoutMs: config.fetchTimeoutMs,
    maxHeaderBytes: config.maxHeaderBytes,
    maxBodyBytes: config.maxBodyBytes,
    maxDecompressionRatio: config.maxDecompressionRatio,
    allowPrivateNetwork: config.allowPrivateNetwork,
    allowCidrs: config.allowCidrs,
  };
}

/** The most of a robots.txt body read off the wire: a little past the 500 KiB it is parsed to. */
export const ROBOTS_BODY_CAP_BYTES = 512 * 1024;

/** robots.txt of an origin, following up to 5 redirects (RFC 9309 §2.3.1.2), archived too. */
export function robotsFetcher(deps: FetchDeps): (origin: string) => Promise<RobotsFetchResult> {
  const opts = { ...fetchOptions(deps.config), maxBodyBytes: ROBOTS_BODY_CAP_BYTES };
  return async (origin) => {
    let url = `${origin}/robots.txt`;
    for (let hop = 0; hop <= MAX_ROBOTS_REDIRECTS; hop++) {
      let c: HttpCapture;
      try {
        c = await deps.http.fetch(url, opts);
      } catch (err) {
        return { error: err instanceof FetchError ? `${err.code}: ${err.message}` : String(err) };
      }
      deps.archive({ type: 'exchange', capture: c }).catch(() => undefined); // best effort: robots.txt is policy, not a page
      const location = header(c, 'location');
      if (c.status >= 300 && c.status < 400 && location) {
        url = new URL(location, url).href;
        continue;
      }
      return { status: c.status, body: c.body };
    }
    return { status: 310, body: Buffer.alloc(0) }; // too many redirects: "unavailable" per RFC 9309
  };
}

interface Verdict {
  outcome: FetchOutcome;
  reason: string | null;
  entry: WarcEntry | null;
  page: boolean;
  links: string[];
  retryAfter: number | null;
}

/** Pure: what an HTTP exchange means for the crawl. */
export function classify(c: HttpCapture, req: FetchRequestMsg, now: number): Verdict {
  const v: Verdict = { outcome: 'FETCHED', reason: null, entry: { type: 'exchange', capture: c }, page: false, links: [], retryAfter: null };
  const location = header(c, 'location');
  if (c.status === 304 && req.prev_sha256) {
    v.entry = { type: 'revisit', capture: c, profile: 'server-not-modified', refersToTargetUri: req.url, refersToDate: new Date(now) };
  } else if (c.status >= 300 && c.status < 400) {
    if (location) {
      try {
        v.links.push(new URL(location, req.url).href);
      } catch {
        v.reason = 'bad-location';
      }
    }
  } else if (c.status === 429 || c.status >= 500) {
    v.outcome = 'FAILED';
    v.reason = `http-${c.status}`;
    v.retryAfter = retryAfterMs(header(c, 'retry-after'), now);
  } else if (c.status >= 200 && c.status < 300) {
    if (isHtml(c)) v.page = true;
    else {
      v.outcome = 'NOT_HTML';
      v.reason = 'not-html';
      v.entry = {
        type: 'metadata', targetUri: req.url,
        fields: [['http-status', String(c.status)], ['content-type', header(c, 'content-type') ?? ''], ['content-length-seen', String(bodyLength(c))]],
      };
    }
  }
  return v;
}

function status(req: FetchRequestMsg, fields: Partial<FetchStatusMsg> & Pick<FetchStatusMsg, 'outcome' | 'started_at' | 'finished_at'>): FetchStatusMsg {
  return {
    url: req.url, host: req.host, lease_id: req.lease_id, stored: true, http_status: null, reason: null, response_ms: 0,
    crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null,
    warc_length: null, ip: null, contacted: true, ...fields,
  };
}

const statusRecord = (s: FetchStatusMsg): OutRecord => ({ topic: 'fetchStatus', key: s.host, host: s.host, value: s });

/** What robots.txt said, for crawl.host-policy: with the answer itself, so the next owner of the host reuses it while fresh. */
export function robotsRecord(host: string, origin: string, r: RobotsEntry, crawlDelay: number): OutRecord {
  const answer = r.answer && 'status' in r.answer ? r.answer : null;
  const value: HostPolicyMsg = {
    host, field: 'robots', updated_at: r.fetchedAt, blocked_until: null, reason: r.kind, min_delay_ms: crawlDelay > 0 ? crawlDelay : null,
    robots_origin: origin, robots_status: answer?.status ?? null, robots_body: answer?.body ?? null,
  };
  return { topic: 'hostPolicy', key: hostPolicyKey(host, 'robots'), host, value };
}

/** A crawl.host-policy `robots` row's answer, if it holds one (older rows and failed fetches do not). */
export function robotsAnswerOf(row: HostPolicyMsg): { origin: string; answer: RobotsFetchResult; fetchedAt: number } | null {
  if (row.field !== 'robots' || !row.robots_origin || row.robots_status === null || row.robots_status === undefined) return null;
  return { origin: row.robots_origin, answer: { status: row.robots_status, body: row.robots_body ?? Buffer.alloc(0) }, fetchedAt: row.updated_at };
}

export function fetchStage(deps: FetchDeps): Stage & FollowsOptOuts {
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const cfg = deps.config;
  const robots = new RobotsCache(
    robotsFetcher(deps), { cacheMs: cfg.robotsCacheMs, retryMs: 60_000, maxEntries: 100_000, staleMaxMs: cfg.robotsStaleMaxMs }, now,
  );
  // Blocks, crawl-rate rows and back-off gaps (crawl.host-policy) and the opt-out registry, read whole.
  const policy = deps.policy ?? new HostPolicyTable();
  const optout = new OptOutRegistry();
  const report = (s: FetchStatusMsg): void => deps.onOutcome?.(s.outcome, s.http_status, s.reason);
  const gains = new PartitionGains(now());
  const pacer = new HostPacer();
  const refuse = (req: FetchRequestMsg, reason: string, started: number, ctx: StageContext, contacted: boolean): OutRecord[] => {
    const s = status(req, { outcome: 'REFUSED', reason, started_at: started, finished_at: now(), contacted });
    ctx.log.info({ url: req.url, reason }, 'refused');
    report(s);
    return [statusRecord(s)];
  };

  /**
   * One host at a time in this process, its gap apart (fetch-gate.ts HostPacer). The frontier
   * already spaces a host's leases, but two can reach a fetcher together: after a rebalance or
   * a restart the new owner of a partition replays the dead owner's uncommitted lease alongside
   * the frontier's next one (found by test/e2e/kafka-politeness.test.ts after a kill -9).
   */
  async function handle(req: FetchRequestMsg, ctx: StageContext): Promise<HandleResult> {
    const slot = await pacer.acquire(req.host, policy.leastGapMs(req.host, now(), cfg.minHostDelayMs));
    try {
      if (now() < slot.readyAt) await sleep(slot.readyAt - now());
      return await exchange(req, ctx, slot);
    } finally {
      slot.release(now());
    }
  }

  async function exchange(req: FetchRequestMsg, ctx: StageContext, slot: HostSlot): Promise<HandleResult> {
    const started = now();
    let origin: string;
    try {
      origin = new URL(req.url).origin;
    } catch {
      const s = status(req, { outcome: 'REFUSED', reason: 'bad-url', started_at: started, finished_at: now(), contacted: false });
      report(s);
      return [statusRecord(s)];
    }
    const before = gate(req.host, now(), policy, optout);
    if (before) return refuse(req, before, started, ctx, false);
    const firstAt = firstContactAt(req.host, gains.since(partitionForHost(req.host, cfg.partitions)), cfg.minHostDelayMs, policy);
    if (now() < firstAt) await sleep(firstAt - now());
    // No request at all (robots.txt included) inside the host's back-off window.
    const windowEnd = backoffWait(req.host, now(), req.lease_expires_at, policy);
    if (windowEnd === 'backoff') return refuse(req, 'backoff', started, ctx, false);
    if (windowEnd !== null) await sleep(windowEnd - now());
    const r = await robots.get(origin);
    if (r.fresh) slot.contacted = true;
    if (r.error?.startsWith('SSRF_BLOCKED')) {
      // A target we must never contact (private network without the opt-in): final, no retry.
      const s = status(req, { outcome: 'REFUSED', reason: 'SSRF_BLOCKED', started_at: started, finished_at: now(), contacted: slot.contacted });
      ctx.log.warn({ url: req.url, err: r.error }, 'refused target');
      report(s);
      return [statusRecord(s)];
    }
    const delay = Math.min(crawlDelayMs(r.rules, cfg.userAgent) ?? 0, cfg.maxCrawlDelayMs);
    slot.gapMs = Math.max(policy.leastGapMs(req.host, now(), cfg.minHostDelayMs), delay);
    // A freshly read robots.txt announces the origin's sitemaps; they are fetched through the
    // frontier like pages (processors/sitemaps.ts), never here.
    const robotsRecs: OutRecord[] = (r.fresh && !r.retryLater ? sitemapSeeds(origin, sitemaps(r.rules), cfg.sitemapProbe) : []).map((url) => ({
      topic: 'links', key: req.host, host: hostKey(url),
      value: { url, source_url: `${origin}/robots.txt`, depth: 0, discovered_at: now(), is_seed: false } satisfies LinkMsg,
    }));
    // What robots.txt said, recorded in crawl.host-policy (field `robots`) for `crawl explain`
    // and operators; every fetch process that reads it writes the same fact.
    if (r.fresh) robotsRecs.push(robotsRecord(req.host, origin, r, delay));
    const verdict = r.retryLater ? 'ROBOTS_UNAVAILABLE' : isAllowed(r.rules, req.url, cfg.userAgent).allowed ? null : 'ROBOTS_DISALLOWED';
    if (verdict) {
      // A verdict from the cached answer sent no request: the frontier starts no gap for it.
      const s = status(req, { outcome: verdict, reason: r.kind, started_at: started, finished_at: now(), crawl_delay_ms: delay, contacted: slot.contacted });
      ctx.log.info({ url: req.url, outcome: verdict, robots: r.kind }, 'not fetched: robots.txt');
      report(s);
      return [statusRecord(s), ...robotsRecs];
    }
    // robots.txt was itself a request to this host: wait the host's gap before the page.
    if (r.fresh) await sleep(Math.max(policy.leastGapMs(req.host, now(), cfg.minHostDelayMs), delay));
    // A block or opt-out may have arrived while robots.txt was fetched or while waiting.
    const after = gate(req.host, now(), policy, optout);
    if (after) return refuse(req, after, started, ctx, slot.contacted);
    const conditional: Record<string, string> = {};
    if (req.prev_sha256 && req.etag) conditional['If-None-Match'] = req.etag;
    if (req.prev_sha256 && req.last_modified) conditional['If-Modified-Since'] = req.last_modified;
    const t0 = now();
    let c: HttpCapture;
    slot.contacted = true;
    try {
      c = await deps.http.fetch(req.url, fetchOptions(cfg, conditional));
    } catch (err) {
      const fe = err instanceof FetchError ? err : null;
      const s = status(req, {
        outcome: fe && !fe.retriable ? 'REFUSED' : 'FAILED', reason: fe?.code ?? 'error', started_at: started, finished_at: now(),
        response_ms: now() - t0, crawl_delay_ms: delay,
      });
      ctx.log.warn({ url: req.url, code: s.reason, err: (err as Error).message }, 'fetch failed');
      report(s);
      return [statusRecord(s), ...robotsRecs];
    }
    const finished = now();
    const v = classify(c, req, finished);
    slot.gapMs = Math.max(slot.gapMs, cfg.responseTimeFactor * c.responseMs, v.retryAfter ?? 0);
    // A chain of ever-new redirect targets is cut here (a loop back to a known URL ends at the seen test).
    const hop = nextRedirectHop(req.redirects);
    if (v.links.length > 0 && hop === null) {
      ctx.log.warn({ url: req.url, location: v.links[0], redirects: req.redirects }, 'redirect not followed: too many redirects');
      v.links = [];
      v.reason = TOO_MANY_REDIRECTS;
    }
    const sitemap = v.page ? null : sitemapOf(c.status, header(c, 'content-type'), req.url, c.body);
    // A feed (RSS, Atom) likewise; the frontier polls it (and a news sitemap) at its own interval.
    const feed = v.page || sitemap ? null : feedOf(c.status, header(c, 'content-type'), req.url, c.body, cfg.feedMaxItems);
    const news = sitemap ? newsEntries(sitemap).map((e) => e.loc) : [];
    if (sitemap || feed) {
      // A sitemap or feed is kept whole (not as metadata) and its entries go to crawl.links.
      Object.assign(v, { outcome: 'FETCHED', reason: null, entry: { type: 'exchange', capture: c } });
      if (sitemap) ctx.log.info({ url: req.url, kind: sitemap.kind, entries: sitemap.entries.length, news: news.length }, 'sitemap read');
      else ctx.log.info({ url: req.url, kind: feed!.kind, items: feed!.items.length }, 'feed read');
    }
    if (c.truncated) ctx.log.info({ url: req.url, truncated: c.truncated, bytes: bodyLength(c) }, 'body truncated');
    if (v.outcome === 'NOT_HTML') ctx.log.info({ url: req.url, contentType: header(c, 'content-type') }, 'not HTML: metadata only');
    const sha256 = v.page || v.outcome === 'FETCHED' ? bodySha256(c) : null;
    // The WARC payload digest is this same hash of the same bytes: hand it over, not hash twice.
    if (sha256 && v.entry?.type === 'exchange') v.entry = { ...v.entry, payloadSha256: sha256 };
    const base = status(req, {
      outcome: v.outcome, reason: v.reason, http_status: c.status, started_at: started, finished_at: finished, response_ms: c.responseMs,
      crawl_delay_ms: delay, retry_after_ms: v.retryAfter, sha256: c.status === 304 ? req.prev_sha256 : sha256,
      etag: header(c, 'etag'), last_modified: header(c, 'last-modified'), ip: c.ip, ...feedStatusFields(feed, news, cfg.feedMaxItems),
    });
    const early = [statusRecord({ ...base, stored: false }), ...robotsRecs];
    // A feed's items go out at once, not when the feed's WARC file is stored (up to warcMaxAgeMs
    // later): news is what feeds are polled for. Were the feed not stored, it is fetched again and
    // its items are found again, which the seen test drops.
    if (feed) for (const link of feedLinks(feed, req.url, req.depth, finished)) early.push({ topic: 'links', key: req.host, host: hostKey(link.url), value: link });
    // What the page record needs of the capture, taken now: `pending` waits until the WARC file
    // is stored (up to warcMaxAgeMs), and a closure that kept the capture kept its body that long,
    // a body per page of the open file (2,048 bodies, 100 MB, in a heap snapshot of `crawl run`).
    // The body itself is kept only until its record is built, for an archive that hands back no
    // stored record (below).
    const { page: isPage, links } = v;
    const httpStatus = c.status;
    const contentType = header(c, 'content-type');
    const truncated = c.truncated !== false;
    const xRobotsTag = header(c, 'x-robots-tag');
    // The capture, not its `body`, which would join the page's chunks into a copy.
    let bodyUntilBuilt: HttpCapture | null = c;
    const archived = v.entry ? deps.archive(v.entry, () => void (bodyUntilBuilt = null)) : null;
    v.entry = null;
    const pending = (async (): Promise<OutRecord[]> => {
      let ptr: WarcPointer | null = null;
      try {
        ptr = archived ? await archived : null;
      } catch (err) {
        // Not stored, so not announced: the URL is retried later (a full disk, a store outage).
        ctx.log.error({ url: req.url, err: (err as Error).message }, 'WARC store failed');
        const failed = { ...base, outcome: 'FAILED' as const, reason: 'store-failed' };
        report(failed);
        return [statusRecord(failed)];
      }
      const final = { ...base, warc_uri: ptr?.uri ?? null, warc_offset: ptr?.offset ?? null, warc_length: ptr?.length ?? null };
      report(final);
      const out: OutRecord[] = [statusRecord(final)];
      if (isPage && ptr) {
        // The page goes on as its stored response record (lib/fetched-body), compressed: the
        // body itself is not kept until parse gets to it.
        if (!ptr.recordGz && !bodyUntilBuilt) throw new Error(`${req.url}: the archive said the record was built but handed back no record`);
        const page: FetchedPageMsg = {
          url: req.url, final_url: req.url, host: req.host, depth: req.depth, fetched_at: finished, http_status: httpStatus,
          content_type: contentType, body: ptr.recordGz ? EMPTY_BODY : bodyUntilBuilt!.body, record_gz: ptr.recordGz ?? null, truncated, sha256: sha256!,
          prev_sha256: req.prev_sha256, warc: { uri: ptr.uri, offset: ptr.offset, length: ptr.length }, x_robots_tag: xRobotsTag,
          record_id: ptr.recordId, priority: req.priority ?? null,
        };
        out.push({ topic: 'fetched', key: req.host, host: req.host, value: page });
      }
      for (const url of links) {
        // A redirect target stands for the same page: it keeps the page's importance and class.
        const link: LinkMsg = {
          url, source_url: req.url, depth: req.depth, discovered_at: finished, is_seed: false, redirects: hop!, priority: req.priority ?? null,
          ...(req.priority_class ? { priority_class: req.priority_class } : {}),
        };
        out.push({ topic: 'links', key: req.host, host: hostKey(url), value: link });
      }
      if (sitemap && ptr) {
        for (const link of sitemapLinks(sitemap, req.url, req.depth, finished)) out.push({ topic: 'links', key: req.host, host: hostKey(link.url), value: link });
      }
      return out;
    })();
    return { early, pending };
  }

  return {
    id: 'fetch',
    inputs: ['fetch'],
    outputs: ['fetchStatus', 'fetched', 'links', 'hostPolicy'],
    concurrency: cfg.fetchConcurrency,
    globalTables: ['hostPolicy', 'optout'],
    // robots.txt answers of the hosts it owns, recorded by whoever fetched them last.
    restoreFrom: ['hostPolicy'],
    restore(rec, topic) {
      const row = topic === 'hostPolicy' && rec.value ? robotsAnswerOf(rec.value as HostPolicyMsg) : null;
      if (row) robots.seed(row.origin, row.answer, row.fetchedAt);
    },
    optoutRegistry: optout,
    assigned: (partitions) => gains.assigned(partitions, now()),
    onGlobal(rec, topic) {
      if (topic === 'hostPolicy') policy.apply(rec.key, rec.value as HostPolicyMsg | null);
      else if (topic === 'optout') optout.apply(rec.key, rec.value as OptOutMsg | null);
    },
    handle: (rec, ctx) => handle(rec.value as FetchRequestMsg, ctx),
  };
}

/** The partitioning host of a raw URL (links are keyed by their own host). */
export function hostKey(url: string): string {
  try {
    return new URL(url).hostname.toLowerCase();
  } catch {
    return '';
  }
}
