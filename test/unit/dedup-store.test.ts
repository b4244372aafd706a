/**
 * parse's duplicate store on disk (processors/dedup-store.ts): the same decisions as the index
 * in the heap it replaced (test/support/dedup-heap-reference.ts), a restart that replays only crawl.content's tail after the checkpoint, and a
 * store deleted and rebuilt from the whole changelog that decides as before.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { KvStore } from '../../connectors/kv-store';
import { avroType } from '../../lib/avro';
import { DedupIndex, metaKey } from '../../lib/dedup';
import type { ContentMsg, ParsedPageMsg } from '../../lib/messages';
import { SIMHASH_VERSION as V } from '../../lib/simhash';
import { checkpointDedup, DedupStore, dedupStoreDir, restoreDedupStores } from '../../processors/dedup-store';
import { ParseDedup, type DedupDecision } from '../../processors/parse-dedup';
import type { ChangelogSource } from '../../runtime/changelog';
import { topics } from '../../topologies/crawl';
import { HeapDedupIndex } from '../support/dedup-heap-reference';

const log = pino({ level: 'silent' });
const contentType = avroType(topics.content.valueSchema);

/** A journal of crawl.content (one partition) that remembers where each read started. */
class Journal implements ChangelogSource {
  readonly recs: Array<{ offset: number; key: string; value: Buffer | null }> = [];
  readonly reads: number[] = [];
  append(key: string, value: ContentMsg | null): void {
    this.recs.push({ offset: this.recs.length, key, value: value === null ? null : contentType.toBuffer(value) });
  }
  async ends(ps: readonly number[]): Promise<Map<number, number>> {
    return new Map(ps.map((p) => [p, this.recs.length]));
  }
  async read(from: ReadonlyMap<number, number>, to: ReadonlyMap<number, number>, onBatch: (p: number, recs: Journal['recs']) => Promise<void>): Promise<void> {
    const a = from.get(0) ?? 0;
    this.reads.push(a);
    // Batches of 50, as the runtimes hand them over in parts.
    for (let i = a; i < (to.get(0) ?? 0); i += 50) await onBatch(0, this.recs.slice(i, Math.min(i + 50, to.get(0) ?? 0)));
  }
}

/** A deterministic mix: few hosts, bodies and fingerprints that collide, refetches, changes, noindex, version 1 rows. */
function pages(n: number, seed: number): ParsedPageMsg[] {
  let x = seed;
  const rnd = (k: number): number => {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    return (x >>> 8) % k;
  };
  const base = ['0f0f0f0f12345678', 'a5a5a5a5deadbeef', '0000ffff0000ffff', '123456789abcdef0'];
  const out: ParsedPageMsg[] = [];
  for (let i = 0; i < n; i++) {
    const host = `h${rnd(3)}.test`;
    const url = `http://${host}/p/${rnd(40)}`;
    // A fingerprint 0-5 bits from one of four bases (flipped in random places).
    let fp = BigInt(`0x${base[rnd(4)]}`);
    for (let b = rnd(6); b > 0; b--) fp ^= 1n << BigInt(rnd(64));
    const change = (['NEW', 'NEW', 'CHANGED', 'UNCHANGED'] as const)[rnd(4)];
    out.push({
      url, canonical_url: null, host, fetched_at: 1000 + i, change, sha256: `sha${rnd(25)}`,
      simhash64: rnd(10) === 0 ? null : fp.toString(16).padStart(16, '0'), simhash_version: rnd(8) === 0 ? 1 : V,
      language: null, title: null, text_length: 1, outlinks: 0, noindex: rnd(20) === 0, warc: { uri: 'u', offset: i, length: 1 }, text: null, near_duplicate_of: null,
    });
  }
  return out;
}

/** Decide every page, writing each content row to the journal as the stage's emits would be. */
function decideAll(d: ParseDedup, ps: readonly ParsedPageMsg[], journal?: Journal): DedupDecision[] {
  return ps.map((p, i) => {
    const r = d.decide(p, i % 5, 1);
    if (r.content) journal?.append(r.content.url, r.content);
    return r;
  });
}

/** The reference: parse's decisions over the index as it was in the heap (before the store). */
const heapDedup = (index = new HeapDedupIndex()): ParseDedup => new ParseDedup(index as unknown as DedupIndex);

const dirs: string[] = [];
const stores: DedupStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close().catch(() => undefined);
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function restored(stateDir: string, journal: Journal): Promise<{ dedup: ParseDedup; rebuilt: boolean; records: number }> {
  const index = new DedupIndex();
  const [r] = await restoreDedupStores([0], journal, index, { stateDir, log });
  stores.push(r.store);
  return { dedup: new ParseDedup(index), rebuilt: r.rebuilt, records: r.records };
}

/** A fresh state folder whose partition-0 store decided `ps` (its rows in the journal), and the heap reference that decided the same. */
async function decided(ps: readonly ParsedPageMsg[]): Promise<{ dir: string; journal: Journal; heap: ParseDedup; dedup: ParseDedup }> {
  const dir = mkdtempSync(join(tmpdir(), 'kcrawl-dedup-'));
  dirs.push(dir);
  const journal = new Journal();
  const heap = heapDedup();
  const { dedup } = await restored(dir, journal);
  decideAll(dedup, ps, journal);
  decideAll(heap, ps);
  return { dir, journal, heap, dedup };
}

/** Checkpoint partition 0's store at the journal's end, then close it. */
async function checkpointAndClose(dir: string, journal: Journal): Promise<void> {
  await checkpointDedup(dedupStoreDir(dir, 0), stores[0], journal.recs.length);
  await stores[0].close();
  stores.length = 0;
}

describe('duplicate store on disk', () => {
  it('decides every page as the index in the heap (main\'s) did', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kcrawl-dedup-'));
    dirs.push(dir);
    const { dedup } = await restored(dir, new Journal());
    const heap = heapDedup();
    const ps = pages(3000, 7);
    const onDisk = decideAll(dedup, ps);
    const inHeap = decideAll(heap, ps);
    expect(onDisk).toEqual(inHeap);
    // The mix exercises every kind (the comparison above can fail).
    const kinds = new Set(onDisk.map((r) => r.kind));
    expect([...kinds].sort()).toEqual(['exact', 'near', 'self', null].sort());
    expect(onDisk.some((r) => r.change === 'CHANGED' && ps[onDisk.indexOf(r)].change === 'NEW')).toBe(true);
    expect(dedup.index.size).toBe(heap.index.size);
  });

  it('a restart with its store replays only the tail after the checkpoint, then decides as before', async () => {
    const [a, b, probe] = [pages(1500, 11), pages(500, 12), pages(800, 13)];
    const { dir, journal, heap, dedup: first } = await decided(a);
    const store = stores[0];
    await checkpointDedup(dedupStoreDir(dir, 0), store, journal.recs.length);
    const at = journal.recs.length;
    // Decided after the checkpoint, then some rows tombstoned in the journal only (the store never saw them).
    decideAll(first, b, journal);
    decideAll(heap, b);
    for (const p of a.slice(0, 60)) {
      journal.append(p.url, null);
      heap.restore(p.url, null);
    }
    await store.close(); // no checkpoint: as after a crash
    stores.length = 0;

    const again = await restored(dir, journal);
    expect(again.rebuilt).toBe(false);
    expect(journal.reads.at(-1)).toBe(at);
    expect(again.records).toBe(journal.recs.length - at);
    expect(again.dedup.index.size).toBe(heap.index.size);
    // (A restarted stage's trap runs start empty: so do the reference's.)
    expect(decideAll(again.dedup, probe)).toEqual(decideAll(heapDedup(heap.index as unknown as HeapDedupIndex), probe));
  });

  it('a deleted store is rebuilt from the whole changelog and decides as before', async () => {
    const [a, probe] = [pages(2000, 21), pages(800, 22)];
    const { dir, journal, heap } = await decided(a);
    for (const p of a.slice(0, 40)) {
      journal.append(p.url, null);
      heap.restore(p.url, null);
    }
    await checkpointAndClose(dir, journal);
    rmSync(dedupStoreDir(dir, 0), { recursive: true });
    expect(existsSync(`${dedupStoreDir(dir, 0)}.checkpoint.json`)).toBe(true); // it names the deleted store

    const rebuilt = await restored(dir, journal);
    expect(rebuilt.rebuilt).toBe(true);
    expect(journal.reads.at(-1)).toBe(0);
    expect(rebuilt.records).toBe(journal.recs.length);
    expect(rebuilt.dedup.index.size).toBe(heap.index.size);
    expect(decideAll(rebuilt.dedup, probe)).toEqual(decideAll(heapDedup(heap.index as unknown as HeapDedupIndex), probe));
  });

  it('a store written in another layout (1: lists with hand-written LEB128 lengths) is rebuilt, not read', async () => {
    const [a, probe] = [pages(600, 31), pages(300, 32)];
    const { dir, journal, heap } = await decided(a);
    await checkpointAndClose(dir, journal);
    // What a layout-1 release left: its marker, and a list in its own encoding.
    const kv = await KvStore.open(dedupStoreDir(dir, 0));
    const b = kv.batch();
    b.put(metaKey('layout'), Buffer.from('1'));
    b.put(Buffer.from('s\u0000x', 'latin1'), Buffer.from([5, 0x68, 0x74, 0x74, 0x70, 0x3a]));
    await kv.write(b, true);
    await kv.close();

    const again = await restored(dir, journal);
    expect(again.rebuilt).toBe(true);
    expect(stores[0].layout).toBe(2);
    expect(again.records).toBe(journal.recs.length);
    expect(decideAll(again.dedup, probe)).toEqual(decideAll(heapDedup(heap.index as unknown as HeapDedupIndex), probe));
  });
});
