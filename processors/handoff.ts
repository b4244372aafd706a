/**
 * handoff: NEW and CHANGED indexable, distinct pages -> crawl.handoff.v3 events for the
 * indexer. Unchanged pages, noindex pages and duplicates (near_duplicate_of set by parse)
 * never appear. event_id is a hash of (url, fetched_at), so a consumer that sees an event
 * twice (at-least-once) can drop the copy.
 * In: crawl.parsed. Out: crawl.handoff.v3. Global table: crawl.optout.
 *
 * Usage flags come from the opt-out registry (lib/optout-registry.ts), which every handoff
 * instance follows whole: a change written by `crawl optout set` reaches the next events
 * within the global-table feed's delay (well under the 60 s promised), and each event carries
 * the registry version its flags were read from.
 *
 * importance is the page's `priority` (the OPIC-style score the frontier ranked it by, 1 for a
 * seed; carried FetchRequest -> FetchedPage -> ParsedPage), clamped to [0, 1]; null when unscored.
 */
import { createHash } from 'node:crypto';
import type { HandoffEvent, OptOutMsg, ParsedPageMsg } from '../lib/messages';
import { OptOutRegistry } from '../lib/optout-registry';
import type { FollowsOptOuts } from '../runtime/registry-report';
import type { OutRecord, Stage } from '../runtime/stage';

export interface UsagePolicy {
  usage(host: string): { search_index: boolean; ai_training: boolean; version: number };
}

export const ALLOW_ALL_USAGE: UsagePolicy = { usage: () => ({ search_index: true, ai_training: true, version: 0 }) };

/** The opt-out registry as a UsagePolicy. */
export function registryUsage(registry: OptOutRegistry): UsagePolicy {
  return {
    usage: (host) => ({
      search_index: registry.allows(host, 'search_index'),
      ai_training: registry.allows(host, 'ai_training'),
      version: registry.version,
    }),
  };
}

export function eventId(url: string, fetchedAt: number): string {
  return createHash('sha256').update(url).update('\n').update(String(fetchedAt)).digest('hex').slice(0, 32);
}

/** The event's importance: the page's priority clamped to [0, 1]; null when unknown (unscored, or not a number). */
export function importanceOf(priority: number | null | undefined): number | null {
  if (priority === null || priority === undefined || !Number.isFinite(priority)) return null;
  return Math.min(1, Math.max(0, priority));
}

export function toHandoff(p: ParsedPageMsg, policy: UsagePolicy): HandoffEvent | null {
  if (p.change === 'UNCHANGED' || p.noindex || p.near_duplicate_of) return null;
  const u = policy.usage(p.host);
  return {
    event_id: eventId(p.url, p.fetched_at),
    url: p.url,
    canonical_url: p.canonical_url,
    fetched_at: p.fetched_at,
    change: p.change,
    simhash64: p.simhash64,
    simhash_version: p.simhash_version ?? 1,
    language: p.language,
    importance: importanceOf(p.priority),
    usage: { search_index: u.search_index, ai_training: u.ai_training },
    usage_registry_version: u.version,
    warc: p.warc,
    text: p.text,
  };
}

/**
 * With a fixed `policy` (tests, tools) the stage follows no table; without one it follows
 * crawl.optout into its own registry.
 */
export function handoffStage(policy?: UsagePolicy): Stage & FollowsOptOuts {
  const registry = new OptOutRegistry();
  const usage = policy ?? registryUsage(registry);
  return {
    id: 'handoff',
    inputs: ['parsed'],
    outputs: ['handoff'],
    optoutRegistry: registry,
    ...(policy ? {} : { globalTables: ['optout'] as const }),
    onGlobal: (rec) => registry.apply(rec.key, rec.value as OptOutMsg | null),
    handle(rec): OutRecord[] {
      const ev = toHandoff(rec.value as ParsedPageMsg, usage);
      return ev ? [{ topic: 'handoff', key: rec.key, host: (rec.value as ParsedPageMsg).host, value: ev }] : [];
    },
  };
}
