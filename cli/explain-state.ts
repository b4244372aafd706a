/**
 * Read-only view of an embedded crawl's journaled tables (<out>/state), for `crawl explain`.
 * It parses the segment files itself instead of opening runtime/file-log.ts's FileLog, which
 * repairs torn tails on open and so must never run beside a live `crawl run`. The frame format
 * is the one documented in runtime/log-segments.ts (plain and cleaned segments).
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { avroReader } from '../lib/avro';
import type { UrlStateMsg } from '../lib/messages';
import { partitionForHost } from '../lib/partitioner';
import { UrlStore } from '../processors/frontier-store';
import { fileFrames, parseSegmentName, type RawFrame } from '../runtime/log-segments';
import { topics, type TopicId } from '../topologies/crawl';

/** The frames of one partition folder of the journal, its segment files in offset order. */
function* partitionFrames(dir: string): Generator<RawFrame, void, undefined> {
  const files = readdirSync(dir).map((f) => ({ f, seg: parseSegmentName(f) })).filter((x) => x.seg !== null).sort((a, b) => a.seg!.baseOffset - b.seg!.baseOffset);
  for (const { f, seg } of files) yield* fileFrames(join(dir, f), seg!);
}

/** Latest value per key of a compacted topic, across all partitions (tombstones remove). */
export function readJournaledTable<V>(stateDir: string, topic: TopicId): Map<string, V> {
  const spec = topics[topic];
  // Rows of an earlier release (before a field was added) read too (lib/avro avroReader).
  const read = avroReader(spec.valueSchema);
  const rows = new Map<string, V>();
  const base = join(stateDir, 'topics', spec.name);
  if (!existsSync(base)) return rows;
  for (const p of readdirSync(base).sort((a, b) => Number(a) - Number(b))) {
    // A torn tail of a live or killed run ends a segment's frames.
    for (const fr of partitionFrames(join(base, p))) {
      if (fr.value === null) rows.delete(fr.key);
      else rows.set(fr.key, read(fr.value) as V);
    }
  }
  return rows;
}

/**
 * A URL's row from an embedded crawl's state (<out>/state): from the frontier's store when it can
 * be opened (the crawl is not running), else from its partition of the journal, read frame by
 * frame keeping only that URL's latest record (a live `crawl run` holds its store's lock).
 */
export async function readUrlRow(stateDir: string, url: string, host: string): Promise<UrlStateMsg | null> {
  const base = join(stateDir, 'topics', topics.urls.name);
  if (!existsSync(base)) return null;
  const partitions = readdirSync(base).filter((d) => /^\d+$/.test(d)).length;
  const p = partitionForHost(host, partitions);
  const storeDir = join(stateDir, 'frontier', `urls-${p}`);
  if (existsSync(storeDir)) {
    try {
      const store = await UrlStore.open(storeDir, () => 0, { lockWaitMs: 0 });
      try {
        return (await store.rows([url]))[0] ?? null;
      } finally {
        await store.close();
      }
    } catch {
      // in use by a running crawl: the journal has every row too
    }
  }
  let latest: Buffer | null = null;
  for (const fr of partitionFrames(join(base, String(p)))) {
    if (fr.key === url) latest = fr.value === null ? null : Buffer.from(fr.value);
  }
  return latest === null ? null : (avroReader(topics.urls.valueSchema)(latest) as UrlStateMsg);
}
