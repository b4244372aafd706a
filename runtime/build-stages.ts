/**
 * The crawl topology as stages, built the same way for the embedded default and for Kafka
 * mode: only the connectors handed in differ.
 */
import type { HttpClient } from '../connectors/types';
import type { CrawlConfig } from '../lib/config';
import type { FetchOutcome, FetchStatusMsg } from '../lib/messages';
import type { HostPolicyTable } from '../lib/host-policy';
import type { WarcWriter } from '../lib/warc/writer';
import { fetchStage } from '../processors/fetch';
import { frontierStage } from '../processors/frontier';
import { handoffStage, type UsagePolicy } from '../processors/handoff';
import { parseStage } from '../processors/parse';
import { createParseAnalyzer } from '../processors/parse-pool';
import { seenTestStage, type SeenSet } from '../processors/seen-test';
import { MemoryBloom } from '../lib/bloom/memory';
import { bloomParams } from '../lib/bloom/sizing';
import { trapOptionsFrom } from '../lib/traps';
import { metrics, recordFetchStatus, setMetricSources, statusClass } from '../lib/metrics';
import { observeEmits } from './observe';
import { followsOptOuts, withRegistryReport } from './registry-report';
import type { Stage } from './stage';

export const STAGE_NAMES = ['seen-test', 'frontier', 'fetch', 'parse', 'handoff'] as const;
export type StageName = (typeof STAGE_NAMES)[number];

export interface StageDeps {
  config: CrawlConfig;
  http: HttpClient;
  warc: WarcWriter;
  /** parse's writer for WET-style text records (its own file prefix); absent: no text pointers. */
  textWarc?: WarcWriter;
  /** Hosts or registered domains to stay within; empty = no limit. */
  scope?: ReadonlySet<string>;
  seen?: SeenSet;
  usage?: UsagePolicy;
  onOutcome?: (outcome: FetchOutcome, status: number | null, reason: string | null) => void;
  /** Every crawl.fetch-status record fetch emits: the early one as a response arrives (`stored` false), then the final one. */
  onFetchStatus?: (status: FetchStatusMsg) => void;
  onReject?: (reason: string, url: string) => void;
  /** Where the frontier keeps its partitions' stores (default: config.stateDir). */
  frontierStateDir?: string;
  /**
   * Where parse keeps its partitions' duplicate stores (processors/dedup-store.ts); absent: its
   * duplicate tables live in the heap (tests, benches of parse alone).
   */
  parseStateDir?: string;
  /**
   * One host-policy view for seen-test, the frontier and fetch, or (absent) one each. `crawl run`
   * shares one: its stages see every crawl.host-policy row at the same moment (the runner hands
   * each append to all of them in turn), and each copy held every host's rows, about 15 MiB at
   * 50,000 hosts (docs/frontier-store.md). In Kafka mode each stage's consumer follows the topic
   * at its own pace, so each keeps its own.
   */
  hostPolicy?: HostPolicyTable;
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
      // The embedded default: the same Bloom filter code as Kafka mode's Redis one, over process memory.
      seenTestStage(deps.seen ?? new MemoryBloom(bloomParams(c.bloomExpectedUrls, c.bloomFalsePositiveRate, c.bloomMaxShardBytes)), {
        maxDepth: c.maxDepth, scope: deps.scope ?? new Set(), onReject, trapOptions: trapOptionsFrom(c), policy: deps.hostPolicy,
      }),
    frontier: () => {
      const stage = frontierStage(c, { partitions: c.partitions, stateDir: deps.frontierStateDir ?? c.stateDir, maxLeases: c.frontierMaxLeases, policy: deps.hostPolicy });
      setMetricSources({ classes: () => stage.state.classStats(Date.now()), feeds: () => stage.state.feeds.size });
      return stage;
    },
    fetch: () => {
      const stage = fetchStage({ http: deps.http, archive: (e, onBuilt) => deps.warc.append(e, onBuilt), config: c, onOutcome, policy: deps.hostPolicy });
      // Closing the fetch stage stores the open WARC file so waiting fetches are announced.
      const observed = observeEmits(stage, (o) => {
        if (o.topic !== 'fetchStatus') return;
        recordFetchStatus(o.value as FetchStatusMsg, c);
        deps.onFetchStatus?.(o.value as FetchStatusMsg);
      });
      // Fetches in flight sized by Little's law from observed rate and fetch time (lib/concurrency.ts).
      const autoConcurrency = c.fetchConcurrencyMax > 0 ? { min: c.fetchConcurrencyMin, max: c.fetchConcurrencyMax } : undefined;
      return { ...observed, autoConcurrency, close: () => deps.warc.flush() };
    },
    parse: () => {
      const text = deps.textWarc;
      const analyzer = createParseAnalyzer(c.parseThreads, c.userAgent);
      if (analyzer) setMetricSources({ parseAnalyzer: () => analyzer.backlog() });
      return parseStage({
        userAgent: c.userAgent, partitions: c.partitions, stateDir: deps.parseStateDir, archiveText: text && ((e, onBuilt) => text.append(e, onBuilt)), flushText: text && (() => text.flush()),
        analyzer,
      });
    },
    handoff: () => handoffStage(deps.usage),
  };
  // Stages that follow the opt-out registry report the version they have applied (metric and crawl.optout-applied).
  return names.map((n) => {
    const stage = make[n]();
    return followsOptOuts(stage) ? withRegistryReport(stage, c.optoutReportMs) : stage;
  });
}
