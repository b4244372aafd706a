/**
 * The crawl topology as stages, built the same way for the embedded default and for Kafka
 * mode: only the connectors handed in differ.
 */
import type { HttpClient } from '../connectors/types';
import type { CrawlConfig } from '../lib/config';
import type { FetchOutcome } from '../lib/messages';
import type { WarcWriter } from '../lib/warc/writer';
import { fetchStage } from '../processors/fetch';
import { frontierStage } from '../processors/frontier';
import { handoffStage, type UsagePolicy } from '../processors/handoff';
import { parseStage } from '../processors/parse';
import { ExactSeenSet, seenTestStage, type SeenSet } from '../processors/seen-test';
import { metrics, statusClass } from '../lib/metrics';
import type { Stage } from './stage';

export const STAGE_NAMES = ['seen-test', 'frontier', 'fetch', 'parse', 'handoff'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

export interface StageDeps {
  config: CrawlConfig;
  http: HttpClient;
  warc: WarcWriter;
  /** Hosts or registered domains to stay within; empty = no limit. */
  scope?: ReadonlySet<string>;
  seen?: SeenSet;
  usage?: UsagePolicy;
  onOutcome?: (outcome: FetchOutcome, status: number | null, reason: string | null) => void;
  onReject?: (reason: string, url: string) => void;
}

export function buildStages(names: readonly StageName[], deps: StageDeps): Stage[] {
  const c = deps.config;
  const onOutcome: StageDeps['onOutcome'] = (outcome, status, reason) => {
    metrics.fetchOutcomes.inc({ outcome, status_class: statusClass(status) });
    deps.onOutcome?.(outcome, status, reason);
  };
  const onReject: StageDeps['onReject'] = (reason, url) => {
    metrics.linkRejections.inc({ reason });
    deps.onReject?.(reason, url);
  };
  const make: Record<StageName, () => Stage> = {
    'seen-test': () =>
      seenTestStage(deps.seen ?? new ExactSeenSet(), { maxDepth: c.maxDepth, scope: deps.scope ?? new Set(), onReject }),
    frontier: () => frontierStage(c, { partitions: c.partitions }),
    fetch: () => {
      const stage = fetchStage({ http: deps.http, archive: (e) => deps.warc.append(e), config: c, onOutcome });
      // Closing the fetch stage stores the open WARC file so waiting fetches are announced.
      return { ...stage, close: () => deps.warc.flush() };
    },
    parse: () => parseStage({ userAgent: c.userAgent }),
    handoff: () => handoffStage(deps.usage),
  };
  return names.map((n) => make[n]());
}
