/**
 * Backpressure of the embedded crawl (`crawl run`). Its log holds every record not yet consumed
 * in memory, so a stage that produces faster than the next one consumes grows the process
 * without bound. Each rule holds a stage (it starts no new record; runtime/embedded-runner.ts
 * holdWhile) while the group reading its output has more than `max` records to go:
 *
 *   fetch     waits on parse     (crawl.fetched, CRAWL_PARSE_BACKLOG_MAX)
 *   parse     waits on seen-test (crawl.links,   CRAWL_STAGE_BACKLOG_MAX)
 *   seen-test waits on frontier  (crawl.frontier, CRAWL_STAGE_BACKLOG_MAX)
 *   fetch     waits on its WARC writer (withWarcBacklog: pages not yet compressed or stored)
 *
 * The frontier itself is never held: it is where the chain drains, so holds cannot wait on each
 * other in a circle. In Kafka mode backlogs wait on the brokers' disks; only fetch's rule
 * applies there (kafkaHoldRules, cli/kafka-commands.ts).
 */
import type { CrawlConfig } from '../lib/config';
import type { TopicId } from '../topologies/crawl';

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

/**
 * `holds` with fetch also held while the WARC writer has more than `warcMaxBytes` plus
 * WARC_BACKLOG_SLACK_BYTES waiting: a store slower than fetching (a busy disk, an S3 outage)
 * would otherwise leave every page fetched meanwhile in memory.
 */
export function withWarcBacklog(holds: Record<string, () => boolean>, warc: { readonly backlogBytes: number }, warcMaxBytes: number): Record<string, () => boolean> {
  const fetch = holds.fetch;
  const max = warcMaxBytes + WARC_BACKLOG_SLACK_BYTES;
  return { ...holds, fetch: () => warc.backlogBytes > max || (fetch?.() ?? false) };
}
