/**
 * runtime/log-segments.ts fileFrames: a segment file read a window at a time gives exactly the
 * frames a whole-file read gives, across window boundaries, with a frame larger than the window,
 * with explicit offsets (.cseg), read into one scratch window, and stops at a torn tail. The
 * cleaner on its worker thread (runtime/log-cleaner.ts) keeps what the same pass on the calling
 * thread keeps, and keeps exactly the newest record of each key it mapped (tombstones until they
 * expire) over a cleaned file and dirty segments with keys repeated within and across them.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cleanSegmentsOffThread } from '../../runtime/log-cleaner';
import { cleanSegments, fileFrames, frames, type RawFrame, type SegmentFile } from '../../runtime/log-segments';

/** A plain (.seg) frame: [u32 len][u32 keyLen][key][f64 ts][value]. */
function plainFrame(key: string, ts: number, value: Buffer | null): Buffer {
  const k = Buffer.from(key, 'utf8');
  const v = value ?? Buffer.alloc(0);
  const b = Buffer.alloc(4 + 4 + k.length + 8 + v.length);
  b.writeUInt32LE(b.length - 4, 0);
  b.writeUInt32LE(k.length, 4);
  k.copy(b, 8);
  b.writeDoubleLE(ts, 8 + k.length);
  v.copy(b, 16 + k.length);
  return b;
}

/** An explicit (.cseg) frame: [u32 len][f64 offset][u32 keyLen][key][f64 ts][value]. */
function explicitFrame(offset: number, key: string, ts: number, value: Buffer): Buffer {
  const k = Buffer.from(key, 'utf8');
  const b = Buffer.alloc(4 + 8 + 4 + k.length + 8 + value.length);
  b.writeUInt32LE(b.length - 4, 0);
  b.writeDoubleLE(offset, 4);
  b.writeUInt32LE(k.length, 12);
  k.copy(b, 16);
  b.writeDoubleLE(ts, 16 + k.length);
  value.copy(b, 24 + k.length);
  return b;
}

const plain = (f: RawFrame): unknown => ({ ...f, value: f.value?.toString('hex') ?? null });

describe('fileFrames', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'segframes-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a plain segment in small windows exactly as a whole read, a frame larger than the window included', () => {
    const parts: Buffer[] = [];
    for (let i = 0; i < 200; i++) parts.push(plainFrame(`k${i % 37}`, 1000 + i, i % 11 === 0 ? null : Buffer.alloc(i % 5 === 0 ? 300 : 7 + (i % 13), i)));
    const bytes = Buffer.concat(parts);
    const path = join(dir, 'a.seg');
    writeFileSync(path, bytes);
    const whole = [...frames(bytes, { baseOffset: 500, explicit: false })].map(plain);
    expect(whole).toHaveLength(200);
    for (const window of [64, 100, 257, 4096, 1 << 20]) {
      const got = [...fileFrames(path, { baseOffset: 500, explicit: false }, bytes.length, window)];
      expect(got.map(plain)).toEqual(whole);
    }
    // Values read earlier stay intact after later windows are read.
    const all = [...fileFrames(path, { baseOffset: 500, explicit: false }, undefined, 64)];
    expect(all.map(plain)).toEqual(whole);
    // Into one scratch window (the cleaner's reads): the same frames, each read as it comes.
    for (const size of [64, 257, 1 << 20]) {
      const scratch = Buffer.alloc(size);
      const got: unknown[] = [];
      for (const f of fileFrames(path, { baseOffset: 500, explicit: false }, bytes.length, 0, scratch)) got.push(plain(f));
      expect(got).toEqual(whole);
    }
  });

  it('keeps explicit offsets, and stops at a torn tail or at the given length', () => {
    const parts = [explicitFrame(10, 'a', 1, Buffer.from('x')), explicitFrame(14, 'b', 2, Buffer.alloc(90, 1)), explicitFrame(15, 'c', 3, Buffer.from('zz'))];
    const bytes = Buffer.concat(parts);
    const path = join(dir, 'b.cseg');
    writeFileSync(path, Buffer.concat([bytes, parts[0].subarray(0, 9)]));
    const got = [...fileFrames(path, { baseOffset: 10, explicit: true }, undefined, 40)];
    expect(got.map((f) => [f.offset, f.key, f.timestamp])).toEqual([[10, 'a', 1], [14, 'b', 2], [15, 'c', 3]]);
    expect(got[1].value).toEqual(Buffer.alloc(90, 1));
    const cut = [...fileFrames(path, { baseOffset: 10, explicit: true }, parts[0].length + parts[1].length, 40)];
    expect(cut.map((f) => f.key)).toEqual(['a', 'b']);
  });
});

describe('cleanSegmentsOffThread (runtime/log-cleaner.ts)', () => {
  // The worker runs the compiled file (`npm test` builds first: pretest).
  const workerFile = join(__dirname, '..', '..', 'dist', 'runtime', 'log-cleaner.js');

  function segments(dir: string): SegmentFile[] {
    // Two closed plain segments: keys a..e, then newer versions of b and d and a tombstone of e.
    const first = Buffer.concat(['a', 'b', 'c', 'd', 'e'].map((k, i) => plainFrame(k, 1000 + i, Buffer.from(`${k}1`))));
    const second = Buffer.concat([plainFrame('b', 2000, Buffer.from('b2')), plainFrame('d', 2001, Buffer.from('d2')), plainFrame('e', 2002, null)]);
    writeFileSync(join(dir, `${'0'.padStart(20, '0')}.seg`), first);
    writeFileSync(join(dir, `${'5'.padStart(20, '0')}.seg`), second);
    return [
      { baseOffset: 0, endOffset: 5, path: join(dir, `${'0'.padStart(20, '0')}.seg`), explicit: false, bytes: first.length },
      { baseOffset: 5, endOffset: 8, path: join(dir, `${'5'.padStart(20, '0')}.seg`), explicit: false, bytes: second.length },
    ];
  }

  it('cleans on a worker thread exactly as on the calling thread, and hands back the caller\'s own segment objects', async () => {
    expect(existsSync(workerFile)).toBe(true); // built by `npx tsc -p tsconfig.json` (npm test's pretest)
    const o = { now: 3000, tombstoneRetentionMs: 24 * 3600_000, mapCapacity: 100 };
    const results = [];
    for (const file of [workerFile, join(tmpdir(), 'no-such-cleaner.js')]) {
      const dir = mkdtempSync(join(tmpdir(), 'kcrawl-cleaner-'));
      try {
        const closed = segments(dir);
        const r = await cleanSegmentsOffThread(dir, closed, o, file);
        expect(r).not.toBeNull();
        expect(r!.replaced).toHaveLength(2);
        expect(r!.replaced[0]).toBe(closed[0]);
        expect(r!.replaced[1]).toBe(closed[1]);
        const kept = [...fileFrames(r!.cleaned.path, r!.cleaned)].map((f) => [f.offset, f.key, f.value?.toString() ?? null]);
        results.push({ kept, dropped: r!.dropped, range: [r!.cleaned.baseOffset, r!.cleaned.endOffset] });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
    expect(results[0]).toEqual({ kept: [[0, 'a', 'a1'], [2, 'c', 'c1'], [5, 'b', 'b2'], [6, 'd', 'd2'], [7, 'e', null]], dropped: 3, range: [0, 8] });
    expect(results[1]).toEqual(results[0]);
  });

  it('fails with the worker\'s error when the pass fails', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kcrawl-cleaner-'));
    try {
      const missing: SegmentFile[] = [{ baseOffset: 0, endOffset: 1, path: join(dir, 'gone.seg'), explicit: false, bytes: 10 }];
      await expect(cleanSegmentsOffThread(dir, missing, { now: 0, tombstoneRetentionMs: 0, mapCapacity: 10 }, workerFile)).rejects.toThrow(/journal cleaner: .*ENOENT/s);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('cleanSegments', () => {
  /** Deterministic pseudo-random numbers (failures replay). */
  function rng(seed: number): () => number {
    let x = seed;
    return () => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  }

  interface Rec {
    offset: number;
    key: string;
    ts: number;
    value: string | null;
  }

  it('keeps the newest record of every mapped key, whether it was in a cleaned file or dirty, and drops expired tombstones', async () => {
    const now = 10_000_000;
    const retention = 1000;
    for (const [seed, mapCapacity] of [[1, 10_000], [2, 10_000], [3, 150]] as const) {
      const dir = mkdtempSync(join(tmpdir(), 'kcrawl-clean-'));
      try {
        const next = rng(seed);
        const keys = Array.from({ length: 120 }, (_, i) => (i % 7 === 0 ? `https://é.example/${i}/😀` : `https://h${i % 13}.example/p/${i}`));
        const recs: Rec[] = [];
        const add = (): Rec => {
          const r = next();
          const tomb = r % 9 === 0;
          // Old tombstones (expired) and fresh ones.
          const rec = { offset: recs.length, key: keys[next() % keys.length], ts: tomb && r % 2 === 0 ? now - 5000 : now - (r % 500), value: tomb ? null : `v${recs.length}` };
          recs.push(rec);
          return rec;
        };
        // A cleaned file of offsets [0, 100) (every key once, as a pass leaves it), then three dirty segments.
        const cleanedRecs = new Map<string, Rec>();
        for (let i = 0; i < 100; i++) {
          const rec = add();
          cleanedRecs.set(rec.key, rec);
        }
        const closed: SegmentFile[] = [];
        const kept0 = [...cleanedRecs.values()].sort((a, b) => a.offset - b.offset);
        const cpath = join(dir, `${'0'.padStart(20, '0')}-${'100'.padStart(20, '0')}.cseg`);
        const cbytes = Buffer.concat(kept0.map((r) => explicitFrame(r.offset, r.key, r.ts, r.value === null ? Buffer.alloc(0) : Buffer.from(r.value))));
        writeFileSync(cpath, cbytes);
        closed.push({ baseOffset: 0, endOffset: 100, path: cpath, explicit: true, bytes: cbytes.length });
        for (const n of [80, 120, 90]) {
          const base = recs.length;
          const segRecs = Array.from({ length: n }, add);
          const path = join(dir, `${String(base).padStart(20, '0')}.seg`);
          const bytes = Buffer.concat(segRecs.map((r) => plainFrame(r.key, r.ts, r.value === null ? null : Buffer.from(r.value))));
          writeFileSync(path, bytes);
          closed.push({ baseOffset: base, endOffset: base + n, path, explicit: false, bytes: bytes.length });
        }
        const r = await cleanSegments(dir, closed, { now, tombstoneRetentionMs: retention, mapCapacity });
        expect(r).not.toBeNull();
        const mappedEnd = r!.cleaned.endOffset;
        // The small map holds only the first dirty segment (whole segments, at least one).
        expect(mappedEnd).toBe(mapCapacity === 150 ? 180 : 390);
        // The reference: the newest offset of each key among the mapped dirty records.
        const newest = new Map<string, number>();
        for (const rec of recs) if (rec.offset >= 100 && rec.offset < mappedEnd) newest.set(rec.key, rec.offset);
        const inRange = [...kept0, ...recs.filter((x) => x.offset >= 100 && x.offset < mappedEnd)];
        const want = inRange.filter((x) => (newest.get(x.key) ?? x.offset) === x.offset && !(x.value === null && x.ts < now - retention));
        const got = [...fileFrames(r!.cleaned.path, r!.cleaned)].map((f) => ({ offset: f.offset, key: f.key, ts: f.timestamp, value: f.value?.toString() ?? null }));
        expect(got).toEqual(want);
        expect(r!.kept).toBe(want.length);
        expect(r!.dropped).toBe(inRange.length - want.length);
        expect(r!.replaced).toEqual(closed.filter((x) => x.endOffset <= mappedEnd));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });
});
