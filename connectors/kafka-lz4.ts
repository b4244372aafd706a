/**
 * LZ4 for kafkajs, which ships no codec of its own for it (its CompressionTypes.LZ4 throws
 * "not implemented"): the LZ4 frame format of lz4-napi (lz4_flex), the one Kafka's Java client
 * and the broker write and read. Registered in kafkajs's codec table when this module loads;
 * connectors/kafka.ts loads it, so every process that produces to or consumes from the crawl's
 * topics reads and writes compressed batches. Which topics are compressed is declared in
 * topologies/crawl.ts (`compression`).
 *
 * Why: in Kafka mode every page body (50 KiB in the benchmark) is copied several times by
 * kafkajs's encoders, written to the broker, stored, and read back by parse, and 40 records a
 * page cross the broker. A compressed batch is copied, stored and sent at its compressed size.
 *
 * Synchronous calls: a batch is at most about 900 KiB of records (connectors/kafka.ts
 * MAX_REQUEST_BYTES) and compresses in well under a millisecond. With lz4-napi's asynchronous
 * calls each batch waited for the libuv thread pool, and kafkajs decodes a fetch response's
 * batches one after another: in a one-minute benchmark seen-test fell 89,000 of 120,000
 * crawl.links records behind, against 2,000 with these.
 */
import { CompressionCodecs, CompressionTypes } from 'kafkajs';
import { compressFrameSync, decompressFrameSync } from 'lz4-napi';

export interface Lz4Stats {
  /** Record batches compressed, and their bytes before and after. */
  compressed: number;
  bytesIn: number;
  bytesOut: number;
  /** Record batches decompressed (consumed). */
  decompressed: number;
}

const stats: Lz4Stats = { compressed: 0, bytesIn: 0, bytesOut: 0, decompressed: 0 };

/** What this process's LZ4 codec has done so far. */
export function lz4Stats(): Lz4Stats {
  return { ...stats };
}

/** One LZ4 frame of the bytes (what kafkajs's codec contract calls compress). */
export function lz4Compress(data: Buffer): Buffer {
  const out = compressFrameSync(data);
  stats.compressed += 1;
  stats.bytesIn += data.length;
  stats.bytesOut += out.length;
  return out;
}

/** The bytes of one LZ4 frame; throws on a corrupt or truncated frame. */
export function lz4Decompress(frame: Buffer): Buffer {
  const out = decompressFrameSync(frame);
  stats.decompressed += 1;
  return out;
}

CompressionCodecs[CompressionTypes.LZ4] = () => ({
  // kafkajs hands compress() its records' Encoder, whose `buffer` is the bytes written so far.
  compress: async (encoder: { buffer: Buffer }) => lz4Compress(encoder.buffer),
  decompress: async (buffer: Buffer) => lz4Decompress(buffer),
});
