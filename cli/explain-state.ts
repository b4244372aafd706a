/**
 * Read-only view of an embedded crawl's journaled tables (<out>/state), for `crawl explain`.
 * It parses the segment files itself instead of opening runtime/file-log.ts's FileLog, which
 * repairs torn tails on open and so must never run beside a live `crawl run`. The frame format
 * is the one documented in runtime/file-log.ts:
 *   [u32 frame length][u32 key length][key][f64 timestamp][avro value, or empty = tombstone]
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { avroReader } from '../lib/avro';
import { topics, type TopicId } from '../topologies/crawl';

/** Latest value per key of a compacted topic, across all partitions (tombstones remove). */
export function readJournaledTable<V>(stateDir: string, topic: TopicId): Map<string, V> {
  const spec = topics[topic];
  // Rows of an earlier release (before a field was added) read too (lib/avro avroReader).
  const read = avroReader(spec.valueSchema);
  const rows = new Map<string, V>();
  const base = join(stateDir, 'topics', spec.name);
  if (!existsSync(base)) return rows;
  for (const p of readdirSync(base).sort((a, b) => Number(a) - Number(b))) {
    const dir = join(base, p);
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.seg')).sort()) {
      const buf = readFileSync(join(dir, f));
      let pos = 0;
      while (pos + 4 <= buf.length) {
        const len = buf.readUInt32LE(pos);
        if (len < 12 || pos + 4 + len > buf.length) break; // torn tail of a live or killed run
        const frame = buf.subarray(pos + 4, pos + 4 + len);
        const keyLen = frame.readUInt32LE(0);
        const key = frame.toString('utf8', 4, 4 + keyLen);
        const value = frame.subarray(12 + keyLen);
        if (value.length === 0) rows.delete(key);
        else rows.set(key, read(value) as V);
        pos += 4 + len;
      }
    }
  }
  return rows;
}
