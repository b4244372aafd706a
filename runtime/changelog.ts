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

/**
 * Whole frames of one partition's journal as its segment files hold them (runtime/log-segments.ts:
 * `[u32 len][u32 keyLen][key][f64 ts][value]`, with the offset after the length when `explicit`;
 * an empty value is a tombstone), every one inside the range asked for, in offset order.
 */
export interface ChangelogFrames {
  /** The frames (a view from the start of a buffer read for them alone). */
  buf: Buffer;
  explicit: boolean;
  /** Frames in `buf`. */
  count: number;
  /** Nothing of the partition's range follows. */
  last: boolean;
}

export interface ChangelogSource {
  /** The next offset each partition will be written at (its end), now. */
  ends(partitions: readonly number[]): Promise<Map<number, number>>;
  /** Records [from, to) of each partition, in offset order, in batches; resolves when all are read. */
  read(from: ReadonlyMap<number, number>, to: ReadonlyMap<number, number>, onBatch: (partition: number, recs: ChangelogRecord[]) => Promise<void>): Promise<void>;
  /**
   * The embedded journal only: as `read`, but a segment file's frames wholly inside the range
   * are handed on as read (`onFrames`: no record decoded), the rest as records (`onBatch`).
   */
  readFrames?(
    from: ReadonlyMap<number, number>, to: ReadonlyMap<number, number>,
    onFrames: (partition: number, frames: ChangelogFrames) => Promise<void>, onBatch: (partition: number, recs: ChangelogRecord[]) => Promise<void>,
  ): Promise<void>;
}
