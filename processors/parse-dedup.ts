/**
 * parse's duplicate decisions, pure over its state (lib/dedup.ts DedupIndex: tables on disk per
 * partition, copies of crawl.content, read synchronously; lib/dedup-trap.ts TrapDetector). Given what one page says, decide:
 *   - is it a duplicate of another URL of its host (same SHA-256, or SimHash within 3 bits)?
 *     Then it is recorded with near_duplicate_of and never handed off;
 *   - is a CHANGED page only a near-copy of its own last handed-off copy (a new footer, a date)?
 *     Then it is not handed off either, and its fingerprint stays the handed-off one, so small
 *     changes cannot drift the indexer's copy far from the page unnoticed;
 *   - the priority its links carry: an importance in [0, 1] (the scale of the frontier's front
 *     queues, processors/frontier-schedule.ts), cut for duplicates;
 *   - whether it completes a run of duplicates under one path prefix (a trap rule to emit);
 *   - the page's identity for handoff: a page whose bytes are what parse last recorded for its
 *     URL (the same fetch read again after a restart, or the URL fetched twice: a replayed or
 *     retried fetch request, a lease re-issued while its first fetch was still in flight) keeps
 *     the first copy's fetched_at, so its event has the same event_id and the indexer drops it;
 *     and a page its lease calls NEW although parse recorded other bytes for the URL before is
 *     CHANGED (the indexer had a NEW event for it already). crawl.content holds what this needs,
 *     so it holds across restarts and rebalances.
 */
import { DedupIndex, simhashVersionOf, type ContentRow } from '../lib/dedup';
import { TrapDetector } from '../lib/dedup-trap';
import { hostPolicyKey } from '../lib/host-policy';
import type { ContentMsg, HostPolicyMsg, ParsedPageMsg } from '../lib/messages';
import { hammingDistance } from '../lib/simhash';
import type { OutRecord } from '../runtime/stage';

/**
 * A page's links share its importance the OPIC way (more links, less each), damped by a square
 * root and floored, because the page's own cash is not known here (every page counts as 1):
 * the share only ranks links of link-heavy pages (hubs, listings) below those of focused pages.
 */
export const MIN_LINK_PRIORITY = 0.3;
/** A duplicate page's links get this fraction of the normal share: they mostly lead to more copies. */
export const DUPLICATE_LINK_FACTOR = 0.1;

export function linkShare(links: number): number {
  return links > 0 ? Math.max(MIN_LINK_PRIORITY, 1 / Math.sqrt(links)) : 1;
}

export interface DedupDecision {
  /** The page's change kind: its own, or CHANGED where parse recorded other bytes for a page called NEW. */
  change: ParsedPageMsg['change'];
  /** The page's fetched_at: its own, or the first copy's when its bytes are what parse last recorded for the URL. */
  fetchedAt: number;
  /** Another URL (or the page's own, for a near-copy of itself) this page is not handed off for. */
  nearDuplicateOf: string | null;
  kind: 'exact' | 'near' | 'self' | null;
  /** Priority for each of the page's links. */
  linkPriority: number;
  /** The crawl.content row to write, or null when the stored one is already right. */
  content: ContentMsg | null;
  /** A crawl.host-policy `trap:<prefix>` row to write, if this page completed a run. */
  trap: HostPolicyMsg | null;
}

export class ParseDedup {
  constructor(
    readonly index: DedupIndex,
    private readonly traps = new TrapDetector(),
    private readonly maxBits = 3,
  ) {}

  /** Replay one crawl.content row (restore after a restart or a rebalance). */
  restore(key: string, value: ContentMsg | null): void {
    this.index.apply(key, value);
  }

  /**
   * Decide for one parsed page (its change already NEW / CHANGED / UNCHANGED by SHA-256).
   * `links` is how many links it will emit.
   */
  decide(p: ParsedPageMsg, links: number, now: number): DedupDecision {
    const share = linkShare(links);
    const previous = this.index.get(p.url, p.host);
    const own = { change: p.change, fetchedAt: p.fetched_at };
    // noindex pages never represent content: the indexer will not get them, so copies of them must still go.
    if (p.noindex) return { ...own, nearDuplicateOf: null, kind: null, linkPriority: share, content: null, trap: null };
    if (p.change === 'UNCHANGED' && previous && previous.sha256 === p.sha256) {
      return { ...own, nearDuplicateOf: previous.duplicate_of, kind: null, linkPriority: share, content: null, trap: null };
    }
    const copy = previous !== undefined && previous.sha256 === p.sha256;
    const fetchedAt = copy ? previous.fetched_at : p.fetched_at;
    const change = p.change === 'NEW' && previous?.duplicate_of === null && !copy ? 'CHANGED' : p.change;
    const version = simhashVersionOf(p);
    const verdict = this.index.check(p.url, p.host, p.sha256, p.simhash64, version);
    let row: ContentRow = { url: p.url, host: p.host, sha256: p.sha256, simhash64: p.simhash64, fetched_at: fetchedAt, duplicate_of: verdict?.of ?? null, simhash_version: version };
    let kind: DedupDecision['kind'] = verdict?.kind ?? null;
    let of = verdict?.of ?? null;
    // A last copy fingerprinted with another SimHash version says nothing about this one's
    // distance: the page is handed off, and its row takes this version. A copy is the last
    // handed-off content itself, not a near-copy of it: it goes again (same id).
    if (!verdict && !copy && change === 'CHANGED' && previous?.duplicate_of === null && previous.simhash64 && p.simhash64 &&
        simhashVersionOf(previous) === version && hammingDistance(previous.simhash64, p.simhash64) <= this.maxBits) {
      kind = 'self';
      of = p.url;
      row = { ...row, simhash64: previous.simhash64 };
    }
    this.index.record(row);
    const prefix = kind === 'self' ? null : this.traps.observe(p.host, p.url, kind !== null);
    const trap: HostPolicyMsg | null = prefix === null ? null : {
      host: p.host, field: `trap:${prefix}`, updated_at: now, blocked_until: null,
      reason: `near-duplicates: 5 in a row under ${prefix}, the last of ${p.url}`, min_delay_ms: null,
    };
    const unchanged = previous && previous.sha256 === row.sha256 && previous.simhash64 === row.simhash64 && previous.duplicate_of === row.duplicate_of &&
      simhashVersionOf(previous) === version;
    return {
      change, fetchedAt, nearDuplicateOf: of, kind,
      linkPriority: kind === 'exact' || kind === 'near' ? share * DUPLICATE_LINK_FACTOR : share,
      content: unchanged ? null : row, trap,
    };
  }
}

export const contentRecord = (row: ContentMsg): OutRecord => ({ topic: 'content', key: row.url, host: row.host, value: row });
export const trapRecord = (t: HostPolicyMsg): OutRecord => ({ topic: 'hostPolicy', key: hostPolicyKey(t.host, t.field), host: t.host, value: t });
