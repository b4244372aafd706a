/**
 * At-least-once commits for records that finish out of order, shared by both runners: per
 * topic-partition, the offsets started and not yet committed, in order. A partition's commit
 * advances only over the contiguous run of finished records at its head, so a record still
 * running (or being retried) holds back the commit of everything after it.
 */
interface Entry {
  offset: number;
  done: boolean;
}

export class InflightOffsets {
  private readonly lists = new Map<string, Entry[]>();
  /** Records started and not yet finished, over all partitions. */
  running = 0;

  /**
   * A record started. `finish` marks it finished and gives the partition's next offset to
   * commit, or -1 while an earlier record is unfinished. `abandon` stops counting it as running
   * but leaves it unfinished: its offset is never committed here (stopping, or the partition
   * moved), so the partition's next reader replays it.
   */
  start(topic: string, partition: number, offset: number): { finish(): number; abandon(): void } {
    const k = `${topic}/${partition}`;
    let list = this.lists.get(k);
    if (!list) this.lists.set(k, (list = []));
    const entry: Entry = { offset, done: false };
    list.push(entry);
    this.running++;
    return {
      finish: () => {
        entry.done = true;
        this.running--;
        let next = -1;
        while (list.length > 0 && list[0]!.done) next = list.shift()!.offset + 1;
        return next;
      },
      abandon: () => {
        this.running--;
      },
    };
  }
}
