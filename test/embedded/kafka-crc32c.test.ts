/**
 * Kafka mode's producer checksums record batches with the native CRC-32C (connectors/
 * kafka-crc32c.ts). Checked in a plain node process over the built connector (jest's module
 * registry ignores require.cache): the checksum kafkajs now uses equals kafkajs's own
 * JavaScript one on every input, and a record batch kafkajs encodes carries it. The broker
 * itself rejects a batch whose CRC is wrong, so the integration tests cover the wire too.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const ROOT = join(__dirname, '..', '..');

const script = `
const assert = require('node:assert');
const { randomBytes } = require('node:crypto');
require(${JSON.stringify(join(ROOT, 'dist', 'connectors', 'kafka.js'))});
// What the Kafka connector alone gave kafkajs (asked before anything else names the module).
const used = require('kafkajs/src/protocol/recordBatch/crc32C');
const { kafkaCrc32cImplementation } = require(${JSON.stringify(join(ROOT, 'dist', 'connectors', 'kafka-crc32c.js'))});
const reference = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js');
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0');
const Record = require('kafkajs/src/protocol/recordBatch/record/v0');
(async () => {
  assert.strictEqual(kafkaCrc32cImplementation(), 'native');
  assert.notStrictEqual(used, reference);
  const sizes = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 51200, 1 << 20];
  for (const n of sizes) for (let i = 0; i < 3; i++) {
    const b = randomBytes(n);
    assert.strictEqual(used(b), reference(b), 'size ' + n);
    assert.ok(used(b) >= 0);
  }
  // A slice in the middle of a bigger buffer (kafkajs passes encoder buffers).
  const big = randomBytes(4096);
  assert.strictEqual(used(big.subarray(13, 3001)), reference(big.subarray(13, 3001)));
  const records = [Record({ key: Buffer.from('k'), value: randomBytes(50000), offsetDelta: 0 }), Record({ key: Buffer.from('k2'), value: Buffer.from('v'), offsetDelta: 1 })];
  const batch = (await RecordBatch({ records, lastOffsetDelta: 1 })).buffer;
  // firstOffset int64, length int32, partitionLeaderEpoch int32, magic int8, then the CRC of what follows it.
  assert.strictEqual(batch.readUInt32BE(17), reference(batch.subarray(21)));
  process.stdout.write('ok');
})().catch((e) => { process.stderr.write(String(e && e.stack || e)); process.exit(1); });
`;

describe('native CRC-32C for kafkajs', () => {
  it("replaces kafkajs's JavaScript CRC-32C with the same checksum, used by its record batches", () => {
    const r = spawnSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('ok');
  });
});
