/**
 * An external merge sort of keyed records (a rebuild's changelog records by URL, its index
 * entries by store key: processors/frontier-restore.ts). Records are added in order; the
 * buffered ones are sorted by key and spilled to a run file when the caller says so (memory
 * bounded by what it buffers, never by the records); `merge` then meets each key's records from
 * every run and hands on the *last* added of each key once, in key order (a null value included:
 * a tombstone is the caller's to skip).
 *
 * Keys are compared as JavaScript strings (UTF-16 code units). Keys added as `latin1` (a byte a
 * character) therefore sort in byte order, as LevelDB does; `utf8` keys (URLs) sort in code-unit
 * order, which differs from byte order only around characters above U+FFFF (the merge stays
 * correct either way: it only needs one order throughout). With a `keyPrefix` byte, a string key
 * is stored as that byte and the key's bytes (a store key: a rebuild's row keys) and read back as
 * latin1, so such keys too sort in byte order. The merge hands on each key's bytes as well
 * (views, no copy), for a caller that writes them to the store as they are.
 *
 * A run file, record after record: key length (u32 LE), key bytes, value length (i32 LE, -1 for
 * null), value bytes. Files live in `dir` and are removed by `destroy`.
 */
import { closeSync, mkdirSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { frames } from '../runtime/log-segments';
import { sortByKeyBytes } from './sorted-runs-bytes';
import { sortRunOffThread } from './sorted-runs-worker';

export interface SortRecord {
  key: string;
  value: Buffer | null;
}

/** Bytes a buffered record is counted as, beyond its key and value (objects, views). */
const RECORD_OVERHEAD = 96;
const WRITE_BUFFER_BYTES = 1024 * 1024;
/** Per run being merged (a partition's merge reads every run of it at once). */
const READ_BUFFER_BYTES = 256 * 1024;
/** `thread` mode: records are serialised into chunks of this size (handed to the sort thread, not copied). */
const CHUNK_BYTES = 4 * 1024 * 1024;

const EMPTY = Buffer.alloc(0);

const byKey = (a: SortRecord, b: SortRecord): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

/** Sort stably by key and keep only the last record of each key (in place; returns the array). */
export function sortLastWins<T extends SortRecord>(recs: T[]): T[] {
  recs.sort(byKey); // stable: equal keys keep the order they were added in
  let w = 0;
  for (let i = 0; i < recs.length; i++) {
    if (i + 1 < recs.length && recs[i + 1].key === recs[i].key) continue;
    recs[w++] = recs[i];
  }
  recs.length = w;
  return recs;
}

/** A source of one run's records in key order. */
interface Run {
  key: string;
  /** The key's bytes as stored in the run. */
  keyBytes: Buffer;
  value: Buffer | null;
  /** Move to the next record; false at the end. */
  next(): boolean;
  close(): void;
}

class MemoryRun implements Run {
  key = '';
  keyBytes = EMPTY;
  value: Buffer | null = null;
  private i = -1;
  constructor(private readonly recs: SortRecord[], private readonly encoding: BufferEncoding) {}
  next(): boolean {
    if (++this.i >= this.recs.length) return false;
    const r = this.recs[this.i];
    this.key = r.key;
    this.keyBytes = Buffer.from(r.key, this.encoding);
    this.value = r.value;
    return true;
  }
  close(): void {}
}

class FileRun implements Run {
  key = '';
  keyBytes = EMPTY;
  value: Buffer | null = null;
  private readonly fd: number;
  private buf = Buffer.alloc(0);
  private at = 0;
  private filePos = 0;
  private eof = false;
  constructor(path: string, private readonly encoding: BufferEncoding) {
    this.fd = openSync(path, 'r');
  }
  /** At least `n` unread bytes in `buf` (a fresh buffer each refill: views handed out stay valid). */
  private ensure(n: number): boolean {
    if (this.buf.length - this.at >= n) return true;
    if (this.eof) return false;
    const rest = this.buf.length - this.at;
    const next = Buffer.allocUnsafe(Math.max(READ_BUFFER_BYTES, n));
    this.buf.copy(next, 0, this.at);
    let have = rest;
    while (have < next.length) {
      const got = readSync(this.fd, next, have, next.length - have, this.filePos);
      if (got === 0) {
        this.eof = true;
        break;
      }
      have += got;
      this.filePos += got;
    }
    this.buf = next.subarray(0, have);
    this.at = 0;
    return have >= n;
  }
  next(): boolean {
    if (!this.ensure(4)) return false;
    const kl = this.buf.readUInt32LE(this.at);
    if (!this.ensure(8 + kl)) throw new Error('sorted run: torn record');
    const ks = this.at + 4;
    const vl = this.buf.readInt32LE(ks + kl);
    const need = 8 + kl + Math.max(vl, 0);
    if (!this.ensure(need)) throw new Error('sorted run: torn record');
    // ensure() may have moved the record to the start of a new buffer
    const k0 = this.at + 4;
    this.key = this.buf.toString(this.encoding, k0, k0 + kl);
    this.keyBytes = this.buf.subarray(k0, k0 + kl);
    const v0 = k0 + kl + 4;
    this.value = vl < 0 ? null : this.buf.subarray(v0, v0 + vl);
    this.at += need;
    return true;
  }
  close(): void {
    closeSync(this.fd);
  }
}

/**
 * A run file written through one buffer: `reserve` room, fill `buf` from `at`, advance `at`.
 * Both run writers (records sorted here, and the sort thread's index-array sort) use it.
 */
class RunFileOut {
  buf = Buffer.allocUnsafe(WRITE_BUFFER_BYTES);
  at = 0;
  total = 0;
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, 'w');
  }

  /** Room for `need` more bytes at `at` (what is buffered goes to the file first when it must). */
  reserve(need: number): void {
    if (this.buf.length - this.at >= need) return;
    this.flush();
    if (this.buf.length < need) this.buf = Buffer.allocUnsafe(need);
  }

  flush(): void {
    let done = 0;
    while (done < this.at) done += writeSync(this.fd, this.buf, done, this.at - done);
    this.total += this.at;
    this.at = 0;
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** Write a run file with `fill`; returns the bytes written. */
function writeRunFile(path: string, fill: (out: RunFileOut) => void): number {
  const out = new RunFileOut(path);
  try {
    fill(out);
    out.flush();
  } finally {
    out.close();
  }
  return out.total;
}

/** Write sorted records to a run file. Returns the bytes written. */
function writeRun(path: string, recs: readonly SortRecord[], encoding: BufferEncoding): number {
  return writeRunFile(path, (out) => {
    for (const r of recs) {
      const kl = Buffer.byteLength(r.key, encoding);
      const vl = r.value === null ? 0 : r.value.length;
      out.reserve(8 + kl + vl);
      const buf = out.buf;
      let at = out.at;
      buf.writeUInt32LE(kl, at);
      at += 4;
      at += buf.write(r.key, at, encoding);
      buf.writeInt32LE(r.value === null ? -1 : vl, at);
      at += 4;
      if (r.value !== null) {
        buf.set(r.value, at);
        at += vl;
      }
      out.at = at;
    }
  });
}

/** How a chunk handed to sortRunBuffer holds its records. */
export const CHUNK_RUN = 0;
/** Journal frames (runtime/log-segments.ts), plain or with their offsets (`explicit`). */
export const CHUNK_FRAMES = 1;
export const CHUNK_FRAMES_EXPLICIT = 2;

/**
 * Parse serialised records (each chunk in the run file format, or journal frames: `formats`, in
 * the order added), sort them (last of a key wins) and write them as a run file. Each record is
 * kept as its key and where its bytes are (no object or Buffer view a record), sorted as an
 * index array; a run record is copied to the run as it is, a frame's key (after `prefix`, when
 * given) and value copied into one. With a `prefix` every key is compared without it (run
 * records hold it, frames do not; all keys start with it).
 */
export function sortRunBuffer(bufs: readonly Buffer[], path: string, encoding: BufferEncoding, formats?: readonly number[], prefix: number | null = null): number {
  // latin1 keys compare as their bytes: sorted as bytes, no string made of them.
  const byBytes = encoding === 'latin1';
  const keys: string[] = [];
  // Records counted first: the per-record arrays are typed arrays of their final size.
  let n = 0;
  for (let b = 0; b < bufs.length; b++) {
    const buf = bufs[b];
    let at = 0;
    if ((formats?.[b] ?? CHUNK_RUN) === CHUNK_RUN) {
      while (at < buf.length) {
        const kl = buf.readUInt32LE(at);
        at += 8 + kl + Math.max(buf.readInt32LE(at + 4 + kl), 0);
        n++;
      }
    } else {
      while (at + 4 <= buf.length) {
        at += 4 + buf.readUInt32LE(at);
        n++;
      }
    }
  }
  /** Per record: its chunk, and where its bytes start and end in it (a frame: its key's start, its value's end). */
  const src = new Int32Array(n);
  const starts = new Int32Array(n);
  const ends = new Int32Array(n);
  /** Per record: where its key (as compared: without the prefix) starts and ends in its chunk. */
  const keyStarts = new Int32Array(n);
  const keyStops = new Int32Array(n);
  /** Per record of a frame: where its key ends and its value starts (-1: a run record). */
  const keyEnds = new Int32Array(n);
  const valueStarts = new Int32Array(n);
  const skip = prefix === null ? 0 : 1;
  let i = 0;
  for (let b = 0; b < bufs.length; b++) {
    const buf = bufs[b];
    const format = formats?.[b] ?? CHUNK_RUN;
    let at = 0;
    if (format === CHUNK_RUN) {
      while (at < buf.length) {
        const kl = buf.readUInt32LE(at);
        const k0 = at + 4;
        const vl = buf.readInt32LE(k0 + kl);
        const end = k0 + kl + 4 + Math.max(vl, 0);
        if (byBytes) {
          keyStarts[i] = k0 + skip;
          keyStops[i] = k0 + kl;
        } else keys.push(buf.toString(encoding, k0 + skip, k0 + kl));
        src[i] = b;
        starts[i] = at;
        ends[i] = end;
        keyEnds[i] = -1;
        valueStarts[i] = -1;
        i++;
        at = end;
      }
      continue;
    }
    const head = format === CHUNK_FRAMES_EXPLICIT ? 12 : 4;
    while (at + 4 <= buf.length) {
      const end = at + 4 + buf.readUInt32LE(at);
      const k0 = at + head + 4;
      const k1 = k0 + buf.readUInt32LE(at + head);
      if (end > buf.length || k1 + 8 > end) throw new Error('sorted run: torn journal frame');
      if (byBytes) {
        keyStarts[i] = k0;
        keyStops[i] = k1;
      } else keys.push(buf.toString(encoding, k0, k1));
      src[i] = b;
      starts[i] = k0;
      ends[i] = end;
      keyEnds[i] = k1;
      valueStarts[i] = k1 + 8;
      i++;
      at = end;
    }
  }
  let order: ArrayLike<number>;
  /** Per position in `order`: whether its record is the last of its key (kept). */
  let keep: (j: number) => boolean;
  if (byBytes) {
    const sorted = sortByKeyBytes(bufs, src, keyStarts, keyStops);
    order = sorted.order;
    const last = sorted.last;
    keep = (j) => last[sorted.order[j]] === 1;
  } else {
    const o = new Array<number>(n);
    for (let i = 0; i < n; i++) o[i] = i;
    // Equal keys in the order added: the last of them is the one kept.
    o.sort((a, b) => {
      const ka = keys[a];
      const kb = keys[b];
      return ka < kb ? -1 : ka > kb ? 1 : a - b;
    });
    order = o;
    keep = (j) => !(j + 1 < n && keys[o[j + 1]] === keys[o[j]]);
  }
  return writeRunFile(path, (out) => {
    for (let j = 0; j < n; j++) {
      if (!keep(j)) continue;
      const i = order[j];
      const from = bufs[src[i]];
      if (keyEnds[i] < 0) {
        const len = ends[i] - starts[i];
        out.reserve(len);
        from.copy(out.buf, out.at, starts[i], ends[i]);
        out.at += len;
        continue;
      }
      // A frame: [u32 key length][prefix][key][i32 value length, -1 for a tombstone][value]
      const kl = keyEnds[i] - starts[i];
      const vl = ends[i] - valueStarts[i];
      out.reserve(9 + kl + vl);
      const to = out.buf;
      let at = out.at;
      to.writeUInt32LE(kl + skip, at);
      at += 4;
      if (prefix !== null) to[at++] = prefix;
      at += from.copy(to, at, starts[i], keyEnds[i]);
      to.writeInt32LE(vl === 0 ? -1 : vl, at);
      at += 4;
      if (vl > 0) at += from.copy(to, at, valueStarts[i], ends[i]);
      out.at = at;
    }
  });
}

/** Merged records handed on: keys and values (null: a tombstone). */
export interface MergedChunk {
  keys: string[];
  /** Each key's bytes as stored (views into the runs' read buffers: valid until `onChunk` resolves). */
  keyBytes: Buffer[];
  values: Array<Buffer | null>;
  length: number;
}

export class SortedRuns {
  private buffered: SortRecord[] = [];
  /** `thread`: the records added so far, serialised (the run format, unsorted) in chunks (full ones, then `run`). */
  private chunks: Buffer[] = [];
  /** `thread`: how each of `chunks` holds its records (CHUNK_RUN, CHUNK_FRAMES...). */
  private formats: number[] = [];
  private run: Buffer | null = null;
  private runAt = 0;
  private chunked = 0;
  /** `thread`: runs being sorted and written off the main thread. */
  private pending: Array<Promise<void>> = [];
  private files: string[] = [];
  /** Bytes counted for the buffered records. */
  bufferedBytes = 0;
  /** Bytes written to run files so far. */
  spilledBytes = 0;
  /** Records added. */
  added = 0;

  constructor(
    private readonly dir: string,
    private readonly encoding: BufferEncoding = 'utf8',
    /**
     * `thread`: records are serialised as added and each run is sorted and written on a worker
     * thread (processors/sorted-runs-worker.ts); `inline`: kept as objects, sorted here.
     */
    private readonly mode: 'thread' | 'inline' = 'inline',
    /**
     * A byte written before every string key added (`add`): the run's key is then that byte and
     * the key in `encoding` (a rebuild's row key: KEY_ROW and the URL), read back as latin1.
     */
    private readonly keyPrefix: number | null = null,
  ) {
    this.readEncoding = keyPrefix === null ? encoding : 'latin1';
  }

  /** How keys are read back from the runs (and compared): `encoding`, or latin1 (bytes) with a key prefix. */
  private readonly readEncoding: BufferEncoding;

  /** Add a record (after every record added before it; the last of a key wins). */
  add(rec: SortRecord): void {
    if (this.mode === 'thread') this.append(rec.key, rec.value);
    else if (this.keyPrefix === null) this.push(rec);
    else this.push({ key: String.fromCharCode(this.keyPrefix) + Buffer.from(rec.key, this.encoding).toString('latin1'), value: rec.value });
  }

  /** Add a record whose key is given as its bytes as the runs hold it (an index key: no string made of it here; no prefix added). */
  addBytes(key: Buffer, value: Buffer | null): void {
    if (this.mode === 'thread') this.append(key, value);
    else this.push({ key: key.toString(this.readEncoding), value });
  }

  /** `thread`: the record serialised at the end of the chunk being filled. */
  private append(key: string | Buffer, value: Buffer | null): void {
    const vl = value === null ? 0 : value.length;
    const need = 9 + (typeof key === 'string' ? key.length * 3 : key.length) + vl;
    let buf = this.run;
    if (buf === null || buf.length - this.runAt < need) {
      // A record never straddles two chunks: a full chunk is kept as far as it is used.
      if (buf !== null) {
        this.chunks.push(buf.subarray(0, this.runAt));
        this.formats.push(CHUNK_RUN);
        this.chunked += this.runAt;
      }
      this.run = buf = Buffer.from(new ArrayBuffer(Math.max(need, CHUNK_BYTES)));
      this.runAt = 0;
    }
    let at = this.runAt;
    let kl: number;
    if (typeof key === 'string') {
      if (this.keyPrefix === null) kl = buf.write(key, at + 4, this.encoding);
      else {
        buf[at + 4] = this.keyPrefix;
        kl = 1 + buf.write(key, at + 5, this.encoding);
      }
    } else {
      buf.set(key, at + 4);
      kl = key.length;
    }
    buf.writeUInt32LE(kl, at);
    at += 4 + kl;
    buf.writeInt32LE(value === null ? -1 : vl, at);
    at += 4;
    if (value !== null) {
      buf.set(value, at);
      at += vl;
    }
    this.runAt = at;
    this.bufferedBytes = this.chunked + at;
    this.added++;
  }

  /**
   * Add journal frames (runtime/changelog.ts ChangelogFrames: keys as UTF-8, an empty value a
   * tombstone) after every record added before them. `thread`: the frames' buffer is handed to
   * the sort thread as it is (transferred: the caller must not use it again), no record decoded
   * here.
   */
  addFrames(buf: Buffer, explicit: boolean, count: number): void {
    if (this.mode === 'inline') {
      for (const f of frames(buf, { baseOffset: 0, explicit })) this.add({ key: f.key, value: f.value });
      return;
    }
    if (this.run !== null) {
      this.chunks.push(this.run.subarray(0, this.runAt));
      this.formats.push(CHUNK_RUN);
      this.chunked += this.runAt;
      this.run = null;
      this.runAt = 0;
    }
    // Transferred to the sort thread: it must own its memory (a small Buffer may be a slice of Node's shared pool).
    let own = buf;
    if (buf.byteOffset !== 0 || buf.length < Buffer.poolSize) {
      own = Buffer.from(new ArrayBuffer(buf.length));
      own.set(buf);
    }
    this.chunks.push(own);
    this.formats.push(explicit ? CHUNK_FRAMES_EXPLICIT : CHUNK_FRAMES);
    this.chunked += own.length;
    this.bufferedBytes = this.chunked;
    this.added += count;
  }

  private push(rec: SortRecord): void {
    this.buffered.push(rec);
    this.bufferedBytes += rec.key.length + (rec.value === null ? 0 : rec.value.length) + RECORD_OVERHEAD;
    this.added++;
  }

  get runs(): number {
    return this.files.length;
  }

  /**
   * Sort the buffered records and write them to a new run file. `thread`: on the worker thread,
   * resolving once at most one run is still being written (memory: the run being filled and one
   * being sorted).
   */
  async spill(): Promise<void> {
    if (this.mode === 'thread') {
      if (this.bufferedBytes === 0) return;
      const path = this.nextPath();
      const bufs = this.run === null ? this.chunks : [...this.chunks, this.run.subarray(0, this.runAt)];
      const formats = this.run === null ? this.formats : [...this.formats, CHUNK_RUN];
      this.chunks = [];
      this.formats = [];
      this.run = null;
      this.runAt = 0;
      this.chunked = 0;
      this.bufferedBytes = 0;
      const done = sortRunOffThread(bufs, path, this.readEncoding, formats, this.keyPrefix).then((n) => {
        this.spilledBytes += n;
      });
      done.catch(() => undefined); // awaited below or by merge
      this.pending.push(done);
      while (this.pending.length > 1) await this.pending.shift();
      return;
    }
    if (this.buffered.length === 0) return;
    const path = this.nextPath();
    this.spilledBytes += writeRun(path, sortLastWins(this.buffered), this.readEncoding);
    this.buffered = [];
    this.bufferedBytes = 0;
  }

  private nextPath(): string {
    if (this.files.length === 0) mkdirSync(this.dir, { recursive: true });
    const path = join(this.dir, `run-${String(this.files.length).padStart(5, '0')}`);
    this.files.push(path);
    return path;
  }

  /**
   * Every key once, in key order, with its last record, in chunks of up to `chunk`: the run files
   * in the order written, then the buffered records (sorted here, never spilled). The chunk's
   * arrays are reused: `onChunk` must be done with them when its promise resolves.
   */
  async merge(onChunk: (c: MergedChunk) => Promise<void> | void, chunk = 4096): Promise<void> {
    if (this.mode === 'thread') {
      await this.spill();
      while (this.pending.length) await this.pending.shift();
    }
    const runs: Run[] = this.files.map((f) => new FileRun(f, this.readEncoding));
    if (this.buffered.length) runs.push(new MemoryRun(sortLastWins(this.buffered), this.readEncoding));
    this.buffered = [];
    this.bufferedBytes = 0;
    try {
      // A tree of losers over the runs, ordered by (key, run index): equal keys come out oldest
      // run first. A record taken costs one comparison a level (log2 of the runs), against about
      // two a level for a binary heap; at 50M a partition merges about 28 runs.
      const k = runs.length;
      /** Per run: read to its end (greater than every key). */
      const done = new Uint8Array(k);
      const less = (a: number, b: number): boolean => {
        if (done[a] === 1) return false;
        if (done[b] === 1) return true;
        const ka = runs[a].key;
        const kb = runs[b].key;
        return ka < kb || (ka === kb && a < b);
      };
      for (let i = 0; i < k; i++) if (!runs[i].next()) done[i] = 1;
      /** tree[0]: the run whose record is next; tree[n], n >= 1: the loser at node n (run i is leaf k + i). */
      const tree = new Int32Array(Math.max(k, 1));
      if (k > 0) {
        const winners = new Int32Array(2 * k);
        for (let i = 0; i < k; i++) winners[k + i] = i;
        for (let n = k - 1; n >= 1; n--) {
          const l = winners[2 * n];
          const r = winners[2 * n + 1];
          if (less(r, l)) {
            winners[n] = r;
            tree[n] = l;
          } else {
            winners[n] = l;
            tree[n] = r;
          }
        }
        tree[0] = k === 1 ? 0 : winners[1];
      }
      let live = 0;
      for (let i = 0; i < k; i++) live += done[i] === 1 ? 0 : 1;
      const out: MergedChunk = { keys: [], keyBytes: [], values: [], length: 0 };
      /** The winning run moved on (to its next record, or to its end): replay its path to the root. */
      const advanceTop = (): void => {
        let cur = tree[0];
        if (!runs[cur].next()) {
          done[cur] = 1;
          live--;
        }
        for (let n = (cur + k) >> 1; n >= 1; n >>= 1) {
          const t = tree[n];
          if (less(t, cur)) {
            tree[n] = cur;
            cur = t;
          }
        }
        tree[0] = cur;
      };
      while (live > 0) {
        const top = runs[tree[0]];
        let key = top.key;
        let keyBytes = top.keyBytes;
        let value = top.value;
        advanceTop();
        // Later runs' records of the same key come next (ties leave oldest first): the last one wins.
        while (live > 0 && runs[tree[0]].key === key) {
          const r = runs[tree[0]];
          key = r.key;
          keyBytes = r.keyBytes;
          value = r.value;
          advanceTop();
        }
        const n = out.length++;
        out.keys[n] = key;
        out.keyBytes[n] = keyBytes;
        out.values[n] = value;
        if (out.length >= chunk) {
          await onChunk(out);
          out.length = 0;
        }
      }
      if (out.length) await onChunk(out);
    } finally {
      for (const r of runs) r.close();
    }
  }

  /** Remove the run files (and their folder). */
  destroy(): void {
    this.buffered = [];
    this.run = null;
    this.runAt = 0;
    this.chunks = [];
    this.formats = [];
    this.chunked = 0;
    this.bufferedBytes = 0;
    this.files = [];
    rmSync(this.dir, { recursive: true, force: true });
  }
}
