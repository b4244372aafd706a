/** A changelog held in memory (tests of the frontier's stores and their restore). */
import type { UrlStateMsg } from '../../lib/messages';
import { partitionForHost } from '../../lib/partitioner';
import { encodeRow } from '../../processors/frontier-store';
import type { ChangelogRecord, ChangelogSource } from '../../runtime/changelog';

/** Records per partition, in order. */
export class MemoryChangelog implements ChangelogSource {
  readonly parts = new Map<number, ChangelogRecord[]>();

  constructor(private readonly partitions = 1) {}

  append(url: string, host: string, row: UrlStateMsg | null): void {
    const p = partitionForHost(host, this.partitions);
    let list = this.parts.get(p);
    if (!list) this.parts.set(p, (list = []));
    list.push({ offset: list.length, key: url, value: row === null ? null : encodeRow(row) });
  }

  async ends(partitions: readonly number[]): Promise<Map<number, number>> {
    return new Map(partitions.map((p) => [p, this.parts.get(p)?.length ?? 0]));
  }

  async read(from: ReadonlyMap<number, number>, to: ReadonlyMap<number, number>, onBatch: (partition: number, recs: ChangelogRecord[]) => Promise<void>): Promise<void> {
    for (const [p, start] of from) {
      const recs = (this.parts.get(p) ?? []).slice(start, to.get(p) ?? start);
      for (let i = 0; i < recs.length; i += 1000) await onBatch(p, recs.slice(i, i + 1000));
    }
  }
}

