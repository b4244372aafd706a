/**
 * connectors/kafka-lean-records.ts must leave kafkajs's bytes unchanged. Checked in plain node
 * processes over the built connector (jest's module registry ignores require.cache): one process
 * with kafkajs alone, one with the module loaded first, each encoding the same produce requests
 * (records of every size class of varint, string and Buffer keys and values, nulls, multi-byte
 * UTF-8, headers, timestamps before and after the batch's first, Long timestamps, and
 * LZ4-compressed batches) and grouping the same messages by partition. Both print what they
 * made, and the two outputs must be equal.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');
const LEAN = join(ROOT, 'dist', 'connectors', 'kafka-lean-records.js');
const LZ4 = join(ROOT, 'dist', 'connectors', 'kafka-lz4.js');

const script = (withLean: boolean): string => `
const { createHash } = require('node:crypto');
${withLean ? `const { kafkaLeanRecordsInstalled } = require(${JSON.stringify(LEAN)});` : ''}
require(${JSON.stringify(LZ4)});
const Long = require('kafkajs/src/utils/long');
const produce = require('kafkajs/src/protocol/requests/produce/v3/request');
const group = require('kafkajs/src/producer/groupMessagesPerPartition');
const { CompressionTypes } = require('kafkajs');
// Deterministic bytes and lengths (xorshift), the same in both processes.
let x = 2463534242;
const rnd = (n) => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x % n; };
const bytes = (n) => Buffer.from(Array.from({ length: n }, () => rnd(256)));
const sizes = [0, 1, 63, 64, 127, 128, 8191, 8192, 16383, 16384, 70000, 2097152];
const strings = ['', 'k', 'ascii key', 'h\\u00e9t\\u00e9rog\\u00e8ne', '\\u4e2d\\u6587\\u7f51\\u9875', '\\ud83d\\ude00 emoji', 'x'.repeat(200)];
const messages = [];
for (const n of sizes) messages.push({ key: strings[rnd(strings.length)], value: bytes(n) });
for (const s of strings) messages.push({ key: bytes(rnd(40)), value: s });
messages.push({ key: null, value: bytes(10) }, { key: 'tombstone', value: null }, { key: null, value: null });
messages.push({ key: 'with-headers', value: bytes(5), headers: { a: 'b', c: [Buffer.from('d'), 'e'] } });
const out = { installed: ${withLean ? 'kafkaLeanRecordsInstalled()' : 'null'}, requests: [], groups: [] };
(async () => {
  const base = 1700000000000;
  const stamped = [
    messages.map((m, i) => ({ ...m, timestamp: String(base + i * 1000) })),
    messages.map((m, i) => ({ ...m, timestamp: String(base - i * 7777777) })),
    messages.map((m, i) => ({ ...m, timestamp: String(base + (i % 3) * 2 ** 33) })),
    // kafkajs sorts timestamps as strings: 13 digits come before 12, so these deltas are negative.
    messages.map((m, i) => ({ ...m, timestamp: String(i % 2 ? base : 999999999999 - i * 86400000) })),
    messages.map((m) => ({ ...m, timestamp: Long.fromNumber(base + 5) })),
  ];
  for (const compression of [CompressionTypes.None, CompressionTypes.LZ4]) {
    for (const msgs of stamped) {
      const topicData = [
        { topic: 'crawl.urls', partitions: [{ partition: 0, messages: msgs.slice(0, 12) }, { partition: 3, messages: msgs.slice(12) }] },
        { topic: 'crawl.fetched', partitions: [{ partition: 1, messages: msgs.slice(5, 9) }] },
      ];
      const req = produce({ acks: -1, timeout: 30000, compression, topicData, transactionalId: null, producerId: Long.fromInt(-1), producerEpoch: 0 });
      const buf = await req.encode();
      const bytesOut = Buffer.isBuffer(buf) ? buf : buf.buffer;
      out.requests.push(createHash('sha256').update(bytesOut).digest('hex') + ':' + bytesOut.length);
    }
  }
  const partitioner = ({ message }) => message.partition;
  const tagged = Array.from({ length: 500 }, (_, i) => ({ key: 'k' + i, partition: rnd(8) }));
  out.groups.push(JSON.stringify(group({ topic: 't', partitionMetadata: [{}], messages: tagged, partitioner })));
  out.groups.push(JSON.stringify(group({ topic: 't', partitionMetadata: [], messages: tagged, partitioner })));
  out.groups.push(JSON.stringify(group({ topic: 't', partitionMetadata: [{}], messages: [], partitioner })));
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

function run(withLean: boolean): { installed: boolean | null; requests: string[]; groups: string[] } {
  const r = spawnSync(process.execPath, ['-e', script(withLean)], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout);
}

describe('lean record encoding for kafkajs', () => {
  it("encodes produce requests and groups messages exactly as kafkajs's own code", () => {
    const plain = run(false);
    const lean = run(true);
    expect(lean.installed).toBe(true);
    expect(plain.requests).toHaveLength(10);
    expect(new Set(plain.requests).size).toBe(10);
    expect(lean.requests).toEqual(plain.requests);
    expect(lean.groups).toEqual(plain.groups);
    expect(JSON.parse(plain.groups[0])).not.toEqual({});
  });
});
