/**
 * kafkajs builds each produced record with a fresh 512-byte zero-filled Buffer, a Buffer per
 * varint (`Buffer.from([...])`) and 64-bit Long arithmetic for the timestamp delta, and groups a
 * request's messages by partition by copying the partition's array once per message (quadratic
 * in the messages of one partition). Kafka mode produces about 40 records a page; in its fetch
 * process the produce request's encoding took 14% of the CPU profile, and Buffer construction
 * alone 5%. This module gives kafkajs the same bytes for less:
 *   - a record (Record v0) is sized first and written into one Buffer of its exact length;
 *   - the Encoder's varints are written in place, and its growth skips zero-filling (every byte
 *     below `offset` is written before it is read; `buffer` ends at `offset`);
 *   - messages are grouped by partition in one pass.
 * Anything unusual (record headers, a timestamp delta that is not an integer within ±2^52, a key
 * or value that is neither a string nor a Buffer) takes kafkajs's own code.
 * test/embedded/kafka-lean-records.test.ts compares whole produce requests with kafkajs's, byte
 * for byte, in processes with and without this module.
 *
 * Like connectors/kafka-crc32c.ts it works through Node's module cache, so it must be loaded
 * before kafkajs loads its producer (connectors/kafka.ts imports it first). kafkajs 2.2.4 is its
 * last release; for any other version, or a path that moved, kafkajs keeps its own code:
 * `kafkaLeanRecordsInstalled()` tells.
 */
import Module from 'node:module';

const ENCODER = 'kafkajs/src/protocol/encoder.js';
const RECORD = 'kafkajs/src/protocol/recordBatch/record/v0/index.js';
const GROUP = 'kafkajs/src/producer/groupMessagesPerPartition.js';
const PRODUCE_V3 = 'kafkajs/src/protocol/requests/produce/v3/request.js';
const SEND_MESSAGES = 'kafkajs/src/producer/sendMessages.js';
const SUPPORTED_VERSION = '2.2.4';

type Bytes = Buffer | string | number | null | undefined;

interface RecordArgs {
  offsetDelta?: number;
  timestampDelta?: number;
  key?: Bytes;
  value?: Bytes;
  headers?: Record<string, unknown>;
}

/** What kafkajs's batch encoder reads of an encoded record (Encoder's `buf` and `buffer`). */
export class EncodedRecord {
  constructor(readonly buf: Buffer) {}
  get buffer(): Buffer {
    return this.buf;
  }
}

/** Bytes of an unsigned varint of a 32-bit value, as kafkajs's loop writes it. */
function uvarintSize(v: number): number {
  let n = 1;
  while ((v & 0xffffff80) !== 0) {
    n++;
    v >>>= 7;
  }
  return n;
}

function writeUVarint(buf: Buffer, at: number, v: number): number {
  while ((v & 0xffffff80) !== 0) {
    buf[at++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[at++] = v & 0x7f;
  return at;
}

const zigzag32 = (v: number): number => (v << 1) ^ (v >> 31);

/**
 * Integers whose ZigZag is exact in a double: |v| <= 2^52 gives at most 2^53 (about 142,000
 * years of milliseconds). Beyond, an odd ZigZag would round; kafkajs's Long code takes those.
 */
const leanLong = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && Math.abs(v) <= 2 ** 52;

/** ZigZag of a leanLong as a non-negative double. */
const zigzag64 = (v: number): number => (v >= 0 ? v * 2 : -v * 2 - 1);

function varlongSize(z: number): number {
  let n = 1;
  while (z >= 128) {
    n++;
    z = Math.floor(z / 128);
  }
  return n;
}

function writeVarlong(buf: Buffer, at: number, z: number): number {
  while (z >= 128) {
    buf[at++] = (z % 128) | 0x80;
    z = Math.floor(z / 128);
  }
  buf[at++] = z;
  return at;
}

const plain = (v: Bytes): v is Buffer | string | null | undefined => v == null || typeof v === 'string' || Buffer.isBuffer(v);
const byteLength = (v: Buffer | string | null): number => (v === null ? -1 : typeof v === 'string' ? Buffer.byteLength(v, 'utf8') : v.length);

function writeBytes(buf: Buffer, at: number, v: Buffer | string | null, len: number): number {
  at = writeUVarint(buf, at, zigzag32(len));
  if (v === null) return at;
  if (typeof v === 'string') return at + buf.write(v, at, len, 'utf8');
  v.copy(buf, at);
  return at + len;
}

/**
 * A record as kafkajs's Record v0 encodes it, or null where kafkajs's own code must do it
 * (headers, a timestamp delta that is not an integer within ±2^52, a key or value that is
 * neither a string nor a Buffer).
 */
export function leanRecord({ offsetDelta = 0, timestampDelta = 0, key, value, headers }: RecordArgs): EncodedRecord | null {
  if (headers && Object.keys(headers).length > 0) return null;
  if (!leanLong(timestampDelta)) return null;
  if (!plain(key) || !plain(value)) return null;
  const k = key ?? null;
  const v = value ?? null;
  const kLen = byteLength(k);
  const vLen = byteLength(v);
  const ts = zigzag64(timestampDelta);
  const body =
    1 + // attributes
    varlongSize(ts) +
    uvarintSize(zigzag32(offsetDelta)) +
    uvarintSize(zigzag32(kLen)) + Math.max(kLen, 0) +
    uvarintSize(zigzag32(vLen)) + Math.max(vLen, 0) +
    1; // no headers: varint 0
  const buf = Buffer.allocUnsafe(uvarintSize(zigzag32(body)) + body);
  let at = writeUVarint(buf, 0, zigzag32(body));
  buf[at++] = 0;
  at = writeVarlong(buf, at, ts);
  at = writeUVarint(buf, at, zigzag32(offsetDelta));
  at = writeBytes(buf, at, k, kLen);
  at = writeBytes(buf, at, v, vLen);
  buf[at++] = 0;
  if (at !== buf.length) throw new Error(`lean record: wrote ${at} of ${buf.length} bytes`);
  return new EncodedRecord(buf);
}

interface GroupArgs<M> {
  topic: string;
  partitionMetadata: unknown[];
  messages: M[];
  partitioner: (args: { topic: string; partitionMetadata: unknown[]; message: M }) => number;
}

/** kafkajs's groupMessagesPerPartition in one pass: partition -> its messages, in order. */
export function groupPerPartition<M>({ topic, partitionMetadata, messages, partitioner }: GroupArgs<M>): Record<number, M[]> {
  const out: Record<number, M[]> = {};
  if (partitionMetadata.length === 0) return out;
  for (const message of messages) (out[partitioner({ topic, partitionMetadata, message })] ??= []).push(message);
  return out;
}

interface EncoderProto {
  buf: Buffer;
  offset: number;
  ensureAvailable(n: number): void;
  writeUVarInt(v: number): EncoderProto;
  writeVarLong(v: unknown): EncoderProto;
}

function patchEncoder(proto: EncoderProto, nextPowerOfTwo: (n: number) => number): void {
  const writeVarLong = proto.writeVarLong;
  proto.ensureAvailable = function ensureAvailable(this: EncoderProto, length: number): void {
    if (this.offset + length <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(nextPowerOfTwo(this.offset + length));
    this.buf.copy(grown, 0, 0, this.offset);
    this.buf = grown;
  };
  proto.writeUVarInt = function writeUVarInt(this: EncoderProto, v: number): EncoderProto {
    this.ensureAvailable(5);
    this.offset = writeUVarint(this.buf, this.offset, v);
    return this;
  };
  proto.writeVarLong = function writeVarLongLean(this: EncoderProto, v: unknown): EncoderProto {
    if (!leanLong(v)) return writeVarLong.call(this, v);
    this.ensureAvailable(10);
    this.offset = writeVarlong(this.buf, this.offset, zigzag64(v));
    return this;
  };
}

/** Puts `exports` in the module cache at `path`, loaded or not; false if the path is unknown. */
function replaceModule(spec: string, exports: unknown): boolean {
  let path: string;
  try {
    path = require.resolve(spec);
  } catch {
    return false;
  }
  const m = require.cache[path] ?? new Module(path, module);
  m.filename = path;
  m.loaded = true;
  m.exports = exports;
  require.cache[path] = m;
  // Module loaders that keep their own registry (jest's) ignore require.cache: check.
  return (require(path) as unknown) === exports;
}

const loaded = (spec: string): boolean => {
  try {
    return require.cache[require.resolve(spec)] !== undefined;
  } catch {
    return true;
  }
};

let installed = false;

function install(): void {
  try {
    if ((require('kafkajs/package.json') as { version: string }).version !== SUPPORTED_VERSION) return;
    // Too late once kafkajs's producer holds the originals (someone loaded it first).
    if (loaded(PRODUCE_V3) || loaded(SEND_MESSAGES)) return;
    const Encoder = require(ENCODER) as { prototype: EncoderProto; nextPowerOfTwo(n: number): number };
    const kafkajsRecord = require(RECORD) as (a: RecordArgs) => unknown;
    const kafkajsGroup = require(GROUP) as unknown;
    const record = (a: RecordArgs): unknown => leanRecord(a) ?? kafkajsRecord(a);
    // All or nothing: a loader that took one replacement but not the other gets kafkajs's code back.
    if (!replaceModule(RECORD, record) || !replaceModule(GROUP, groupPerPartition)) {
      replaceModule(RECORD, kafkajsRecord);
      replaceModule(GROUP, kafkajsGroup);
      return;
    }
    patchEncoder(Encoder.prototype, (n) => Encoder.nextPowerOfTwo(n));
    installed = true;
  } catch {
    // kafkajs keeps its own code.
  }
}

install();

/** Whether kafkajs's producer encodes with this module in this process. */
export function kafkaLeanRecordsInstalled(): boolean {
  return installed;
}
