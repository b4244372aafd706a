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
import { md5Bytes } from '../lib/md5-utf8';

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
  for (const w of fileWindows(path, seg, bytes, windowBytes, scratch)) yield* frames(w.buf, { baseOffset: w.offset, explicit: seg.explicit });
}

/** Whole frames of a segment file as read: `count` frames in `buf`, the first (of a .seg) at `offset`. */
export interface FrameWindow {
  buf: Buffer;
  offset: number;
  count: number;
}

/** A segment file's whole frames a window at a time, as fileFrames reads them, without decoding any (the cleaner's reads). */
export function* fileWindows(
  path: string, seg: Pick<SegmentFile, 'baseOffset' | 'explicit'>, bytes?: number, windowBytes = READ_WINDOW_BYTES, scratch?: Buffer,
): Generator<FrameWindow, void, undefined> {
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
      yield { buf: buf.subarray(0, whole.bytes), offset, count: whole.count };
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
 * version: 24 bytes a slot, never resized (the cleaner stops mapping when it is full). Keys are
 * given as the bytes of a frame (md5Bytes), never made strings.
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

  /** The slot of the key buf[start, end): its own, or the empty one it would take. */
  private slot(buf: Uint8Array, start: number, end: number): number {
    md5Bytes(buf, start, end, this.h);
    let i = this.h[0] & this.mask;
    for (;;) {
      if (this.offsets[i] < 0) return i;
      const w = i * 4;
      if (this.words[w] === this.h[0] && this.words[w + 1] === this.h[1] && this.words[w + 2] === this.h[2] && this.words[w + 3] === this.h[3]) return i;
      i = (i + 1) & this.mask;
    }
  }

  /** Map the key buf[start, end) to `offset`; returns the offset it was mapped to before, or -1. */
  set(buf: Uint8Array, start: number, end: number, offset: number): number {
    const i = this.slot(buf, start, end);
    const before = this.offsets[i];
    if (before < 0) {
      this.size++;
      this.words.set(this.h, i * 4);
    }
    this.offsets[i] = offset;
    return before;
  }

  /** The mapped offset of the key buf[start, end)'s newest version, or -1. */
  get(buf: Uint8Array, start: number, end: number): number {
    return this.offsets[this.slot(buf, start, end)];
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

/** Where a frame's fields sit after its 4-byte length: a .cseg frame has its 8-byte offset first. */
const keyLenAt = (explicit: boolean): number => (explicit ? 12 : 4);

/**
 * Clean `closed` (a compacted topic-partition's segments in offset order, the active one left
 * out) into one .cseg file in `dir`. Returns null when there is nothing dirty to clean.
 * Yields to the event loop after every read window (it runs on the calling thread where no
 * worker file exists: runtime/log-cleaner.ts).
 *
 * Frames are handled as bytes: a key is hashed where it lies in the read window (md5Bytes) and a
 * kept frame is copied whole. A dirty frame is hashed once: when the map pass maps a key already
 * mapped, the earlier frame is marked superseded (`stale`), so the copy pass hashes only the
 * frames of segments cleaned before (each pass hashed the dirty frames twice, as strings, and
 * the frames of a table growing by new URLs are mostly dirty ones: runtime/log-cleaner.ts).
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
  // Dirty frames a later dirty frame of the same key supersedes, one bit each by offset from the first dirty one.
  const dirtyBase = dirty[0].baseOffset;
  const stale = new Uint8Array(((dirty[dirty.length - 1].endOffset - dirtyBase) >> 3) + 1);
  // One read window for both passes: nothing here keeps a frame's bytes past its window.
  const scratch = Buffer.allocUnsafe(READ_WINDOW_BYTES);
  const tick = (): Promise<unknown> => new Promise((r) => setImmediate(r));
  let mappedEnd = -1;
  for (const seg of closed) {
    if (seg.explicit) continue;
    // Whole segments only; at least one even past the capacity (it holds at most 64 MiB of frames).
    if (mappedEnd >= 0 && map.size + (seg.endOffset - seg.baseOffset) > map.capacity) break;
    for (const w of fileWindows(seg.path, seg, seg.bytes, READ_WINDOW_BYTES, scratch)) {
      const b = w.buf;
      for (let i = 0, pos = 0, offset = w.offset; i < w.count; i++, offset++) {
        const len = b.readUInt32LE(pos);
        const key = pos + 8;
        const before = map.set(b, key, key + b.readUInt32LE(pos + 4), offset);
        if (before >= 0) stale[(before - dirtyBase) >> 3] |= 1 << ((before - dirtyBase) & 7);
        pos += 4 + len;
      }
      await tick();
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
  const expiredBefore = o.now - o.tombstoneRetentionMs;
  try {
    let out = Buffer.allocUnsafe(1 << 20);
    let used = 0;
    const flush = (): void => {
      for (let at = 0; at < used; ) at += writeSync(fd, out, at, used - at);
      bytes += used;
      used = 0;
    };
    for (const seg of inRange) {
      // Every plain segment in range was mapped (whole segments, in order): its frames' fates are in `stale`.
      const mapped = !seg.explicit;
      const at = keyLenAt(seg.explicit);
      for (const w of fileWindows(seg.path, seg, seg.bytes, READ_WINDOW_BYTES, scratch)) {
        const b = w.buf;
        for (let i = 0, pos = 0, plainOffset = w.offset; i < w.count; i++, plainOffset++) {
          const len = b.readUInt32LE(pos);
          const end = pos + 4 + len;
          const offset = seg.explicit ? b.readDoubleLE(pos + 4) : plainOffset;
          const keyLen = b.readUInt32LE(pos + at);
          const key = pos + at + 4;
          let superseded: boolean;
          if (mapped) superseded = (stale[(offset - dirtyBase) >> 3] & (1 << ((offset - dirtyBase) & 7))) !== 0;
          else {
            const newest = map.get(b, key, key + keyLen);
            superseded = newest >= 0 && newest !== offset;
          }
          // A tombstone: no value after the key and the 8-byte timestamp.
          const expiredTombstone = end === key + keyLen + 8 && b.readDoubleLE(key + keyLen) < expiredBefore;
          if (superseded || expiredTombstone) {
            dropped++;
            pos = end;
            continue;
          }
          kept++;
          const need = seg.explicit ? 4 + len : 12 + len;
          if (out.length - used < need) {
            flush();
            if (out.length < need) out = Buffer.allocUnsafe(need);
          }
          if (seg.explicit) b.copy(out, used, pos, end);
          else {
            // [len][keyLen][key][ts][value] -> [len + 8][offset][keyLen][key][ts][value]
            out.writeUInt32LE(len + 8, used);
            out.writeDoubleLE(offset, used + 4);
            b.copy(out, used + 12, pos + 4, end);
          }
          used += need;
          pos = end;
        }
        await tick();
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
