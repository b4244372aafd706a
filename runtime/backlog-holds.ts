/**
 * Backpressure of the embedded crawl (`crawl run`). Its log holds every record not yet consumed
 * in memory, so a stage that produces faster than the next one consumes grows the process
 * without bound. Each rule holds a stage (it starts no new record; runtime/embedded-runner.ts
 * holdWhile) while the group reading its output has more than `max` records to go:
 *
 *   fetch     waits on parse     (crawl.fetched, CRAWL_PARSE_BACKLOG_MAX)
 *   parse     waits on seen-test (crawl.links,   CRAWL_STAGE_BACKLOG_MAX)
 *   seen-test waits on frontier  (crawl.frontier, CRAWL_STAGE_BACKLOG_MAX)
 *   fetch     waits on parse's bytes (withParseBacklogBytes, CRAWL_PARSE_BACKLOG_MAX_BYTES)
 *   fetch     waits on its WARC writer (withWarcBacklog: pages not yet compressed or stored)
 *
 * The frontier itself is never held: it is where the chain drains, so holds cannot wait on each
 * other in a circle. In Kafka mode backlogs wait on the brokers' disks; only fetch's rule
 * applies there (kafkaHoldRules, cli/kafka-commands.ts).
 */
import type { CrawlConfig } from '../lib/config';
import type { TopicId } from '../topologies/crawl';
import type { InRecord } from './stage';

export interface HoldRule {
  /** The stage held. */
  stage: string;
  /** The consumer group and topic whose lag holds it. */
  group: string;
  topic: TopicId;
  max: number;
}

/** The rules for a config; a limit of 0 turns its rule off. */
export function embeddedHoldRules(cfg: Pick<CrawlConfig, 'parseBacklogMax' | 'stageBacklogMax'>): HoldRule[] {
  const rules: HoldRule[] = [
    { stage: 'fetch', group: 'crawl.parse', topic: 'fetched', max: cfg.parseBacklogMax },
    { stage: 'parse', group: 'crawl.seen-test', topic: 'links', max: cfg.stageBacklogMax },
    { stage: 'seen-test', group: 'crawl.frontier', topic: 'frontier', max: cfg.stageBacklogMax },
  ];
  return rules.filter((r) => r.max > 0);
}

/**
 * The rules Kafka mode keeps: fetch's only. Pages fetched faster than they are parsed only grow a
 * backlog, and in one process they take the CPU parse needs; other backlogs wait on disk.
 */
export function kafkaHoldRules(cfg: Pick<CrawlConfig, 'parseBacklogMax' | 'stageBacklogMax'>): HoldRule[] {
  return embeddedHoldRules(cfg).filter((r) => r.stage === 'fetch');
}

/** The runner's holdWhile map: stage id -> whether it must wait now, from a lag reader. */
export function holdWhileOf(rules: readonly HoldRule[], lag: (group: string, topic: TopicId) => number): Record<string, () => boolean> {
  const out: Record<string, () => boolean> = {};
  for (const r of rules) out[r.stage] = () => lag(r.group, r.topic) > r.max;
  return out;
}

/**
 * Bytes a WARC writer may have waiting beyond its open file (WarcWriter.backlogBytes) before
 * fetch waits: room for one sealed file being stored (warcMaxBytes) and this much more.
 */
export const WARC_BACKLOG_SLACK_BYTES = 64 * 1024 * 1024;

/** `holds` with fetch also held while `also()` says so. */
function holdFetchAlso(holds: Record<string, () => boolean>, also: () => boolean): Record<string, () => boolean> {
  const fetch = holds.fetch;
  return { ...holds, fetch: () => also() || (fetch?.() ?? false) };
}

/**
 * `holds` with fetch also held while the WARC writer has more than `warcMaxBytes` plus
 * WARC_BACKLOG_SLACK_BYTES waiting: a store slower than fetching (a busy disk, an S3 outage)
 * would otherwise leave every page fetched meanwhile in memory.
 */
export function withWarcBacklog(holds: Record<string, () => boolean>, warc: { readonly backlogBytes: number }, warcMaxBytes: number): Record<string, () => boolean> {
  const max = warcMaxBytes + WARC_BACKLOG_SLACK_BYTES;
  return holdFetchAlso(holds, () => warc.backlogBytes > max);
}

/**
 * `holds` with fetch also held while the pages parse has still to parse hold more than `max`
 * bytes (`backlog`: an UncommittedBytes over crawl.fetched); 0 turns it off. A page of the
 * benchmark's real-page web waits as a gzipped record of about 55 KB, a lorem-ipsum page as 1.5 KB:
 * a count that leaves room enough for the one is hundreds of MB of the other.
 */
export function withParseBacklogBytes(holds: Record<string, () => boolean>, backlog: { readonly bytes: number }, max: number): Record<string, () => boolean> {
  return max > 0 ? holdFetchAlso(holds, () => backlog.bytes > max) : holds;
}

/**
 * Bytes of one topic's records that one group has not committed yet: each record's `sizeOf` is
 * counted when it is appended (`add`, for the embedded log's 'append' event) and let go once the
 * group's committed offset of its partition (`committed`) passes it. Records in the log before
 * counting began are not counted (a resumed crawl's backlog, read back from its WARC files only
 * as parse reaches it). `bytes` is read by the runner's holds every few milliseconds: it only
 * drops what was committed since the last read.
 */
export class UncommittedBytes {
  /** Per partition: offsets and sizes of the counted records not yet committed, oldest first from `head`. */
  private readonly parts: Array<{ offsets: number[]; sizes: number[]; head: number }>;
  private total = 0;

  constructor(
    readonly topic: TopicId,
    partitions: number,
    private readonly sizeOf: (value: unknown) => number,
    private readonly committed: (partition: number) => number,
  ) {
    this.parts = Array.from({ length: partitions }, () => ({ offsets: [], sizes: [], head: 0 }));
  }

  readonly add = (recs: readonly InRecord[]): void => {
    for (const r of recs) {
      if (r.topic !== this.topic || r.value === null) continue;
      const size = this.sizeOf(r.value);
      if (size <= 0) continue;
      const part = this.parts[r.partition];
      part.offsets.push(r.offset);
      part.sizes.push(size);
      this.total += size;
    }
  };

  get bytes(): number {
    for (let p = 0; p < this.parts.length; p++) {
      const part = this.parts[p];
      const done = this.committed(p);
      let h = part.head;
      while (h < part.offsets.length && part.offsets[h] < done) this.total -= part.sizes[h++];
      if (h === part.offsets.length) {
        part.offsets.length = 0;
        part.sizes.length = 0;
        h = 0;
      } else if (h > 1024 && h * 2 > part.offsets.length) {
        part.offsets.splice(0, h);
        part.sizes.splice(0, h);
        h = 0;
      }
      part.head = h;
    }
    return this.total;
  }
}
