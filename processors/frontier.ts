/**
 * frontier: owns the URL table and the per-host politeness of its partitions.
 * In: crawl.frontier (candidates), crawl.fetch-status (answers). Out: crawl.fetch (leases),
 * crawl.urls (table rows). State is rebuilt from crawl.urls before any fetch is released.
 */
import type { CandidateMsg, FetchStatusMsg, UrlStateMsg } from '../lib/messages';
import type { OutRecord, Stage, StageContext, TableRecord } from '../runtime/stage';
import { partitionForHost } from '../lib/partitioner';
import { FrontierState, type FrontierEmits, type FrontierPolicy } from './frontier-state';

function toRecords(e: FrontierEmits): OutRecord[] {
  const out: OutRecord[] = [];
  // The table row goes first: a crash between the two leaves a LEASED row whose lease
  // expires and is re-issued, never a fetch the table does not know about.
  for (const r of e.rows) out.push({ topic: 'urls', key: r.url, host: r.host, value: r });
  for (const f of e.fetches) out.push({ topic: 'fetch', key: f.host, host: f.host, value: f });
  return out;
}

export interface FrontierStage extends Stage {
  readonly state: FrontierState;
  idle(): boolean;
}

export function frontierStage(
  policy: FrontierPolicy,
  opts: { partitions: number; tickMs?: number; now?: () => number },
): FrontierStage {
  const state = new FrontierState(policy);
  const now = opts.now ?? Date.now;
  return {
    id: 'frontier',
    inputs: ['frontier', 'fetchStatus'],
    outputs: ['fetch', 'urls'],
    restoreFrom: ['urls'],
    tickMs: opts.tickMs ?? 50,
    state,
    restore(rec: TableRecord) {
      if (rec.value) state.restore(rec.value as UrlStateMsg, now());
    },
    handle(rec) {
      if (rec.topic === 'frontier') return toRecords(state.onCandidate(rec.value as CandidateMsg, now()));
      return toRecords(state.onStatus(rec.value as FetchStatusMsg, now()));
    },
    tick(_ctx: StageContext) {
      return toRecords(state.tick(now()));
    },
    assigned(partitions) {
      const owned = new Set(partitions);
      state.retain((host) => owned.has(partitionForHost(host, opts.partitions)));
    },
    idle: () => state.idle(),
  };
}
