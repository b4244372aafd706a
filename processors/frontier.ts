/**
 * frontier: owns the URL table and the per-host politeness of its partitions.
 * In: crawl.frontier (candidates), crawl.fetch-status (answers). Out: crawl.fetch (leases),
 * crawl.urls (table rows), crawl.host-policy (field `backoff`: each owned host's adapted pace),
 * crawl.feeds (the feeds it polls). State is rebuilt from crawl.urls, crawl.feeds and the owned
 * hosts' `backoff` rows before any fetch is released; operator blocks, crawl-rate ceilings and
 * webmasters' rates come from the whole crawl.host-policy table, and opt-outs from crawling from
 * the whole crawl.optout registry (a denied host gets no lease).
 */
import { HostPolicyTable, hostPolicyKey } from '../lib/host-policy';
import type { CandidateMsg, FeedStateMsg, FetchStatusMsg, HostPolicyMsg, OptOutMsg, UrlStateMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import type { FollowsOptOuts } from '../runtime/registry-report';
import type { OutRecord, Stage, StageContext, TableRecord } from '../runtime/stage';
import { expandCandidate } from '../lib/link-groups';
import { partitionForHost } from '../lib/partitioner';
import { FrontierState, type FrontierEmits, type FrontierPolicy, type FrontierTuning } from './frontier-state';

/**
 * Records the frontier may take at once. Its handler is synchronous (a few microseconds a URL),
 * so this does not overlap anything: it is how many records run per turn of the event loop
 * before the stage's time slice applies (runtime/time-slice.ts). With one at a time, a crawl of
 * 5,000 hosts at about 1,000 pages a second gave it 2,200 of the 3,700 candidate groups that
 * arrived each second, and the rest waited in memory (61,000 records after 40 s, growing); with
 * 256, the backlog stayed in the hundreds, 5,000 at most, over 50 s.
 */
export const FRONTIER_RECORDS_AT_ONCE = 256;

function toRecords(e: FrontierEmits): OutRecord[] {
  const out: OutRecord[] = [];
  // The table row goes first: a crash between the two leaves a LEASED row whose lease
  // expires and is re-issued, never a fetch the table does not know about.
  for (const r of e.rows) out.push({ topic: 'urls', key: r.url, host: r.host, value: r });
  // Back-off before any further fetch, so a restart never forgets a Retry-After window.
  for (const p of e.policies ?? []) out.push({ topic: 'hostPolicy', key: hostPolicyKey(p.host, p.field), host: p.host, value: p });
  for (const f of e.feeds ?? []) out.push({ topic: 'feeds', key: f.url, host: f.host, value: f.value });
  for (const f of e.fetches) out.push({ topic: 'fetch', key: f.host, host: f.host, value: f });
  return out;
}

export interface FrontierStage extends Stage, FollowsOptOuts {
  readonly state: FrontierState;
  idle(): boolean;
}

export function frontierStage(
  policy: FrontierPolicy & Partial<FrontierTuning>,
  opts: { partitions: number; tickMs?: number; now?: () => number },
): FrontierStage {
  const table = new HostPolicyTable();
  const optout = new OptOutRegistry();
  const state = new FrontierState(policy, undefined, table, optout);
  const now = opts.now ?? Date.now;
  return {
    id: 'frontier',
    inputs: ['frontier', 'fetchStatus'],
    outputs: ['fetch', 'urls', 'hostPolicy', 'feeds'],
    restoreFrom: ['urls', 'hostPolicy', 'feeds'],
    globalTables: ['hostPolicy', 'optout'],
    tickMs: opts.tickMs ?? 50,
    concurrency: FRONTIER_RECORDS_AT_ONCE,
    state,
    optoutRegistry: optout,
    restore(rec: TableRecord, topic) {
      if (!rec.value) return;
      if (topic === 'urls') state.restore(rec.value as UrlStateMsg, now());
      else if (topic === 'feeds') state.restoreFeed(rec.key, rec.value as FeedStateMsg);
      else if (topic === 'hostPolicy' && (rec.value as HostPolicyMsg).field === 'backoff') state.restoreBackoff(rec.value as HostPolicyMsg, now());
    },
    onGlobal(rec: TableRecord, topic) {
      const bar = rec.key.indexOf('|');
      if (topic === 'optout') {
        optout.apply(rec.key, rec.value as OptOutMsg | null);
        // A subject's hosts are looked at again: a lifted opt-out of the host itself wakes it now.
        state.onPolicyChange(bar < 0 ? rec.key : rec.key.slice(0, bar), now());
        return;
      }
      // Our own `backoff` rows come back here too; they only feed `crawl explain`-style reads.
      table.apply(rec.key, rec.value as HostPolicyMsg | null);
      if (bar > 0) state.onPolicyChange(rec.key.slice(0, bar), now());
    },
    handle(rec) {
      if (rec.topic === 'frontier') {
        // A record holds a group of URLs of one host (lib/link-groups).
        const at = now();
        return expandCandidate(rec.value as CandidateMsg).flatMap((c) => toRecords(state.onCandidate(c, at)));
      }
      return toRecords(state.onStatus(rec.value as FetchStatusMsg, now()));
    },
    tick(_ctx: StageContext) {
      return toRecords(state.tick(now()));
    },
    assigned(partitions) {
      const owned = new Set(partitions);
      state.retain((host) => owned.has(partitionForHost(host, opts.partitions)));
      // Each frontier spends its partitions' share of the crawl's budget (processors/frontier-budget.ts).
      state.setBudgetFraction(owned.size / opts.partitions, now());
    },
    idle: () => state.idle(now()),
  };
}
