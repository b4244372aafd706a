/**
 * CPU per record of kafkajs's produce-request encoding, as Kafka mode produces: crawl.urls-like
 * records (a URL key, a 300-byte value) spread over 8 partitions, grouped by partition and
 * encoded as one LZ4-compressed request of 400 records. `lean` loads
 * connectors/kafka-lean-records.ts first; `plain` leaves kafkajs as it is. Each mode runs in a
 * process of its own (the module works through the module cache); run both and compare.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/kafka-encode-bench.js plain && node dist/bench/kafka-encode-bench.js lean
 */
import { median, processCpuMs } from './parser-floor';

const mode = process.argv[2];
if (mode !== 'plain' && mode !== 'lean') {
  process.stderr.write('usage: node dist/bench/kafka-encode-bench.js plain|lean [rounds]\n');
  process.exit(2);
}
if (mode === 'lean') {
  const { kafkaLeanRecordsInstalled } = require('../connectors/kafka-lean-records') as { kafkaLeanRecordsInstalled(): boolean };
  if (!kafkaLeanRecordsInstalled()) throw new Error('kafka-lean-records did not install');
}
require('../connectors/kafka-lz4');
const Long = require('kafkajs/src/utils/long') as { fromInt(n: number): unknown };
type Message = { key: string; value: Buffer; partition: number };
const produce = require('kafkajs/src/protocol/requests/produce/v3/request') as (a: object) => { encode(): Promise<unknown> };
const group = require('kafkajs/src/producer/groupMessagesPerPartition') as (a: object) => Record<string, Message[]>;
const { CompressionTypes } = require('kafkajs') as { CompressionTypes: { LZ4: number } };

const ROUNDS = Number(process.argv[3] ?? 5);
const REQUESTS = 300;
const value = Buffer.alloc(300, 7);
const messages: Message[] = Array.from({ length: 400 }, (_, i) => ({ key: `http://127.1.${i & 255}.${i >> 8}:8080/p/${i * 7919}`, value, partition: i % 8 }));
const partitioner = ({ message }: { message: Message }): number => message.partition;

async function main(): Promise<void> {
  const perRecord: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = processCpuMs();
    for (let n = 0; n < REQUESTS; n++) {
      const byPartition = group({ topic: 'crawl.urls', partitionMetadata: [{}], messages, partitioner });
      const partitions = Object.keys(byPartition).map((p) => ({ partition: Number(p), messages: byPartition[p] }));
      const req = produce({
        acks: -1, timeout: 30_000, compression: CompressionTypes.LZ4, topicData: [{ topic: 'crawl.urls', partitions }],
        transactionalId: null, producerId: Long.fromInt(-1), producerEpoch: 0,
      });
      await req.encode();
    }
    perRecord.push(((processCpuMs() - c0) * 1000) / (REQUESTS * messages.length));
  }
  process.stdout.write(`${mode}: ${median(perRecord).toFixed(2)} µs CPU a record (median of ${ROUNDS} rounds of ${REQUESTS} requests of ${messages.length} records)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
