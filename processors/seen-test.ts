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
import { sameCandidateFields } from '../lib/link-groups';
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

type Normalized = Extract<ReturnType<typeof normalizeUrl>, { ok: true }>;

/**
 * One URL of a link (its `url` or one of its `more_urls`): the reason it is dropped, or the URL
 * normalised. Pure save the trap screen's bounded memory.
 */
function screenUrl(url: string, link: LinkMsg, opts: SeenTestOptions): string | Normalized {
  if (link.depth > opts.maxDepth) return 'too-deep';
  const n = normalizeUrl(url);
  if (!n.ok) return n.reason;
  if (opts.scope.size > 0 && !opts.scope.has(n.host) && !(n.registeredDomain && opts.scope.has(n.registeredDomain))) {
    return 'out-of-scope';
  }
  // Seeds are the operator's explicit choice: they skip trap rules as they skip the seen set.
  // normalizeUrl's host, path and query are what parsing n.url again would give (its test).
  const trap = link.is_seed ? null : opts.traps?.screenParts(n.host, n.path, n.query, (opts.now ?? Date.now)());
  return trap || n;
}

/** The candidate for a normalised URL of a link: the link's fields, the URL's host. */
function candidateOf(url: string, host: string, link: LinkMsg): CandidateMsg {
  return {
    url, host, depth: link.depth, discovered_at: link.discovered_at, source_url: link.source_url,
    priority: link.priority ?? (link.is_seed ? SEED_PRIORITY : null), ...redirectField(link.redirects),
    // A class only when the discoverer gave one (feeds): the frontier derives the rest.
    ...(link.priority_class ? { priority_class: link.priority_class } : {}),
  };
}

/** What to do with one link (its `url`; `more_urls` aside), before the seen check. */
export function screenLink(link: LinkMsg, opts: SeenTestOptions): SeenDecision {
  const n = screenUrl(link.url, link, opts);
  return typeof n === 'string' ? { drop: n } : { forward: candidateOf(n.url, n.host, link) };
}

/**
 * A batch's URLs that passed screening, distinct, in order: each with its host and the link
 * record it came from (whose fields its candidate takes). No object per URL: a batch of the
 * benchmark's web is a few thousand URLs, and an expanded link, a decision and a candidate
 * each were most of seen-test's allocations.
 */
interface Screened {
  urls: string[];
  hosts: string[];
  from: LinkMsg[];
  seeds: boolean[];
}

/** Screen a batch, dropping (as 'seen') repeats of a URL within the batch itself. */
function screenBatch(links: readonly LinkMsg[], opts: SeenTestOptions): Screened {
  const out: Screened = { urls: [], hosts: [], from: [], seeds: [] };
  const inBatch = new Map<string, number>();
  for (const link of links) {
    const more = link.more_urls;
    const n = more ? more.length : 0;
    for (let i = -1; i < n; i++) {
      const raw = i < 0 ? link.url : more![i];
      const d = screenUrl(raw, link, opts);
      if (typeof d === 'string') {
        opts.onReject?.(d, raw);
        continue;
      }
      const first = inBatch.get(d.url);
      if (first !== undefined) {
        // Forwarded once; a seed among the repeats makes that one bypass the set.
        if (link.is_seed) out.seeds[first] = true;
        opts.onReject?.('seen', d.url);
        continue;
      }
      inBatch.set(d.url, out.urls.length);
      out.urls.push(d.url);
      out.hosts.push(d.host);
      out.from.push(link);
      out.seeds.push(link.is_seed);
    }
  }
  return out;
}

/**
 * The new candidates, one crawl.frontier record per host and shared fields (lib/link-groups):
 * the groups groupCandidates makes of the candidates one at a time, built without them.
 */
function emit(s: Screened, known: readonly boolean[], opts: SeenTestOptions): OutRecord[] {
  const out: OutRecord[] = [];
  // The open group of each host, and the link record that opened it.
  const open = new Map<string, { head: CandidateMsg; from: LinkMsg }>();
  for (let i = 0; i < s.urls.length; i++) {
    const url = s.urls[i];
    if (known[i] && !s.seeds[i]) {
      opts.onReject?.('seen', url);
      continue;
    }
    const host = s.hosts[i];
    const link = s.from[i];
    const g = open.get(host);
    if (g && (g.from === link || sameCandidateFields(g.head, candidateOf(url, host, link)))) {
      g.head.more_urls!.push(url);
      continue;
    }
    const head = candidateOf(url, host, link);
    head.more_urls = [];
    open.set(host, { head, from: link });
    out.push({ topic: 'frontier', key: host, host, value: head });
  }
  return out;
}

/** The pure, synchronous form over a check-and-add set (tests and tools). */
export function seenTest(links: readonly LinkMsg[], seen: Pick<ExactSeenSet, 'checkAndAdd'>, opts: SeenTestOptions): OutRecord[] {
  const s = screenBatch(links, opts);
  return emit(s, seen.checkAndAdd(s.urls), opts);
}

/** A batch against an async set: one check for the whole batch; nothing is added here. */
export async function seenTestBatch(links: readonly LinkMsg[], seen: SeenSet, opts: SeenTestOptions): Promise<OutRecord[]> {
  const s = screenBatch(links, opts);
  const ask = s.urls.filter((_, i) => !s.seeds[i]);
  const answers = ask.length ? await seen.check(ask) : [];
  let j = 0;
  const known = s.seeds.map((seed) => (seed ? false : answers[j++]));
  return emit(s, known, opts);
}

/** The URLs of a batch's frontier emits: what `produced` adds to the set. */
export function producedUrls(outs: readonly OutRecord[]): string[] {
  const urls: string[] = [];
  for (const o of outs) {
    if (o.topic !== 'frontier') continue;
    const c = o.value as CandidateMsg;
    urls.push(c.url);
    if (c.more_urls) for (const u of c.more_urls) urls.push(u);
  }
  return urls;
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
