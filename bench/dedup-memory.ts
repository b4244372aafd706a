/**
 * parse's duplicate index: heap bytes a page, disk bytes a page and decide() time a page, for
 * the index in the heap it was (main's lib/dedup.ts: test/support/dedup-heap-reference.ts) and
 * the store on disk it is (processors/dedup-store.ts). N synthetic pages go through
 * ParseDedup.decide as parse decides them: URLs of 60-120 characters over N/20 hosts (Zipf-like
 * sizes: host i gets weight 1/(1+i%1000)), SHA-256 and SimHash as pseudo-random hex; 8% of pages
 * are an exact copy of one of their host's first 4 pages, 4% a near copy (1 bit flipped), 5% a
 * refetch of one (CHANGED, half with the same bytes). Pages are decided 256 at a time, with a turn of
 * the event loop between (the store writes then), as the stage's decisions come.
 *
 *   npx tsc -p tsconfig.json && node --expose-gc --max-old-space-size=6144 dist/bench/dedup-memory.js heap|disk|rebuild [pages]
 *
 * `rebuild`: as `disk`, keeping every content record decided (Avro, as crawl.content holds
 * them), then a second store rebuilt from them (processors/dedup-store.ts restore, no
 * checkpoint): records a second, and whether it holds as many rows.
 *
 * One JSON line: pages, heap bytes a page (live heap after two full GCs, less the heap before),
 * external + array-buffer bytes a page, disk bytes a page (the store's files, after close),
 * decide() µs a page (wall and process CPU, LevelDB's threads included), RSS, and how many
 * decisions were exact / near / self (the same for both: the same input and the same decisions).
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { DedupIndex } from '../lib/dedup';
import type { ParsedPageMsg } from '../lib/messages';
import { SIMHASH_VERSION } from '../lib/simhash';
import { dedupStoreBudget, restoreDedupStores, type DedupStore } from '../processors/dedup-store';
import { ParseDedup } from '../processors/parse-dedup';
import type { ChangelogRecord, ChangelogSource } from '../runtime/changelog';
import { avroReader, avroType } from '../lib/avro';
import type { ContentMsg } from '../lib/messages';
import { HeapDedupIndex } from '../test/support/dedup-heap-reference';
import { rng } from '../test/support/rng';

const MODE = process.argv[2] ?? 'disk';
const contentType = avroType('crawl.Content.v1');
const PAGES = Number(process.argv[3] ?? 1_000_000);
if (!['heap', 'disk', 'rebuild'].includes(MODE)) throw new Error(`mode: heap, disk or rebuild, not ${MODE}`);

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (!g) throw new Error('run with node --expose-gc');
  g();
  g();
}

const WORDS = ['news', 'article', 'category', 'products', 'blog', 'archive', 'item', 'view', 'tag', 'docs', 'forum', 'wiki', 'shop', 'event', 'story', 'guide'];
const rand = rng(36);
const pick = <T>(xs: ArrayLike<T>): T => xs[Math.floor(rand() * xs.length)];
const sha = (tag: string, k: number): string => createHash('sha256').update(`${tag}${k}`).digest('hex');

const HOSTS = Math.max(1, Math.floor(PAGES / 20));
const hostName = (i: number): string => `www.${WORDS[i % WORDS.length]}-${i}-site.com`;
// Zipf-like: a cumulative table over host weights 1/(1+i%1000).
const cum = new Float64Array(HOSTS);
{
  let acc = 0;
  for (let i = 0; i < HOSTS; i++) cum[i] = acc += 1 / (1 + (i % 1000));
}
function hostIndex(): number {
  const x = rand() * cum[HOSTS - 1];
  let lo = 0;
  let hi = HOSTS - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (cum[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Page k's own URL on host h: 60-120 characters. */
function urlOf(k: number, h: number): string {
  const base = `https://${hostName(h)}/${WORDS[k % 16]}/${WORDS[(k >> 4) % 16]}-${k}`;
  const tail = sha('u', k);
  const len = 60 + (parseInt(tail.slice(0, 4), 16) % 61);
  return base.length >= len ? base : `${base}?q=${tail.slice(4, 4 + len - base.length - 3)}`;
}

// The input's state, allocated before the heap is first measured: each page's sources (the page
// whose URL, body and fingerprint it has) and up to 4 pages a host to copy from.
const urlSrc = new Int32Array(PAGES);
const shaSrc = new Int32Array(PAGES);
const simSrc = new Int32Array(PAGES);
const simFlip = new Int8Array(PAGES).fill(-1);
const hostOfPage = new Int32Array(PAGES);
const copyFrom = new Int32Array(HOSTS * 4).fill(-1);
const copyCount = new Uint8Array(HOSTS);

function page(i: number): ParsedPageMsg {
  const h = hostIndex();
  hostOfPage[i] = h;
  urlSrc[i] = shaSrc[i] = simSrc[i] = i;
  let change: ParsedPageMsg['change'] = 'NEW';
  const n = copyCount[h];
  const r = rand();
  if (n > 0) {
    const j = copyFrom[h * 4 + Math.floor(rand() * n)];
    if (r < 0.08) shaSrc[i] = shaSrc[j]; // an exact copy of an earlier page
    else if (r < 0.12) {
      simSrc[i] = simSrc[j]; // a near copy: one bit flipped
      simFlip[i] = Math.floor(rand() * 64);
    } else if (r < 0.17) {
      urlSrc[i] = urlSrc[j]; // a refetch of an earlier URL, half of them with the same bytes
      if (rand() < 0.5) {
        shaSrc[i] = shaSrc[j];
        simSrc[i] = simSrc[j];
        simFlip[i] = simFlip[j];
      }
      change = 'CHANGED';
    }
  }
  if (n < 4) copyFrom[h * 4 + copyCount[h]++] = i;
  let sim = sha('s', simSrc[i]).slice(0, 16);
  if (simFlip[i] >= 0) sim = (BigInt(`0x${sim}`) ^ (1n << BigInt(simFlip[i]))).toString(16).padStart(16, '0');
  return {
    url: urlOf(urlSrc[i], h), canonical_url: null, host: hostName(h), fetched_at: 1_700_000_000_000 + i, change, sha256: sha('b', shaSrc[i]), simhash64: sim, simhash_version: SIMHASH_VERSION,
    language: null, title: null, text_length: 1, outlinks: 0, noindex: false, warc: { uri: 'u', offset: i, length: 1 }, text: null, near_duplicate_of: null,
  };
}

function dirBytes(dir: string): number {
  let n = 0;
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    const st = statSync(join(dir, f));
    if (st.isFile()) n += st.size;
  }
  return n;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'kcrawl-dedup-bench-'));
  let store: DedupStore | null = null;
  let dedup: ParseDedup;
  if (MODE !== 'heap') {
    const index = new DedupIndex();
    const none = { ends: async (ps: readonly number[]) => new Map(ps.map((p) => [p, 0])), read: async () => undefined };
    // One partition's store, sized as crawl run's are for its 8 partitions.
    [{ store }] = await restoreDedupStores([0], none, index, { stateDir: dir, log: pino({ level: 'silent' }), kv: dedupStoreBudget(8) });
    dedup = new ParseDedup(index);
  } else {
    dedup = new ParseDedup(new HeapDedupIndex() as unknown as DedupIndex);
  }
  gc();
  const before = process.memoryUsage();
  const kinds = { exact: 0, near: 0, self: 0 };
  const journal: ChangelogRecord[] | null = MODE === 'rebuild' ? [] : null;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let decideMs = 0;
  for (let i = 0; i < PAGES; ) {
    const end = Math.min(PAGES, i + 256);
    const batch: ParsedPageMsg[] = [];
    for (let k = i; k < end; k++) batch.push(page(k));
    const d0 = performance.now();
    for (const p of batch) {
      const d = dedup.decide(p, 10, 0);
      if (d.kind) kinds[d.kind]++;
      if (journal && d.content) journal.push({ offset: journal.length, key: d.content.url, value: contentType.toBuffer(d.content) });
    }
    decideMs += performance.now() - d0;
    i = end;
    await new Promise((r) => setImmediate(r));
    if (store && store.unwritten > 100_000) await store.flush();
  }
  if (store) await store.flush();
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  gc();
  const after = process.memoryUsage();
  const rss = after.rss;
  // Read after the heap is measured: the index stays alive through it.
  const urls = dedup.index.size;
  let disk = 0;
  let heapRestore: { seconds: number; recordsPerSec: number; rows: number } | null = null;
  let rebuild: { records: number; seconds: number; recordsPerSec: number; rows: number; cpuUsPerRecord: number } | null = null;
  if (store) {
    await store.close();
    disk = dirBytes(dir);
  }
  if (journal) {
    const source: ChangelogSource = {
      ends: async (ps) => new Map(ps.map((p) => [p, journal.length])),
      read: async (from, to, onBatch) => {
        for (let i = from.get(0) ?? 0; i < (to.get(0) ?? 0); i += 4096) await onBatch(0, journal.slice(i, Math.min(i + 4096, to.get(0) ?? 0)));
      },
    };
    const dir2 = mkdtempSync(join(tmpdir(), 'kcrawl-dedup-bench-'));
    const c0 = process.cpuUsage();
    const r0 = performance.now();
    const [r] = await restoreDedupStores([0], source, new DedupIndex(), { stateDir: dir2, log: pino({ level: 'silent' }), kv: dedupStoreBudget(8) });
    const seconds = (performance.now() - r0) / 1000;
    const c = process.cpuUsage(c0);
    rebuild = { records: r.records, seconds: +seconds.toFixed(1), recordsPerSec: Math.round(r.records / seconds), rows: r.store.rows, cpuUsPerRecord: +((c.user + c.system) / r.records).toFixed(1) };
    await r.store.close();
    rmSync(dir2, { recursive: true, force: true });
    // main's restore, on every start: every row replayed into the heap index.
    const read = avroReader('crawl.Content.v1');
    const h0 = performance.now();
    const heap = new HeapDedupIndex();
    for (const rec of journal) heap.apply(rec.key, rec.value === null ? null : (read(rec.value) as ContentMsg));
    const hs = (performance.now() - h0) / 1000;
    heapRestore = { seconds: +hs.toFixed(1), recordsPerSec: Math.round(journal.length / hs), rows: heap.size };
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify({
    mode: MODE, pages: PAGES, hosts: HOSTS, urls,
    heapBytesPerPage: Math.round((after.heapUsed - before.heapUsed) / PAGES),
    externalBytesPerPage: Math.round((after.external + after.arrayBuffers - before.external - before.arrayBuffers) / PAGES),
    diskBytesPerPage: Math.round(disk / PAGES),
    decideUsPerPage: +((decideMs * 1000) / PAGES).toFixed(2),
    wallUsPerPage: +((wallMs * 1000) / PAGES).toFixed(2),
    cpuUsPerPage: +((cpu.user + cpu.system) / PAGES).toFixed(2),
    rssMiB: Math.round(rss / 2 ** 20),
    kinds,
    ...(rebuild ? { rebuild, heapRestore } : {}),
  }));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
