/**
 * parse: a stored HTML page -> its links (back to crawl.links) and what the indexer needs
 * (crawl.parsed). Charset, one SAX pass, SHA-256 comparison with the last stored copy
 * (NEW / CHANGED / UNCHANGED), language, 64-bit SimHash of the visible text; then, in the
 * stage, duplicates across URLs (processors/parse-dedup.ts) and the WET-style text record.
 * In: crawl.fetched. Out: crawl.links, crawl.parsed, crawl.content (the changelog of its
 * duplicate tables, which live on disk per owned partition: processors/dedup-store.ts),
 * crawl.host-policy (`trap:<prefix>` rows).
 *
 * A page that will be handed off gets a WARC conversion record with its text, and its
 * crawl.parsed record waits until the file holding that record is stored (`{ pending }`), so
 * the indexer's text pointer is always readable.
 */
import { fetchedBody } from '../lib/fetched-body';
import { extract, scanForm } from '../lib/html/extract';
import { detectLanguage } from '../lib/html/language';
import type { ChangeKind, ContentMsg, FetchedPageMsg, LinkMsg, ParsedPageMsg } from '../lib/messages';
import { productToken } from '../lib/robots';
import { SIMHASH_VERSION, simhashWithCount } from '../lib/simhash';
import { hostOf, normalizeUrl } from '../lib/url-normalize';
import type { WarcEntry, WarcPointer } from '../lib/warc/writer';
import type { HandleResult, OutRecord, Stage, StageContext } from '../runtime/stage';
import { groupLinks } from '../lib/link-groups';
import { DedupIndex, MemoryDedupTable } from '../lib/dedup';
import type { ChangelogSource } from '../runtime/changelog';
import { checkpointDedup, dedupStoreBudget, dedupStoreDir, restoreDedupStores, type DedupStore } from './dedup-store';
import { contentRecord, ParseDedup, trapRecord } from './parse-dedup';
import type { ParseAnalyzer } from './parse-pool';

export interface ParseOptions {
  userAgent: string;
  /**
   * Stores a WET-style conversion record; absent: no text records, `text` stays null. `onBuilt`,
   * if given, is called once the record is built from the entry's text (WarcWriter.append).
   */
  archiveText?: (entry: WarcEntry, onBuilt?: () => void) => Promise<WarcPointer>;
  /** Stores the conversion records still buffered (called on close). */
  flushText?: () => Promise<void>;
  /** Partition count: one duplicate table per partition. */
  partitions?: number;
  /**
   * Folder of the partitions' duplicate stores (`<stateDir>/content-<partition>`), restored
   * from crawl.content before any page is parsed. Absent: the tables live in the heap (tests,
   * one-off tools), restored from crawl.content's rows.
   */
  stateDir?: string;
  /** How long a newly owned partition waits for its previous owner on this machine to close the store. */
  lockWaitMs?: number;
  /** How often the stores are made durable and their changelog offsets recorded (CHECKPOINT_MS). */
  checkpointMs?: number;
  /**
   * analyzePage on other threads (processors/parse-pool.ts); absent: on the stage's own thread.
   * Its close() is called when the stage closes.
   */
  analyzer?: ParseAnalyzer | null;
}

/**
 * Pages in flight to the analyzer at once: enough to keep its workers busy while the event loop
 * that feeds them is held up. That loop is late by 100-300 ms at times (storing a WARC file,
 * bursts of fetch results, scavenges between them); 64 pages queued are about 70 ms of parsing.
 * In one-minute embedded runs with 200 ms responses (two rounds, taking turns), the sustained
 * share of the CPU limit went from 85% and 85% with 64 to 89% and 90% with 256 and 91% and 92%
 * with 512. At 50 KiB a page, 512 pages are about 25 MiB; bigger pages are bounded by bytes
 * (ANALYZER_MAX_BYTES, processors/parse-pool.ts).
 */
export const ANALYZER_CONCURRENCY = 512;

/**
 * Fewer features than this make a fingerprint that says little: such pages get no SimHash. A
 * feature is a word (with the one before it) or a character of a script without spaces, so
 * about 16 words; version 1 counted 4-character shingles and asked for 32 (about 7 words).
 */
export const MIN_SIMHASH_SHINGLES = 16;

export function changeOf(page: Pick<FetchedPageMsg, 'sha256' | 'prev_sha256'>): ChangeKind {
  if (!page.prev_sha256) return 'NEW';
  return page.prev_sha256 === page.sha256 ? 'UNCHANGED' : 'CHANGED';
}

/**
 * The text's SimHash (version SIMHASH_VERSION), or null when too few features voted. Given its
 * UTF-8 bytes where the caller has them (the parse worker: the text record's block), so the
 * text is not encoded a second time for the fingerprint.
 */
export function textSimhash(text: string | Uint8Array): string | null {
  const { simhash, shingles } = simhashWithCount(text);
  return shingles >= MIN_SIMHASH_SHINGLES ? simhash : null;
}

export interface PageAnalysis {
  parsed: ParsedPageMsg;
  /**
   * The URLs to follow (none for an unchanged page or under nofollow), as WHATWG URL serialises
   * them; pageLinks makes them crawl.links messages. Plain strings: from the parse worker, 25
   * URLs cross the thread boundary instead of 25 objects that each repeat the page's URL.
   */
  linkUrls: string[];
  /** Feeds the page names (lib/html/extract.ts `feeds`), left out of linkUrls: they go in priority class 1. Absent when none. */
  feedUrls?: string[];
  /** The visible text; from the parse worker, its UTF-8 bytes (the text record's block). */
  text: string | Uint8Array;
  /**
   * Set when `text` is a view of a parse worker's shared ring (processors/parse-text-ring.ts):
   * valid until this is called, which the stage does once the page is decided or, for a text it
   * stores, once the text record is built.
   */
  releaseText?: () => void;
}

/** The links a page gives to follow, one hop deeper than the page, at `priority` (null: unset) and, for feeds, a class. */
export function pageLinks(page: Pick<FetchedPageMsg, 'url' | 'depth' | 'fetched_at'>, urls: readonly string[], priority: number | null, priorityClass?: 1): LinkMsg[] {
  const depth = page.depth + 1;
  const cls = priorityClass ? { priority_class: priorityClass } : {};
  return urls.map((url) => ({ url, source_url: page.url, depth, discovered_at: page.fetched_at, is_seed: false, priority, ...cls }));
}

/** A page's links and feeds (priority class 1: the frontier polls what answers as a feed). */
function followed(page: Pick<FetchedPageMsg, 'url' | 'depth' | 'fetched_at'>, a: Pick<PageAnalysis, 'linkUrls' | 'feedUrls'>, priority: number | null): LinkMsg[] {
  const links = pageLinks(page, a.linkUrls, priority);
  return a.feedUrls ? [...pageLinks(page, a.feedUrls, priority, 1), ...links] : links;
}

/** A string's UTF-8 bytes in an ArrayBuffer of their own (one that can be transferred). */
function ownUtf8(s: string): Uint8Array {
  const bytes = Buffer.allocUnsafeSlow(Buffer.byteLength(s, 'utf8'));
  bytes.write(s, 0, 'utf8');
  return bytes;
}

/**
 * Pure: what one page says, before any comparison with other pages. With `textAsUtf8` (the parse
 * worker) the text comes back as its UTF-8 bytes: where the function given encodes them (the
 * worker's shared ring), or in an ArrayBuffer of their own, which the worker moves to the stage's
 * thread.
 */
export function analyzePage(page: FetchedPageMsg, opts: Pick<ParseOptions, 'userAgent'>): PageAnalysis & { text: string };
export function analyzePage(page: FetchedPageMsg, opts: Pick<ParseOptions, 'userAgent'> & { textAsUtf8: true | ((text: string) => Uint8Array | null) }): PageAnalysis & { text: Uint8Array };
export function analyzePage(page: FetchedPageMsg, opts: Pick<ParseOptions, 'userAgent'> & { textAsUtf8?: true | ((text: string) => Uint8Array | null) }): PageAnalysis {
  // The body is read once, into the page's text, and not kept: it may be inflated into a reused buffer.
  const form = scanForm(fetchedBody(page, true), page.content_type);
  const ex = extract(form.html, page.final_url, { xRobotsTag: page.x_robots_tag, productToken: productToken(opts.userAgent) });
  const linkUrls: string[] = [];
  let feedUrls: string[] | undefined;
  // Links of an unchanged page were already followed when it was new.
  const change = changeOf(page);
  if (change !== 'UNCHANGED' && !ex.metaRobots.nofollow) {
    const feeds = ex.feeds.length > 0 ? new Set(ex.feeds) : null;
    for (const l of ex.links) {
      if (l.nofollow) continue;
      if (feeds?.has(l.url)) (feedUrls ??= []).push(l.url);
      else linkUrls.push(l.url);
    }
    if (ex.metaRefresh) linkUrls.push(ex.metaRefresh);
  }
  const canonical = ex.canonical ? normalizeUrl(ex.canonical) : null;
  // A function encodes the text where the caller wants it (the parse worker: its shared ring),
  // or says null (no room there): then the bytes get a buffer of their own.
  const encode = opts.textAsUtf8;
  const utf8 = encode ? (encode === true ? null : encode(ex.text)) ?? ownUtf8(ex.text) : undefined;
  const parsed: ParsedPageMsg = {
    url: page.url,
    canonical_url: canonical?.ok ? canonical.url : null,
    host: page.host,
    fetched_at: page.fetched_at,
    change,
    sha256: page.sha256,
    simhash64: change === 'UNCHANGED' ? null : textSimhash(utf8 ?? ex.text),
    simhash_version: SIMHASH_VERSION,
    language: detectLanguage(ex.text, ex.lang),
    title: ex.title,
    text_length: ex.text.length,
    outlinks: ex.links.length,
    noindex: ex.metaRobots.noindex,
    warc: page.warc,
    text: null,
    near_duplicate_of: null,
    // The page's own importance, from its lease; handoff sends it to the indexer.
    priority: page.priority ?? null,
  };
  return { parsed, linkUrls, ...(feedUrls ? { feedUrls } : {}), text: utf8 ?? ex.text };
}

/**
 * One crawl.links record per host the page links to (lib/link-groups). The links are http(s)
 * URLs as WHATWG URL serialises them (extract resolves every one), so their host is read off
 * the string (hostOf) rather than by parsing each URL again on the stage's thread.
 */
function linkRecords(links: readonly LinkMsg[]): OutRecord[] {
  return groupLinks(links, (url) => hostOf(url) || null).map(({ host, link }) => ({ topic: 'links', key: host, host, value: link }));
}

/** Pure, one page alone (no duplicate tables, no text record): links and crawl.parsed. */
export function parsePage(page: FetchedPageMsg, opts: Pick<ParseOptions, 'userAgent'>): OutRecord[] {
  const a = analyzePage(page, opts);
  return [...linkRecords(followed(page, a, null)), { topic: 'parsed', key: page.host, host: page.host, value: a.parsed }];
}

/** `f` on its first call only. */
function onceOnly(f: () => void): () => void {
  let done = false;
  return () => {
    if (done) return;
    done = true;
    f();
  };
}

/** Will handoff turn this into an event? Only then is the text worth storing. */
export function handedOff(p: ParsedPageMsg): boolean {
  return p.change !== 'UNCHANGED' && !p.noindex && !p.near_duplicate_of;
}

export interface ParseStage extends Stage {
  readonly dedup: ParseDedup;
}

/** How often parse's stores are made durable and their crawl.content offsets recorded. */
export const CHECKPOINT_MS = 5_000;

export function parseStage(opts: ParseOptions): ParseStage {
  const partitions = opts.partitions ?? 1;
  const stateDir = opts.stateDir;
  const dedup = new ParseDedup(new DedupIndex({ partitions, tableFor: stateDir ? undefined : () => new MemoryDedupTable() }));
  let source: ChangelogSource | null = null;
  let log: StageContext['log'] | null = null;
  const stores = (tables: ReadonlyMap<number, unknown>): Map<number, DedupStore> => tables as Map<number, DedupStore>;

  /** Record each store's crawl.content offset (read before the store is made durable). */
  async function checkpointAll(owned: ReadonlyMap<number, DedupStore>): Promise<void> {
    if (!source || !stateDir || owned.size === 0) return;
    const ends = await source.ends([...owned.keys()]);
    for (const [p, store] of owned) await checkpointDedup(dedupStoreDir(stateDir, p), store, ends.get(p) ?? 0);
  }
  /** Checkpoint and close stores no longer owned (a handover on this machine then replays only the tail). */
  async function letGo(gone: Map<number, DedupStore>): Promise<void> {
    await checkpointAll(gone).catch((err: unknown) => log?.warn({ err }, 'duplicate store checkpoint not written'));
    for (const s of gone.values()) await s.close();
  }

  function handle(page: FetchedPageMsg, ctx: StageContext): HandleResult | Promise<HandleResult> {
    if (opts.analyzer) return opts.analyzer.analyze(page).then((a) => decide(page, a, ctx));
    return decide(page, analyzePage(page, opts), ctx);
  }

  /**
   * Everything that depends on other pages (duplicate tables) and the records to emit. The page's
   * text goes back to its ring (releaseText) when this returns, or, for a text it stores, once
   * that record is built: the ring is read in place, not copied out.
   */
  function decide(page: FetchedPageMsg, a: PageAnalysis, ctx: StageContext): HandleResult {
    let release = a.releaseText;
    try {
      const d = dedup.decide(a.parsed, a.linkUrls.length, ctx.now());
      const parsed: ParsedPageMsg = { ...a.parsed, change: d.change, fetched_at: d.fetchedAt, near_duplicate_of: d.nearDuplicateOf };
      if (d.kind) ctx.log.debug({ url: page.url, duplicate: d.kind, of: d.nearDuplicateOf }, 'duplicate: not handed off');
      if (d.trap) ctx.log.info({ host: page.host, field: d.trap.field, url: page.url }, 'trap rule from near-duplicates');
      const early = [
        ...linkRecords(followed(page, a, d.linkPriority)),
        ...(d.content ? [contentRecord(d.content)] : []),
        ...(d.trap ? [trapRecord(d.trap)] : []),
      ];
      const parsedRecord = (p: ParsedPageMsg): OutRecord => ({ topic: 'parsed', key: page.host, host: page.host, value: p });
      if (!opts.archiveText || !page.record_id || !handedOff(parsed)) return [...early, parsedRecord(parsed)];
      const entry: WarcEntry = { type: 'conversion', targetUri: page.url, text: a.text, refersTo: page.record_id, date: new Date(page.fetched_at) };
      // Given back once built (onBuilt), or once the store settles if it never is built.
      const giveBack = release && onceOnly(release);
      const stored = opts.archiveText(entry, giveBack);
      if (giveBack) stored.then(giveBack, giveBack);
      release = undefined;
      // Throwing (the text file not stored) fails the record, which the runtime retries.
      const pending = stored.then((ptr) => [parsedRecord({ ...parsed, text: { uri: ptr.uri, offset: ptr.offset, length: ptr.length } })]);
      return { early, pending };
    } finally {
      release?.();
    }
  }

  return {
    id: 'parse',
    inputs: ['fetched'],
    outputs: ['links', 'parsed', 'content', 'hostPolicy'],
    dedup,
    // On disk: crawl.content is the stores' changelog (tail or rebuild); in the heap: its rows replayed.
    ...(stateDir
      ? {
          changelog: 'content' as const,
          async restoreChangelog(parts: readonly number[], changelog: ChangelogSource, ctx: StageContext) {
            source = changelog;
            log = ctx.log;
            await restoreDedupStores(parts, changelog, dedup.index, { stateDir, log: ctx.log, lockWaitMs: opts.lockWaitMs ?? 30_000, kv: dedupStoreBudget(partitions) });
          },
          tickMs: opts.checkpointMs ?? CHECKPOINT_MS,
          async tick() {
            await checkpointAll(stores(dedup.index.owned())).catch((err: unknown) => log?.warn({ err }, 'duplicate store checkpoint not written'));
            return [];
          },
        }
      : { restoreFrom: ['content' as const] }),
    restore: (rec) => dedup.restore(rec.key, rec.value as ContentMsg | null),
    assigned(parts) {
      if (!stateDir && !opts.partitions) return;
      const owned = new Set(parts);
      const gone = dedup.index.retain((p) => owned.has(p));
      if (stateDir && gone.size) void letGo(stores(gone)).catch((err: unknown) => log?.error({ err }, 'closing a lost partition failed'));
    },
    concurrency: opts.analyzer ? ANALYZER_CONCURRENCY : undefined,
    handle: (rec, ctx) => handle(rec.value as FetchedPageMsg, ctx),
    close: async () => {
      await opts.flushText?.();
      await opts.analyzer?.close();
      if (stateDir) await letGo(stores(dedup.index.retain(() => false)));
    },
  };
}
