/**
 * The changelog a stage's local store is a copy of (Stage.changelog: the frontier's crawl.urls),
 * as the runtimes hand it to Stage.restoreChangelog: end offsets now, and records of a range
 * with their values as stored bytes, so a restore copies rows without decoding them.
 */

/** One record: its key and value as crawl's Avro bytes without any wire header (null: tombstone). */
export interface ChangelogRecord {
  offset: number;
  key: string;
  value: Buffer | null;
}

export interface ChangelogSource {
  /** The next offset each partition will be written at (its end), now. */
  ends(partitions: readonly number[]): Promise<Map<number, number>>;
  /** Records [from, to) of each partition, in offset order, in batches; resolves when all are read. */
  read(from: ReadonlyMap<number, number>, to: ReadonlyMap<number, number>, onBatch: (partition: number, recs: ChangelogRecord[]) => Promise<void>): Promise<void>;
}
