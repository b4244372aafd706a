/**
 * handoff: NEW and CHANGED indexable pages -> crawl.handoff.v3 events for the indexer.
 * Unchanged pages and noindex pages never appear. event_id is a hash of (url, fetched_at), so
 * a consumer that sees an event twice (at-least-once) can drop the copy.
 * In: crawl.parsed. Out: crawl.handoff.v3.
 *
 * Usage flags come from the opt-out registry; until a registry is loaded (see the README's
 * status of the opt-out work) every page is usable and usage_registry_version is 0.
 */
import { createHash } from 'node:crypto';
import type { HandoffEvent, ParsedPageMsg } from '../lib/messages';
import type { OutRecord, Stage } from '../runtime/stage';

export interface UsagePolicy {
  usage(host: string): { search_index: boolean; ai_training: boolean; version: number };
}

export const ALLOW_ALL_USAGE: UsagePolicy = { usage: () => ({ search_index: true, ai_training: true, version: 0 }) };

export function eventId(url: string, fetchedAt: number): string {
  return createHash('sha256').update(url).update('\n').update(String(fetchedAt)).digest('hex').slice(0, 32);
}

export function toHandoff(p: ParsedPageMsg, policy: UsagePolicy): HandoffEvent | null {
  if (p.change === 'UNCHANGED' || p.noindex) return null;
  const u = policy.usage(p.host);
  return {
    event_id: eventId(p.url, p.fetched_at),
    url: p.url,
    canonical_url: p.canonical_url,
    fetched_at: p.fetched_at,
    change: p.change,
    simhash64: p.simhash64,
    language: p.language,
    importance: null,
    usage: { search_index: u.search_index, ai_training: u.ai_training },
    usage_registry_version: u.version,
    warc: p.warc,
    text: p.text,
  };
}

export function handoffStage(policy: UsagePolicy = ALLOW_ALL_USAGE): Stage {
  return {
    id: 'handoff',
    inputs: ['parsed'],
    outputs: ['handoff'],
    handle(rec): OutRecord[] {
      const ev = toHandoff(rec.value as ParsedPageMsg, policy);
      return ev ? [{ topic: 'handoff', key: rec.key, host: (rec.value as ParsedPageMsg).host, value: ev }] : [];
    },
  };
}
