/**
 * The lean record encoder against kafkajs's own Record v0, record by record, at the edges of
 * every varint: offset deltas up to 2^31 - 1, timestamp deltas up to ±2^52, lengths at
 * the 7-bit boundaries. The whole-request comparison, with the module installed as the crawler
 * runs it, is test/embedded/kafka-lean-records.test.ts.
 */
import type * as Lean from '../../connectors/kafka-lean-records';

type KafkajsRecord = (a: object) => { buffer: Buffer };
// kafkajs's own Record v0 and Encoder, from a registry of their own, before the module below
// (which may replace them in this one) is loaded: the reference cannot be the code under test.
let kafkajsRecord!: KafkajsRecord;
jest.isolateModules(() => {
  kafkajsRecord = require('kafkajs/src/protocol/recordBatch/record/v0') as KafkajsRecord;
});
const { groupPerPartition, leanRecord } = require('../../connectors/kafka-lean-records') as typeof Lean;

describe('leanRecord', () => {
  const offsets = [0, 1, 63, 64, 8191, 8192, 2 ** 20, 2 ** 31 - 1];
  // ±2^52 is as far as the lean path goes (its ZigZag is exact in a double); beyond, kafkajs's code.
  const stamps = [0, 1, -1, 63, -64, 64, -65, 2 ** 31, -(2 ** 31), 2 ** 40 + 3, -(2 ** 40) - 3, 2 ** 52, -(2 ** 52), 2 ** 52 - 1, -(2 ** 52) + 1];
  const payloads: Array<Buffer | string | null> = [null, '', 'k', 'é中😀', Buffer.alloc(0), Buffer.alloc(63, 1), Buffer.alloc(64, 2), Buffer.alloc(8192, 3), 'x'.repeat(70_000)];

  it("writes kafkajs's bytes for every varint edge", () => {
    expect(kafkajsRecord.toString()).not.toContain('leanRecord');
    let n = 0;
    for (const offsetDelta of offsets) {
      for (const timestampDelta of stamps) {
        const key = payloads[n % payloads.length];
        const value = payloads[(n * 7 + 3) % payloads.length];
        n++;
        const lean = leanRecord({ offsetDelta, timestampDelta, key, value });
        expect(lean).not.toBeNull();
        expect(lean!.buffer.equals(kafkajsRecord({ offsetDelta, timestampDelta, key, value }).buffer)).toBe(true);
      }
    }
    expect(n).toBe(offsets.length * stamps.length);
  });

  it("leaves headers, non-integer timestamps and other value types to kafkajs", () => {
    expect(leanRecord({ key: 'k', value: 'v', headers: { h: 'x' } })).toBeNull();
    expect(leanRecord({ key: 'k', value: 'v', timestampDelta: 1.5 })).toBeNull();
    expect(leanRecord({ key: 'k', value: 'v', timestampDelta: 2 ** 52 + 1 })).toBeNull();
    expect(leanRecord({ key: 'k', value: 'v', timestampDelta: -Number.MAX_SAFE_INTEGER })).toBeNull();
    expect(leanRecord({ key: 'k', value: 7 })).toBeNull();
    expect(leanRecord({ key: 'k', value: 'v', headers: {} })).not.toBeNull();
  });
});

describe('groupPerPartition', () => {
  it('keeps each partition in message order, and gives nothing without partition metadata', () => {
    const messages = Array.from({ length: 50 }, (_, i) => ({ i, partition: (i * 7) % 5 }));
    const partitioner = ({ message }: { message: { partition: number } }): number => message.partition;
    const grouped = groupPerPartition({ topic: 't', partitionMetadata: [{}], messages, partitioner });
    expect(Object.keys(grouped).sort()).toEqual(['0', '1', '2', '3', '4']);
    for (const [p, list] of Object.entries(grouped)) {
      expect(list.every((m) => m.partition === Number(p))).toBe(true);
      expect(list.map((m) => m.i)).toEqual([...list.map((m) => m.i)].sort((a, b) => a - b));
    }
    expect(Object.values(grouped).flat()).toHaveLength(50);
    expect(groupPerPartition({ topic: 't', partitionMetadata: [], messages, partitioner })).toEqual({});
  });
});
