/**
 * The embedded default's in-process log: the same topics, partition counts and host
 * partitioner as Kafka, with consumer-group offsets, journaled under a folder so a killed
 * crawl resumes where it stopped.
 *
 * On disk, per topic-partition, append-only segment files of frames
 *   [u32 frame length][u32 key length][key][f64 timestamp][avro value or empty for a tombstone]
 * and per consumer group an offsets snapshot (replaced atomically) plus a journal of commits
 * since it. Records are appended before the offsets that depend on them, so a crash replays
 * (duplicates), never skips.
 * A torn final frame (a crash mid-write) is cut off when the segment is reopened.
 *
 * Compacted topics (crawl.urls, crawl.host-policy, …) are not held in memory: their rows are
 * read from the segment files when asked for (`table`, `readRaw`), and `compact()` cleans their
 * closed segments on disk, keeping the newest record of each key (runtime/log-segments.ts).
 */
import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync, writeSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import type * as avro from 'avsc';
import { avroReader, avroType } from '../lib/avro';
import { partitionForHost } from '../lib/partitioner';
import { topics, type TopicId, type TopicSpec } from '../topologies/crawl';
import type { InRecord, OutRecord, TableRecord } from './stage';
import type { ChangelogFrames, ChangelogSource } from './changelog';
import { cleanSegmentsOffThread } from './log-cleaner';
import { fileFrames, fileWindows, frames, parseSegmentName, scanFrames, type RawFrame, type SegmentFile } from './log-segments';

const SEGMENT_BYTES = 64 * 1024 * 1024;
/** Keys the cleaner maps per pass (24 bytes a slot, the power of two at or above 1.5x the keys): 96 MiB. */
const CLEANER_MAP_KEYS = 2_000_000;
/** A tombstone stays in a cleaned segment this long after it was written (Kafka's delete.retention.ms default). */
const TOMBSTONE_RETENTION_MS = 24 * 3600_000;
/** Frame-building buffer of a partition log: its first size, and the most it grows to (below). */
const CHUNK_START_BYTES = 16 * 1024;
const CHUNK_MAX_BYTES = 1024 * 1024;
/** A chunk with less room than a head plus this is replaced rather than used for a small value. */
const MIN_CHUNK_ROOM = 512;

interface Segment extends SegmentFile {
  /** Open for appending (plain segments); -1 for a cleaned one. */
  fd: number;
}

/** A compacted topic's record applied to its table: the latest value per key; null deletes. */
function applyRow(table: Map<string, InRecord>, rec: InRecord): void {
  if (rec.value === null) table.delete(rec.key);
  else table.set(rec.key, rec);
}

class PartitionLog {
  /** Records still held in memory: offsets [memBase, end). */
  private records: InRecord[] = [];
  private memBase = 0;
  end = 0;
  private segments: Segment[] = [];
  /**
   * Frames appended but not yet written, bound for `pendingSeg` from byte `pendingPos`: one
   * writev per partition per event-loop turn instead of a write per record. Frames are built in
   * `chunk`, heads and values encoded in place (no buffer per record, and a page body is
   * encoded straight into it); `pending` holds the finished stretches of earlier chunks.
   */
  private pending: Buffer[] = [];
  private pendingSeg: Segment | null = null;
  private pendingPos = 0;
  private chunk: Buffer | null = null;
  /** Bytes of `chunk` in use: its frames not yet in `pending`. */
  private chunkPos = 0;
  /** Records read from disk whose value `form.fromDisk` has not made whole yet (done on first read). */
  private readonly partial = new Set<InRecord>();
  constructor(
    readonly topic: TopicId,
    readonly partition: number,
    private readonly dir: string,
    private readonly type: avro.Type,
    /** Decodes values written by this release or an earlier one (lib/avro avroReader). */
    private readonly readValue: (buf: Buffer) => unknown,
    private readonly compacted: boolean,
    private readonly form: DiskForm | undefined,
    private readonly segmentBytes = SEGMENT_BYTES,
    /** Every group reading this topic has committed below here: older records are not read back (their files are deleted). */
    private readonly consumedBelow = 0,
  ) {
    mkdirSync(dir, { recursive: true });
    this.load();
  }

  /**
   * Open the segment files. A delete-policy topic's records are read back into memory (what its
   * consumers have not committed); a compacted topic's are only counted: its rows stay on disk.
   */
  private load(): void {
    const found: Array<{ name: string; baseOffset: number; endOffset: number | null; explicit: boolean }> = [];
    for (const name of readdirSync(this.dir)) {
      if (name.endsWith('.tmp')) {
        unlinkSync(join(this.dir, name)); // a cleaning cut short
        continue;
      }
      const parsed = parseSegmentName(name);
      if (parsed) found.push({ name, ...parsed });
    }
    found.sort((a, b) => a.baseOffset - b.baseOffset || (a.explicit ? -1 : 1));
    // A cleaned file replaces every segment inside its range (a crash may have left them).
    const cleaned = found.filter((f) => f.explicit);
    const live = found.filter((f) => !cleaned.some((c) => c !== f && c.baseOffset <= f.baseOffset && f.baseOffset < c.endOffset!));
    for (const f of found) if (!live.includes(f)) unlinkSync(join(this.dir, f.name));
    for (const [i, f] of live.entries()) {
      const path = join(this.dir, f.name);
      const next = live[i + 1];
      if (f.explicit) {
        this.segments.push({ baseOffset: f.baseOffset, endOffset: f.endOffset!, path, fd: -1, explicit: true, bytes: statSync(path).size });
        this.end = f.endOffset!;
        continue;
      }
      if (this.compacted && next) {
        // A closed segment of a compacted topic: whole (only the last one can have a torn tail),
        // its offsets up to the next one's base. Not read: a table of 50M rows is gigabytes.
        this.segments.push({ baseOffset: f.baseOffset, endOffset: next.baseOffset, path, fd: openSync(path, 'r+'), explicit: false, bytes: statSync(path).size });
        this.end = next.baseOffset;
        continue;
      }
      if (!this.compacted && next && next.baseOffset <= this.consumedBelow) {
        unlinkSync(path); // consumed by every reader: a delete-policy topic's retention
        continue;
      }
      const buf = readFileSync(path);
      let count: number;
      let bytes: number;
      if (this.compacted) ({ count, bytes } = scanFrames(buf, false));
      else {
        const recs: InRecord[] = [];
        count = 0;
        for (const fr of frames(buf, { baseOffset: f.baseOffset, explicit: false })) {
          count++;
          if (fr.offset >= this.consumedBelow) recs.push(this.recordOf(fr));
        }
        bytes = scanFrames(buf, false).bytes;
        for (const rec of recs) {
          this.keep(rec);
          if (this.form && rec.value !== null) this.partial.add(rec);
        }
      }
      const fd = openSync(path, 'r+');
      if (bytes < buf.length) ftruncateSync(fd, bytes);
      this.segments.push({ baseOffset: f.baseOffset, endOffset: f.baseOffset + count, path, fd, explicit: false, bytes });
      this.end = f.baseOffset + count;
    }
    if (this.records.length === 0) this.memBase = this.end;
    else this.memBase = this.records[0].offset;
  }

  private recordOf(f: RawFrame): InRecord {
    const value = f.value === null ? null : this.readValue(f.value);
    return { topic: this.topic, partition: this.partition, offset: f.offset, key: f.key, value, timestamp: f.timestamp };
  }

  private keep(rec: InRecord): void {
    if (this.compacted) return;
    if (this.records.length === 0) this.memBase = rec.offset;
    this.records.push(rec);
  }

  /** The latest record per key of a compacted topic, read from the segment files. */
  rows(): Map<string, InRecord> {
    const table = new Map<string, InRecord>();
    this.eachFrame(0, Infinity, (f) => applyRow(table, this.recordOf(f)));
    return table;
  }

  /** Every frame with an offset in [from, to), from the files, in order. */
  private eachFrame(from: number, to: number, fn: (f: RawFrame) => void): void {
    this.flush();
    for (const seg of [...this.segments]) {
      if (seg.endOffset <= from || seg.baseOffset >= to) continue;
      for (const f of fileFrames(seg.path, seg, seg.bytes)) {
        if (f.offset >= to) break;
        if (f.offset >= from) fn(f);
      }
    }
  }

  /**
   * A compacted topic's records in [from, to) with their values as stored bytes (not decoded),
   * in batches of up to `batch`, each awaited before the next (a store restore).
   */
  async readRaw(from: number, to: number, batch: number, onBatch: (recs: Array<{ offset: number; key: string; value: Buffer | null }>) => Promise<void>): Promise<void> {
    this.flush();
    for (const seg of [...this.segments]) {
      if (seg.endOffset <= from || seg.baseOffset >= to) continue;
      await this.readSegmentRaw(seg, from, to, batch, onBatch);
    }
  }

  private async readSegmentRaw(seg: Segment, from: number, to: number, batch: number, onBatch: (recs: Array<{ offset: number; key: string; value: Buffer | null }>) => Promise<void>): Promise<void> {
    let out: Array<{ offset: number; key: string; value: Buffer | null }> = [];
    for (const f of fileFrames(seg.path, seg, seg.bytes)) {
      if (f.offset >= to) break;
      if (f.offset < from) continue;
      out.push({ offset: f.offset, key: f.key, value: f.value });
      if (out.length >= batch) {
        await onBatch(out);
        out = [];
      }
    }
    if (out.length) await onBatch(out);
  }

  /**
   * readRaw, but a segment wholly inside [from, to) is handed on a window of whole frames at a
   * time, as read (runtime/changelog.ts ChangelogFrames: a rebuild's sort thread parses them);
   * a segment only partly inside, as records. The last window is marked.
   */
  async readFrames(
    from: number, to: number, batch: number,
    onFrames: (f: ChangelogFrames) => Promise<void>, onBatch: (recs: Array<{ offset: number; key: string; value: Buffer | null }>) => Promise<void>,
  ): Promise<void> {
    this.flush();
    // One window held back, so the last can be marked as such.
    let held: ChangelogFrames | null = null;
    for (const seg of [...this.segments]) {
      if (seg.endOffset <= from || seg.baseOffset >= to) continue;
      if (seg.baseOffset >= from && seg.endOffset <= to) {
        for (const w of fileWindows(seg.path, seg, seg.bytes)) {
          if (held) await onFrames(held);
          held = { buf: w.buf, explicit: seg.explicit, count: w.count, last: false };
        }
        continue;
      }
      if (held) await onFrames(held);
      held = null;
      await this.readSegmentRaw(seg, from, to, batch, onBatch);
    }
    if (held) await onFrames({ ...held, last: true });
  }

  /** Clean the closed segments of a compacted topic (runtime/log-segments.ts); true if it did. */
  async clean(now: number): Promise<boolean> {
    if (!this.compacted || this.segments.length < 2) return false;
    const closed = this.segments.slice(0, -1);
    const r = await cleanSegmentsOffThread(this.dir, closed, { now, tombstoneRetentionMs: TOMBSTONE_RETENTION_MS, mapCapacity: CLEANER_MAP_KEYS });
    if (!r) return false;
    const replaced = r.replaced;
    const at = this.segments.indexOf(replaced[0]);
    this.segments.splice(at, replaced.length, { ...r.cleaned, fd: -1 });
    for (const seg of replaced) {
      if (seg.fd >= 0) closeSync(seg.fd);
      unlinkSync(seg.path);
    }
    return true;
  }

  /** Append in memory (readable at once); the bytes reach the segment file at the next flush(). */
  append(key: string, value: unknown, timestamp: number): InRecord {
    const seg = this.writableSegment();
    if (this.pendingSeg !== seg) {
      this.flush();
      this.pendingSeg = seg;
      this.pendingPos = seg.bytes;
    }
    const keyLen = Buffer.byteLength(key, 'utf8');
    const headLen = 16 + keyLen;
    let chunk = this.chunk;
    if (chunk === null || chunk.length - this.chunkPos < headLen + MIN_CHUNK_ROOM) chunk = this.nextChunk(headLen + MIN_CHUNK_ROOM);
    let at = this.chunkPos;
    let end = at + headLen;
    if (value !== null) {
      const stored = this.form ? this.form.toDisk(value) : value;
      end = this.type.encode(stored, chunk, at + headLen);
      if (end < 0) {
        // Did not fit: avsc says how many bytes were missing. Again in a chunk with room for it.
        chunk = this.nextChunk(chunk.length - end - at);
        at = 0;
        end = this.type.encode(stored, chunk, headLen);
      }
    }
    const valueLen = end - at - headLen;
    chunk.writeUInt32LE(12 + keyLen + valueLen, at);
    chunk.writeUInt32LE(keyLen, at + 4);
    chunk.write(key, at + 8, keyLen, 'utf8');
    chunk.writeDoubleLE(timestamp, at + 8 + keyLen);
    this.chunkPos = end;
    seg.bytes += headLen + valueLen;
    seg.endOffset++;
    const rec: InRecord = { topic: this.topic, partition: this.partition, offset: this.end++, key, value, timestamp };
    this.keep(rec);
    return rec;
  }

  /**
   * A chunk with room for at least `need` bytes; the current one's frames go to `pending`. Each
   * new chunk is twice the last (up to CHUNK_MAX_BYTES, or just what one frame needs), so a
   * partition of page bodies soon has a chunk that holds a turn's pages, reused turn after turn.
   */
  private nextChunk(need: number): Buffer {
    const last = this.chunk;
    if (last !== null && this.chunkPos > 0) this.pending.push(last.subarray(0, this.chunkPos));
    const grown = last === null ? CHUNK_START_BYTES : Math.min(CHUNK_MAX_BYTES, 2 * last.length);
    this.chunk = Buffer.allocUnsafeSlow(Math.max(grown, need));
    this.chunkPos = 0;
    return this.chunk;
  }

  /** Write the pending frames; true if there were any. */
  flush(): boolean {
    if (this.chunk !== null && this.chunkPos > 0) this.pending.push(this.chunk.subarray(0, this.chunkPos));
    // Written synchronously below, so the chunk is free again for the next frames.
    this.chunkPos = 0;
    if (this.pending.length === 0 || !this.pendingSeg) return false;
    const bufs = this.pending;
    const seg = this.pendingSeg;
    this.pending = [];
    this.pendingSeg = null;
    // Positional: a segment reopened after a restart has its fd at 0 (opened r+ to cut a torn tail).
    const total = bufs.reduce((n, b) => n + b.length, 0);
    const written = writevSync(seg.fd, bufs, this.pendingPos);
    if (written < total) {
      const rest = Buffer.concat(bufs).subarray(written);
      for (let off = 0; off < rest.length; ) off += writeSync(seg.fd, rest, off, rest.length - off, this.pendingPos + written + off);
    }
    return true;
  }

  private writableSegment(): Segment {
    const last = this.segments[this.segments.length - 1];
    if (last && !last.explicit && last.bytes < this.segmentBytes) return last;
    const path = join(this.dir, `${String(this.end).padStart(20, '0')}.seg`);
    const fd = openSync(path, 'a+');
    const seg: Segment = { baseOffset: this.end, endOffset: this.end, path, fd, bytes: fstatSync(fd).size, explicit: false };
    this.segments.push(seg);
    return seg;
  }

  read(from: number, max: number): InRecord[] {
    const start = Math.max(from, this.memBase) - this.memBase;
    const out = this.records.slice(start, start + max);
    if (this.partial.size > 0) {
      for (const rec of out) {
        if (!this.partial.has(rec)) continue;
        rec.value = this.form!.fromDisk(rec.value);
        this.partial.delete(rec);
      }
    }
    return out;
  }

  /** Drop what every group has consumed: from memory, and whole segments from disk. */
  trim(below: number, keepOnDisk = false, minDrop = 1): void {
    if (this.compacted) return;
    if (below - this.memBase >= minDrop) {
      const n = Math.min(below - this.memBase, this.records.length);
      const dropped = this.records.splice(0, n);
      if (this.partial.size > 0) for (const rec of dropped) this.partial.delete(rec);
      this.memBase += n;
    }
    // Files too, even when memory was trimmed already (at each commit): returning early here left
    // every consumed segment of crawl.links on disk, 4.7 GB of them in a 50M-URL run, all read
    // back into memory at the next start.
    while (!keepOnDisk && this.segments.length > 1 && this.segments[1].baseOffset <= below) {
      const seg = this.segments.shift()!;
      if (seg.fd >= 0) closeSync(seg.fd);
      unlinkSync(seg.path);
    }
  }

  close(): void {
    this.flush();
    for (const s of this.segments) if (s.fd >= 0) closeSync(s.fd);
    this.segments = [];
  }
}

export interface FileLogOptions {
  dir: string;
  partitions: number;
  /**
   * Per topic, a shorter form to write to disk while the whole value stays in memory, and how
   * a value read back from disk (after a restart) is made whole when it is first read. The
   * embedded crawl writes crawl.fetched without the page body, which its WARC file already
   * holds (cli/embedded.ts).
   */
  diskForms?: Partial<Record<TopicId, DiskForm>>;
  /** Segment files are closed (and a compacted topic's become cleanable) at this size (64 MiB, or the topic's journalSegmentBytes). */
  segmentBytes?: number;
}

export interface DiskForm {
  toDisk(value: unknown): unknown;
  fromDisk(value: unknown): unknown;
}

/** Committed offsets of one consumer group: topic -> partition -> next offset to read. */
export type GroupOffsets = Partial<Record<TopicId, number[]>>;

export class FileLog extends EventEmitter {
  private readonly logs = new Map<TopicId, PartitionLog[]>();
  private readonly groups = new Map<string, GroupOffsets>();
  /** Each group's journal stays open for appending: opening and closing it for every turn's commits cost more than the write. */
  private readonly journals = new Map<string, number>();
  readonly partitions: number;

  constructor(private readonly opts: FileLogOptions) {
    super();
    this.setMaxListeners(100);
    this.partitions = opts.partitions;
    mkdirSync(join(opts.dir, 'offsets'), { recursive: true });
    // What every group has committed, before any segment is read: consumed records stay on disk.
    const groups = new Set(readdirSync(join(opts.dir, 'offsets')).map((f) => f.replace(/\.(json|log)$/, '')).filter((g) => !g.endsWith('.tmp')));
    const offsets = [...groups].map((g) => this.committed(g));
    for (const [id, spec] of Object.entries(topics) as Array<[TopicId, TopicSpec]>) {
      const type = avroType(spec.valueSchema);
      const parts: PartitionLog[] = [];
      const readers = offsets.filter((g) => g[id]);
      for (let p = 0; p < opts.partitions; p++) {
        const consumed = readers.length ? Math.min(...readers.map((g) => g[id]![p] ?? 0)) : 0;
        parts.push(new PartitionLog(id, p, join(opts.dir, 'topics', spec.name, String(p)), type, avroReader(spec.valueSchema), spec.cleanupPolicy === 'compact', opts.diskForms?.[id], opts.segmentBytes ?? spec.journalSegmentBytes, consumed));
      }
      this.logs.set(id, parts);
    }
  }

  private partitionLogs(topic: TopicId): PartitionLog[] {
    return this.logs.get(topic)!;
  }

  /**
   * Append records (routed by host) and wake consumers. The bytes are written at the end of the
   * event-loop turn, always before any offset committed in that turn (flushCommits), so a
   * crash loses records only together with the commits that depended on them.
   */
  append(records: readonly OutRecord[], now = Date.now()): void {
    if (records.length === 0) return;
    const appended = new Array<InRecord>(records.length);
    for (let i = 0; i < records.length; i++) {
      const r = records[i]!;
      const log = this.partitionLogs(r.topic)[partitionForHost(r.host, this.partitions)];
      appended[i] = log.append(r.key, r.value, now);
      this.dirty.add(log);
    }
    this.scheduleFlush();
    this.emit('append', appended);
  }

  private readonly dirty = new Set<PartitionLog>();

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flushCommits());
  }

  /** Write every partition's pending frames. */
  flush(): void {
    for (const log of this.dirty) log.flush();
    this.dirty.clear();
  }

  read(topic: TopicId, partition: number, from: number, max: number): InRecord[] {
    return this.partitionLogs(topic)[partition].read(from, max);
  }

  endOffset(topic: TopicId, partition: number): number {
    return this.partitionLogs(topic)[partition].end;
  }

  /** Records of `topic` the group has not committed yet, over all partitions (read or not). */
  lag(group: string, topic: TopicId): number {
    const done = this.committed(group)[topic];
    let n = 0;
    for (let p = 0; p < this.partitions; p++) n += this.endOffset(topic, p) - (done?.[p] ?? 0);
    return n;
  }

  /** Current rows of a compacted topic's partition, read from its files (small tables: host policy, opt-outs). */
  table(topic: TopicId, partition: number): TableRecord[] {
    return [...this.partitionLogs(topic)[partition].rows().values()].map((r) => ({ partition, key: r.key, value: r.value }));
  }

  /**
   * A compacted topic's records [from, to) of one partition with values as stored bytes, in
   * batches (the frontier's store restore: runtime/changelog.ts).
   */
  readRaw(topic: TopicId, partition: number, from: number, to: number, batch: number, onBatch: (recs: Array<{ offset: number; key: string; value: Buffer | null }>) => Promise<void>): Promise<void> {
    return this.partitionLogs(topic)[partition].readRaw(from, to, batch, onBatch);
  }

  /** readRaw with segments wholly inside the range handed on as frames (PartitionLog.readFrames). */
  readFrames(
    topic: TopicId, partition: number, from: number, to: number, batch: number,
    onFrames: (f: ChangelogFrames) => Promise<void>, onBatch: (recs: Array<{ offset: number; key: string; value: Buffer | null }>) => Promise<void>,
  ): Promise<void> {
    return this.partitionLogs(topic)[partition].readFrames(from, to, batch, onFrames, onBatch);
  }

  /** A compacted topic as a stage's changelog (runtime/changelog.ts). */
  changelog(topic: TopicId, batch = 4096): ChangelogSource {
    return {
      ends: async (partitions) => new Map(partitions.map((p) => [p, this.endOffset(topic, p)])),
      read: async (from, to, onBatch) => {
        for (const [p, start] of from) {
          const end = to.get(p) ?? start;
          if (end > start) await this.readRaw(topic, p, start, end, batch, (recs) => onBatch(p, recs));
        }
      },
      readFrames: async (from, to, onFrames, onBatch) => {
        for (const [p, start] of from) {
          const end = to.get(p) ?? start;
          if (end > start) await this.readFrames(topic, p, start, end, batch, (f) => onFrames(p, f), (recs) => onBatch(p, recs));
        }
      },
    };
  }

  /** The compaction pass running, if any. */
  compacting: Promise<number> | null = null;

  /**
   * Clean the closed segments of every compacted topic on disk, keeping the newest record of
   * each key (runtime/log-segments.ts). Resolves with the partitions cleaned; one pass at a time.
   */
  compact(now = Date.now()): Promise<number> {
    this.compacting ??= (async () => {
      let n = 0;
      try {
        for (const [id, spec] of Object.entries(topics) as Array<[TopicId, TopicSpec]>) {
          if (spec.cleanupPolicy !== 'compact') continue;
          for (const log of this.partitionLogs(id)) if (await log.clean(now)) n++;
        }
      } finally {
        this.compacting = null;
      }
      return n;
    })();
    return this.compacting;
  }

  committed(group: string): GroupOffsets {
    let g = this.groups.get(group);
    if (!g) {
      const base = join(this.opts.dir, 'offsets', group);
      g = existsSync(`${base}.json`) ? (JSON.parse(readFileSync(`${base}.json`, 'utf8')) as GroupOffsets) : {};
      // Commits since the last snapshot; a torn last line (a crash mid-write) is ignored.
      if (existsSync(`${base}.log`)) {
        for (const line of readFileSync(`${base}.log`, 'utf8').split('\n')) {
          try {
            const [t, p, o] = JSON.parse(line) as [TopicId, number, number];
            const arr = (g[t] ??= new Array<number>(this.partitions).fill(0));
            arr[p] = Math.max(arr[p] ?? 0, o);
          } catch {
            // an empty or torn line
          }
        }
      }
      this.groups.set(group, g);
    }
    return g;
  }

  /** Register a group's interest so nothing it has not read is trimmed. */
  subscribe(group: string, topicIds: readonly TopicId[]): GroupOffsets {
    const g = this.committed(group);
    for (const t of topicIds) g[t] ??= new Array<number>(this.partitions).fill(0);
    return g;
  }

  /**
   * Commit a group's position. Commits are appended to the group's offsets journal at the end
   * of the current turn of the event loop (one write for many commits), so a killed process
   * replays at most the records of its last moments, not a whole checkpoint interval.
   */
  commit(group: string, topic: TopicId, partition: number, next: number): void {
    const g = this.committed(group);
    const arr = (g[topic] ??= new Array<number>(this.partitions).fill(0));
    if (next <= arr[partition]) return;
    arr[partition] = next;
    this.trimConsumed(topic, partition);
    let list = this.pendingGroups.get(group);
    if (!list) this.pendingGroups.set(group, (list = []));
    list.push(`${JSON.stringify([topic, partition, next])}\n`);
    this.scheduleFlush();
  }

  private readonly pendingGroups = new Map<string, string[]>();
  private flushScheduled = false;

  private flushCommits(): void {
    this.flushScheduled = false;
    // Records first: a commit on disk must never point past records that are not.
    this.flush();
    for (const [group, lines] of this.pendingGroups) {
      if (!lines.length) continue;
      const data = Buffer.from(lines.join(''), 'utf8');
      const fd = this.journalFd(group);
      for (let at = 0; at < data.length; ) at += writeSync(fd, data, at, data.length - at);
    }
    this.pendingGroups.clear();
  }

  private journalFd(group: string): number {
    let fd = this.journals.get(group);
    if (fd === undefined) {
      fd = openSync(join(this.opts.dir, 'offsets', `${group}.log`), 'a');
      this.journals.set(group, fd);
    }
    return fd;
  }

  /**
   * Drop from memory the records of a partition every group reading it has committed. Done at
   * each commit, not only at checkpoints: a consumed record (a page with its body) then dies
   * young instead of surviving into the old generation until the next checkpoint.
   */
  private trimConsumed(topic: TopicId, partition: number): void {
    const parts = this.logs.get(topic);
    if (!parts) return;
    let below = Infinity;
    for (const g of this.groups.values()) {
      const arr = g[topic];
      if (arr) below = Math.min(below, arr[partition] ?? 0);
    }
    // In runs of 64: each trim moves the records still held down the array.
    if (below !== Infinity) parts[partition].trim(below, true, 64);
  }

  /** Snapshot every group's offsets atomically, empty their journals, then trim consumed data. */
  checkpoint(): void {
    this.flushCommits();
    for (const [group, offsets] of this.groups) {
      const base = join(this.opts.dir, 'offsets', group);
      writeFileSync(`${base}.json.tmp`, JSON.stringify(offsets));
      renameSync(`${base}.json.tmp`, `${base}.json`);
      // Opened for appending: the next commit lands at the start of the emptied journal.
      ftruncateSync(this.journalFd(group), 0);
    }
    for (const [topic, parts] of this.logs) {
      const readers = [...this.groups.values()].filter((g) => g[topic]);
      // A topic nobody reads here (the handoff copy) stays on disk, not in memory.
      if (readers.length === 0) parts.forEach((log) => log.trim(log.end, true));
      else parts.forEach((log, p) => log.trim(Math.min(...readers.map((g) => g[topic]![p] ?? 0))));
    }
  }

  close(): void {
    this.checkpoint();
    for (const fd of this.journals.values()) closeSync(fd);
    this.journals.clear();
    for (const parts of this.logs.values()) for (const l of parts) l.close();
  }
}
