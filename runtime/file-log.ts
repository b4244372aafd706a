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
 */
import { closeSync, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync, writeSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import type * as avro from 'avsc';
import { avroReader, avroType } from '../lib/avro';
import { partitionForHost } from '../lib/partitioner';
import { topics, type TopicId, type TopicSpec } from '../topologies/crawl';
import type { InRecord, OutRecord, TableRecord } from './stage';

const SEGMENT_BYTES = 64 * 1024 * 1024;
/** Frame-building buffer of a partition log: its first size, and the most it grows to (below). */
const CHUNK_START_BYTES = 16 * 1024;
const CHUNK_MAX_BYTES = 1024 * 1024;
/** A chunk with less room than a head plus this is replaced rather than used for a small value. */
const MIN_CHUNK_ROOM = 512;

interface Segment {
  baseOffset: number;
  path: string;
  fd: number;
  bytes: number;
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
  /** Compacted topics: whether `table` is kept up to date (see forgetTable). */
  private tableInMemory = true;

  constructor(
    readonly topic: TopicId,
    readonly partition: number,
    private readonly dir: string,
    private readonly type: avro.Type,
    /** Decodes values written by this release or an earlier one (lib/avro avroReader). */
    private readonly readValue: (buf: Buffer) => unknown,
    private readonly compacted: boolean,
    private readonly form: DiskForm | undefined,
    /** For compacted topics: latest record per key. */
    readonly table: Map<string, InRecord> = new Map(),
  ) {
    mkdirSync(dir, { recursive: true });
    this.load();
  }

  private load(): void {
    const files = readdirSync(this.dir).filter((f) => f.endsWith('.seg')).sort();
    for (const f of files) {
      const baseOffset = Number(f.slice(0, -4));
      const path = join(this.dir, f);
      const buf = readFileSync(path);
      const { recs, bytes } = this.decodeFrames(buf, baseOffset);
      for (const rec of recs) {
        this.keep(rec);
        if (this.form && rec.value !== null && !this.compacted) this.partial.add(rec);
      }
      const fd = openSync(path, 'r+');
      if (bytes < buf.length) ftruncateSync(fd, bytes);
      this.segments.push({ baseOffset, path, fd, bytes });
      this.end = baseOffset + recs.length;
    }
    if (this.records.length === 0) this.memBase = this.end;
  }

  /** The whole frames of a segment's bytes, decoded, and where they end (a torn tail may follow). */
  private decodeFrames(buf: Buffer, baseOffset: number): { recs: InRecord[]; bytes: number } {
    const recs: InRecord[] = [];
    let pos = 0;
    while (pos + 4 <= buf.length) {
      const len = buf.readUInt32LE(pos);
      if (pos + 4 + len > buf.length || len < 12) break; // torn tail
      recs.push(this.decode(buf.subarray(pos + 4, pos + 4 + len), baseOffset + recs.length));
      pos += 4 + len;
    }
    return { recs, bytes: pos };
  }

  private decode(frame: Buffer, offset: number): InRecord {
    const keyLen = frame.readUInt32LE(0);
    const key = frame.toString('utf8', 4, 4 + keyLen);
    const timestamp = frame.readDoubleLE(4 + keyLen);
    const valueBuf = frame.subarray(12 + keyLen);
    const value = valueBuf.length === 0 ? null : this.readValue(valueBuf);
    return { topic: this.topic, partition: this.partition, offset, key, value, timestamp };
  }

  private keep(rec: InRecord): void {
    if (this.compacted) {
      if (this.tableInMemory) applyRow(this.table, rec);
      return;
    }
    if (this.records.length === 0) this.memBase = rec.offset;
    this.records.push(rec);
  }

  /**
   * Stop holding a compacted topic's latest rows in memory. Stages read a table once, when they
   * start (restoreFrom, globalTables), and follow its records as a stream after that; the table
   * kept for a later start (the drain after a stop) held an InRecord per URL of crawl.urls,
   * 150-200 bytes each beside the frontier's own row. `rows()` then reads it from the segments.
   */
  forgetTable(): void {
    if (!this.compacted) return;
    this.tableInMemory = false;
    this.table.clear();
  }

  /** The latest record per key of a compacted topic: from memory, or read from the segment files. */
  rows(): Map<string, InRecord> {
    if (this.tableInMemory) return this.table;
    this.flush();
    const table = new Map<string, InRecord>();
    for (const seg of this.segments) {
      for (const rec of this.decodeFrames(readFileSync(seg.path).subarray(0, seg.bytes), seg.baseOffset).recs) applyRow(table, rec);
    }
    return table;
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
    if (last && last.bytes < SEGMENT_BYTES) return last;
    const path = join(this.dir, `${String(this.end).padStart(20, '0')}.seg`);
    const fd = openSync(path, 'a+');
    const seg = { baseOffset: this.end, path, fd, bytes: fstatSync(fd).size };
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
    if (this.compacted || below - this.memBase < minDrop) return;
    const n = Math.min(below - this.memBase, this.records.length);
    const dropped = this.records.splice(0, n);
    if (this.partial.size > 0) for (const rec of dropped) this.partial.delete(rec);
    this.memBase += n;
    while (!keepOnDisk && this.segments.length > 1 && this.segments[1].baseOffset <= below) {
      const seg = this.segments.shift()!;
      closeSync(seg.fd);
      unlinkSync(seg.path);
    }
  }

  close(): void {
    this.flush();
    for (const s of this.segments) closeSync(s.fd);
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
    for (const [id, spec] of Object.entries(topics) as Array<[TopicId, TopicSpec]>) {
      const type = avroType(spec.valueSchema);
      const parts: PartitionLog[] = [];
      for (let p = 0; p < opts.partitions; p++) {
        parts.push(new PartitionLog(id, p, join(opts.dir, 'topics', spec.name, String(p)), type, avroReader(spec.valueSchema), spec.cleanupPolicy === 'compact', opts.diskForms?.[id]));
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

  /** Current rows of a compacted topic's partition. */
  table(topic: TopicId, partition: number): TableRecord[] {
    return [...this.partitionLogs(topic)[partition].rows().values()].map((r) => ({ partition, key: r.key, value: r.value }));
  }

  /** Stop holding compacted topics' rows in memory; table() reads them from disk from now on. */
  forgetTables(): void {
    for (const [id, spec] of Object.entries(topics) as Array<[TopicId, TopicSpec]>) {
      if (spec.cleanupPolicy === 'compact') for (const log of this.partitionLogs(id)) log.forgetTable();
    }
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
