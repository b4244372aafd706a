/**
 * At-least-once commits for records that finish out of order, shared by both runners: per
 * topic-partition, the offsets started and not yet committed, in order. A partition's commit
 * advances only over the contiguous run of finished records at its head, so a record still
 * running (or being retried) holds back the commit of everything after it.
 *
 * It also says which records this process already has (`has`): started and not abandoned, or
 * finished. A consumer reads a partition again from its last commit after its group
 * rebalances, and the broker's commit can lag the records finished (a commit that failed in a
 * broker outage, or results still waiting for a WARC file); the Kafka runner does not run those
 * records twice (in a crawl with a 27 s broker outage, 55 pages were fetched a second time
 * 35 s after the first because their fetch requests were read again).
 */
interface Entry {
  offset: number;
  done: boolean;
  abandoned: boolean;
}

interface Partition {
  /** Started and not yet committed past, in offset order. */
  list: Entry[];
  /** Every offset below this is finished (the next offset to commit). */
  finishedBelow: number;
}

export class InflightOffsets {
  private readonly parts = new Map<string, Partition>();
  /** Records started and not yet finished, over all partitions. */
  running = 0;

  /**
   * A record started. `finish` marks it finished and gives the partition's next offset to
   * commit, or -1 while an earlier record is unfinished. `abandon` stops counting it as running
   * but leaves it unfinished: its offset is never committed here (stopping, or the partition
   * moved), so the partition's next reader replays it.
   */
  start(topic: string, partition: number, offset: number): { finish(): number; abandon(): void } {
    const p = this.partition(topic, partition);
    const list = p.list;
    const entry: Entry = { offset, done: false, abandoned: false };
    list.push(entry);
    this.running++;
    return {
      finish: () => {
        entry.done = true;
        this.running--;
        let next = -1;
        while (list.length > 0 && list[0]!.done) next = list.shift()!.offset + 1;
        if (next > p.finishedBelow) p.finishedBelow = next;
        return next;
      },
      abandon: () => {
        entry.abandoned = true;
        this.running--;
      },
    };
  }

  /** Whether this process has the record already: finished, or started and not abandoned. */
  has(topic: string, partition: number, offset: number): boolean {
    const p = this.parts.get(`${topic}/${partition}`);
    if (!p) return false;
    if (offset < p.finishedBelow) return true;
    for (const e of p.list) if (e.offset === offset) return !e.abandoned;
    return false;
  }

  /**
   * A partition this process no longer owns: what it knew of it goes (a later owner's commits
   * may be behind or ahead of it). Records still running of it finish without committing.
   */
  forget(topic: string, partition: number): void {
    this.parts.delete(`${topic}/${partition}`);
  }

  private partition(topic: string, partition: number): Partition {
    const k = `${topic}/${partition}`;
    let p = this.parts.get(k);
    if (!p) this.parts.set(k, (p = { list: [], finishedBelow: -1 }));
    return p;
  }
}
