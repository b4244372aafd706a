/**
 * seen-test: normalise each found URL, apply scope and trap limits, and forward only URLs not
 * seen before to the frontier. The set here only saves work; the frontier's URL table is the
 * exact check, so a set that forgets (a restart, a flushed Redis) costs duplicates there,
 * never a lost URL.
 *
 * Order of operations (issue #4): a batch is checked against the set in handleBatch, its
 * candidates are produced durably by the runtime, and only then (produced) are they added to
 * the set. A crash in between costs a duplicate candidate, never a hidden URL.
 * In: crawl.links (+ crawl.host-policy for learned trap rules). Out: crawl.frontier. Both
 * carry groups of URLs of one host (lib/link-groups): each link is screened alone.
 */
import type { SeenSet } from '../lib/bloom/types';
import { HostPolicyTable } from '../lib/host-policy';
import type { CandidateMsg, HostPolicyMsg, LinkMsg } from '../lib/messages';
import { expandLink, groupCandidates, urlsOf } from '../lib/link-groups';
import { redirectField } from '../lib/redirect-hops';
import { TrapScreen, type TrapOptions } from '../lib/traps';
import { normalizeUrl } from '../lib/url-normalize';
import type { OutRecord, Stage } from '../runtime/stage';

export type { SeenSet } from '../lib/bloom/types';

/** An exact in-memory set: the reference for tests; the Bloom filter (lib/bloom) replaces it at scale. */
export class ExactSeenSet implements SeenSet {
  private readonly seen = new Set<string>();
  /** Synchronous check-and-add, for the pure form `seenTest`. */
  checkAndAdd(urls: readonly string[]): boolean[] {
    return urls.map((u) => {
      if (this.seen.has(u)) return true;
      this.seen.add(u);
      return false;
    });
  }
  async check(urls: readonly string[]): Promise<boolean[]> {
    return urls.map((u) => this.seen.has(u));
  }
  async add(urls: readonly string[]): Promise<void> {
    for (const u of urls) this.seen.add(u);
  }
  get size(): number {
    return this.seen.size;
  }
}

export interface SeenTestOptions {
  maxDepth: number;
  /** Hosts or registered domains to stay within; empty = the whole web. */
  scope: ReadonlySet<string>;
  onReject?: (reason: string, url: string) => void;
  /** Trap defences (repeated segments, growing queries, learned rules); none when absent. */
  traps?: TrapScreen;
  now?: () => number;
}

export type SeenDecision = { forward: CandidateMsg } | { drop: string };

/**
 * A seed's importance when its link carries none: the top of the [0, 1] scale. The operator
 * chose it, and OPIC starts every crawl with the seeds holding all the cash; it also puts
 * seeds in the frontier's first priority level, where their depth 0 already put them.
 */
export const SEED_PRIORITY = 1;

/** What to do with one link, before the seen check. Pure save the trap screen's bounded memory. */
export function screenLink(link: LinkMsg, opts: SeenTestOptions): SeenDecision {
  if (link.depth > opts.maxDepth) return { drop: 'too-deep' };
  const n = normalizeUrl(link.url);
  if (!n.ok) return { drop: n.reason };
  if (opts.scope.size > 0 && !opts.scope.has(n.host) && !(n.registeredDomain && opts.scope.has(n.registeredDomain))) {
    return { drop: 'out-of-scope' };
  }
  // Seeds are the operator's explicit choice: they skip trap rules as they skip the seen set.
  // normalizeUrl's host, path and query are what parsing n.url again would give (its test).
  const trap = link.is_seed ? null : opts.traps?.screenParts(n.host, n.path, n.query, (opts.now ?? Date.now)());
  if (trap) return { drop: trap };
  return {
    forward: {
      url: n.url, host: n.host, depth: link.depth, discovered_at: link.discovered_at, source_url: link.source_url,
      priority: link.priority ?? (link.is_seed ? SEED_PRIORITY : null), ...redirectField(link.redirects),
    },
  };
}

interface Screened {
  candidates: CandidateMsg[];
  seeds: boolean[];
}

/** Screen a batch, dropping (as 'seen') repeats of a URL within the batch itself. */
function screenBatch(links: readonly LinkMsg[], opts: SeenTestOptions): Screened {
  const out: Screened = { candidates: [], seeds: [] };
  const inBatch = new Map<string, number>();
  for (const link of links.flatMap(expandLink)) {
    const d = screenLink(link, opts);
    if ('drop' in d) {
      opts.onReject?.(d.drop, link.url);
      continue;
    }
    const first = inBatch.get(d.forward.url);
    if (first !== undefined) {
      // Forwarded once; a seed among the repeats makes that one bypass the set.
      if (link.is_seed) out.seeds[first] = true;
      opts.onReject?.('seen', d.forward.url);
      continue;
    }
    inBatch.set(d.forward.url, out.candidates.length);
    out.candidates.push(d.forward);
    out.seeds.push(link.is_seed);
  }
  return out;
}

/** The new candidates, one crawl.frontier record per host and shared fields (lib/link-groups). */
function emit(s: Screened, known: readonly boolean[], opts: SeenTestOptions): OutRecord[] {
  const forward: CandidateMsg[] = [];
  s.candidates.forEach((c, i) => {
    if (known[i] && !s.seeds[i]) opts.onReject?.('seen', c.url);
    else forward.push(c);
  });
  return groupCandidates(forward).map((c) => ({ topic: 'frontier', key: c.host, host: c.host, value: c }));
}

/** The pure, synchronous form over a check-and-add set (tests and tools). */
export function seenTest(links: readonly LinkMsg[], seen: Pick<ExactSeenSet, 'checkAndAdd'>, opts: SeenTestOptions): OutRecord[] {
  const s = screenBatch(links, opts);
  return emit(s, seen.checkAndAdd(s.candidates.map((c) => c.url)), opts);
}

/** A batch against an async set: one check for the whole batch; nothing is added here. */
export async function seenTestBatch(links: readonly LinkMsg[], seen: SeenSet, opts: SeenTestOptions): Promise<OutRecord[]> {
  const s = screenBatch(links, opts);
  const ask = s.candidates.filter((_, i) => !s.seeds[i]).map((c) => c.url);
  const answers = ask.length ? await seen.check(ask) : [];
  let j = 0;
  const known = s.seeds.map((seed) => (seed ? false : answers[j++]));
  return emit(s, known, opts);
}

/** The URLs of a batch's frontier emits: what `produced` adds to the set. */
export function producedUrls(outs: readonly OutRecord[]): string[] {
  return outs.filter((o) => o.topic === 'frontier').flatMap((o) => urlsOf(o.value as CandidateMsg));
}

export interface SeenTestStageOptions extends SeenTestOptions {
  trapOptions?: TrapOptions;
  /** The host-policy view fed by crawl.host-policy; a fresh one when absent. */
  policy?: HostPolicyTable;
}

export function seenTestStage(seen: SeenSet, opts: SeenTestStageOptions): Stage {
  const policy = opts.policy ?? new HostPolicyTable();
  const o: SeenTestOptions = { ...opts, traps: opts.traps ?? new TrapScreen(policy, opts.trapOptions) };
  return {
    id: 'seen-test',
    inputs: ['links'],
    outputs: ['frontier'],
    // Learned trap rules arrive as `trap:<path-prefix>` rows of the host-policy table.
    globalTables: ['hostPolicy'],
    onGlobal(rec, topic) {
      if (topic === 'hostPolicy') policy.apply(rec.key, rec.value as HostPolicyMsg | null);
    },
    handle(rec, ctx) {
      return seenTestBatch([rec.value as LinkMsg], seen, { ...o, now: ctx.now });
    },
    handleBatch(recs, ctx) {
      return seenTestBatch(recs.map((r) => r.value as LinkMsg), seen, { ...o, now: ctx.now });
    },
    async produced(outs) {
      const urls = producedUrls(outs);
      if (urls.length) await seen.add(urls);
    },
  };
}
