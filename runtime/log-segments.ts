/**
 * The embedded log's segment files (runtime/file-log.ts) and the cleaner that compacts a
 * compacted topic's closed segments on disk, as Kafka's log cleaner does.
 *
 * Two kinds of file per topic-partition:
 *   <base>.seg        appended to; frames [u32 len][u32 keyLen][key][f64 ts][value], offsets
 *                     base, base+1, … in order (a frame's offset is its place in the file)
 *   <base>-<end>.cseg written by the cleaner for the offsets [base, end); frames carry their
 *                     offset: [u32 len][f64 offset][u32 keyLen][key][f64 ts][value]
 * An empty value is a tombstone. A .cseg file replaces every segment inside its range: it is
 * renamed into place (the commit point) before they are deleted, and a load after a crash in
 * between deletes them.
 *
 * Cleaning starts once the dirty segments hold as many bytes as the cleaned ones. With bounded memory: the newest version of each key in the dirty segments (closed
 * .seg files) goes into an offset map keyed by the key's MD5 (whole segments, up to the map's
 * capacity); then every closed segment up to the end of the mapped ones is copied, keeping a
 * record only when no newer version of its key was mapped. Tombstones are kept for
 * `tombstoneRetentionMs` after they were written (a reader that stopped before one still
 * learns of the deletion), then dropped.
 */
import { closeSync, fstatSync, fsyncSync, openSync, readSync, renameSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { md5Utf8 } from '../lib/md5-utf8';

export interface SegmentFile {
  baseOffset: number;
  /** One past the last offset it covers (for a .seg: base + frames). */
  endOffset: number;
  path: string;
  /** Frames carry their offsets (.cseg). */
  explicit: boolean;
  /** Bytes of whole frames. */
  bytes: number;
}

export interface RawFrame {
  offset: number;
  key: string;
  timestamp: number;
  /** The value's bytes (a view into the file's buffer); null for a tombstone. */
  value: Buffer | null;
}

const PLAIN_HEAD = 4 + 4 + 8;
const EXPLICIT_HEAD = 4 + 8 + 4 + 8;

/** The whole frames of a segment's bytes, one by one, and where they end (a torn tail may follow). */
export function* frames(buf: Buffer, seg: Pick<SegmentFile, 'baseOffset' | 'explicit'>): Generator<RawFrame, void, undefined> {
  let pos = 0;
  let offset = seg.baseOffset;
  const min = seg.explicit ? EXPLICIT_HEAD - 4 : PLAIN_HEAD - 4;
  while (pos + 4 <= buf.length) {
    const len = buf.readUInt32LE(pos);
    if (len < min || pos + 4 + len > buf.length) return;
    let at = pos + 4;
    if (seg.explicit) {
      offset = buf.readDoubleLE(at);
      at += 8;
    }
    const keyLen = buf.readUInt32LE(at);
    const key = buf.toString('utf8', at + 4, at + 4 + keyLen);
    const timestamp = buf.readDoubleLE(at + 4 + keyLen);
    const vStart = at + 4 + keyLen + 8;
    const vEnd = pos + 4 + len;
    yield { offset, key, timestamp, value: vEnd > vStart ? buf.subarray(vStart, vEnd) : null };
    pos = vEnd;
    if (!seg.explicit) offset++;
  }
}

/** Bytes a segment file is read in at a time (a frame larger than this is read whole). */
export const READ_WINDOW_BYTES = 4 << 20;

/**
 * The whole frames of a segment file (up to `bytes`, default the whole file; a torn tail ends
 * them), read `windowBytes` at a time: a cleaned segment of a 50M-row table holds gigabytes,
 * which read whole cost as much memory (and past 2 GiB cannot be read into one Buffer). Each
 * window is a Buffer of its own, so a frame's value stays valid after later frames are read;
 * unless `scratch` is given: then every window is read into it (a frame larger than it gets a
 * Buffer of its own), and a frame's value is valid only until the next frame is asked for.
 */
export function* fileFrames(
  path: string, seg: Pick<SegmentFile, 'baseOffset' | 'explicit'>, bytes?: number, windowBytes = READ_WINDOW_BYTES, scratch?: Buffer,
): Generator<RawFrame, void, undefined> {
  const fd = openSync(path, 'r');
  try {
    const end = bytes ?? fstatSync(fd).size;
    let pos = 0;
    let offset = seg.baseOffset;
    const window = scratch ? scratch.length : windowBytes;
    while (pos + 4 <= end) {
      let buf = readAt(fd, pos, Math.min(window, end - pos), scratch);
      const first = 4 + buf.readUInt32LE(0);
      if (first > buf.length && pos + first <= end) buf = readAt(fd, pos, first);
      const whole = scanFrames(buf, seg.explicit);
      if (whole.count === 0) return;
      yield* frames(buf.subarray(0, whole.bytes), { baseOffset: offset, explicit: seg.explicit });
      offset += whole.count;
      pos += whole.bytes;
    }
  } finally {
    closeSync(fd);
  }
}

function readAt(fd: number, pos: number, length: number, into?: Buffer): Buffer {
  const buf = into && into.length >= length ? into.subarray(0, length) : Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const n = readSync(fd, buf, got, length - got, pos + got);
    if (n === 0) break;
    got += n;
  }
  return got < length ? buf.subarray(0, got) : buf;
}

/** Bytes of whole frames and how many there are (a torn tail excluded), without decoding any. */
export function scanFrames(buf: Buffer, explicit: boolean): { bytes: number; count: number } {
  let pos = 0;
  let count = 0;
  const min = explicit ? EXPLICIT_HEAD - 4 : PLAIN_HEAD - 4;
  while (pos + 4 <= buf.length) {
    const len = buf.readUInt32LE(pos);
    if (len < min || pos + 4 + len > buf.length) break;
    pos += 4 + len;
    count++;
  }
  return { bytes: pos, count };
}

/** A segment file's name: its kind and range (null: not a segment). */
export function parseSegmentName(name: string): { baseOffset: number; endOffset: number | null; explicit: boolean } | null {
  let m = /^(\d{20})\.seg$/.exec(name);
  if (m) return { baseOffset: Number(m[1]), endOffset: null, explicit: false };
  m = /^(\d{20})-(\d{20})\.cseg$/.exec(name);
  if (m) return { baseOffset: Number(m[1]), endOffset: Number(m[2]), explicit: true };
  return null;
}

const pad = (n: number): string => String(n).padStart(20, '0');

/**
 * An open-addressing map from a key's MD5 (four 32-bit words) to the offset of its newest
 * version: 24 bytes a slot, never resized (the cleaner stops mapping when it is full).
 */
export class OffsetMap {
  private readonly words: Uint32Array;
  private readonly offsets: Float64Array;
  private readonly mask: number;
  private readonly h = new Uint32Array(4);
  size = 0;

  constructor(readonly capacity: number) {
    let slots = 1;
    while (slots < capacity * 1.5) slots *= 2;
    this.words = new Uint32Array(slots * 4);
    this.offsets = new Float64Array(slots).fill(-1);
    this.mask = slots - 1;
  }

  private slot(key: string): number {
    md5Utf8(key, this.h);
    let i = this.h[0] & this.mask;
    for (;;) {
      if (this.offsets[i] < 0) return i;
      const w = i * 4;
      if (this.words[w] === this.h[0] && this.words[w + 1] === this.h[1] && this.words[w + 2] === this.h[2] && this.words[w + 3] === this.h[3]) return i;
      i = (i + 1) & this.mask;
    }
  }

  set(key: string, offset: number): void {
    const i = this.slot(key);
    if (this.offsets[i] < 0) {
      this.size++;
      this.words.set(this.h, i * 4);
    }
    this.offsets[i] = offset;
  }

  /** The mapped offset of the key's newest version, or -1. */
  get(key: string): number {
    return this.offsets[this.slot(key)];
  }

  get full(): boolean {
    return this.size >= this.capacity;
  }
}

export interface CleanResult {
  /** The new file, covering [baseOffset, endOffset). */
  cleaned: SegmentFile;
  /** Files it replaces (to close and delete). */
  replaced: SegmentFile[];
  kept: number;
  dropped: number;
}

/**
 * Clean `closed` (a compacted topic-partition's segments in offset order, the active one left
 * out) into one .cseg file in `dir`. Returns null when there is nothing dirty to clean.
 * Yields to the event loop every few thousand frames.
 */
export async function cleanSegments(
  dir: string, closed: readonly SegmentFile[], o: { now: number; tombstoneRetentionMs: number; mapCapacity: number },
): Promise<CleanResult | null> {
  const dirty = closed.filter((s) => !s.explicit);
  // As Kafka's min.cleanable.dirty.ratio (0.5): clean once the dirty part is as big as the clean
  // part, so the cleaner's reads stay in proportion to what was written since.
  const dirtyBytes = dirty.reduce((n, s) => n + s.bytes, 0);
  const cleanBytes = closed.reduce((n, s) => n + (s.explicit ? s.bytes : 0), 0);
  if (dirty.length === 0 || dirtyBytes < cleanBytes) return null;
  // No more slots than the dirty segments have records (a pass over a small topic, such as
  // crawl.host-policy's 1 MiB segments, needs far fewer than the 2M keys of a large one).
  const map = new OffsetMap(Math.max(1, Math.min(o.mapCapacity, dirty.reduce((n, s) => n + (s.endOffset - s.baseOffset), 0))));
  // One read window for both passes: nothing here keeps a frame's key or value past the next frame.
  const scratch = Buffer.allocUnsafe(READ_WINDOW_BYTES);
  let mappedEnd = -1;
  let n = 0;
  for (const seg of closed) {
    if (seg.explicit) continue;
    // Whole segments only; at least one even past the capacity (it holds at most 64 MiB of frames).
    if (mappedEnd >= 0 && map.size + (seg.endOffset - seg.baseOffset) > map.capacity) break;
    for (const f of fileFrames(seg.path, seg, seg.bytes, READ_WINDOW_BYTES, scratch)) {
      map.set(f.key, f.offset);
      if (++n % 5000 === 0) await new Promise((r) => setImmediate(r));
    }
    mappedEnd = seg.endOffset;
  }
  const inRange = closed.filter((s) => s.endOffset <= mappedEnd);
  const base = inRange[0].baseOffset;
  const final = join(dir, `${pad(base)}-${pad(mappedEnd)}.cseg`);
  const tmp = `${final}.tmp`;
  const fd = openSync(tmp, 'w');
  let bytes = 0;
  let kept = 0;
  let dropped = 0;
  try {
    let out = Buffer.allocUnsafe(1 << 20);
    let used = 0;
    const flush = (): void => {
      for (let at = 0; at < used; ) at += writeSync(fd, out, at, used - at);
      bytes += used;
      used = 0;
    };
    for (const seg of inRange) {
      for (const f of fileFrames(seg.path, seg, seg.bytes, READ_WINDOW_BYTES, scratch)) {
        if (++n % 5000 === 0) await new Promise((r) => setImmediate(r));
        const newest = map.get(f.key);
        const superseded = newest >= 0 && newest !== f.offset;
        const expiredTombstone = f.value === null && f.timestamp < o.now - o.tombstoneRetentionMs;
        if (superseded || expiredTombstone) {
          dropped++;
          continue;
        }
        kept++;
        const keyLen = Buffer.byteLength(f.key, 'utf8');
        const valueLen = f.value?.length ?? 0;
        const need = EXPLICIT_HEAD + keyLen + valueLen;
        if (out.length - used < need) {
          flush();
          if (out.length < need) out = Buffer.allocUnsafe(need);
        }
        out.writeUInt32LE(need - 4, used);
        out.writeDoubleLE(f.offset, used + 4);
        out.writeUInt32LE(keyLen, used + 12);
        out.write(f.key, used + 16, keyLen, 'utf8');
        out.writeDoubleLE(f.timestamp, used + 16 + keyLen);
        if (f.value) f.value.copy(out, used + EXPLICIT_HEAD + keyLen);
        used += need;
      }
    }
    flush();
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, final);
  return { cleaned: { baseOffset: base, endOffset: mappedEnd, path: final, explicit: true, bytes }, replaced: inRange, kept, dropped };
}
