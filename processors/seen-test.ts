/**
 * seen-test: normalise each found URL, apply scope and trap limits, and forward only URLs not
 * seen before to the frontier. The set here only saves work; the frontier's URL table is the
 * exact check, so a set that forgets (a restart) costs duplicates there, never a lost URL.
 * In: crawl.links. Out: crawl.frontier.
 */
import type { CandidateMsg, LinkMsg } from '../lib/messages';
import { normalizeUrl } from '../lib/url-normalize';
import type { OutRecord, Stage, StageContext } from '../runtime/stage';

/** "Have we seen it?" for a batch; marks the new ones seen. */
export interface SeenSet {
  checkAndAdd(urls: readonly string[]): boolean[];
}

/** An exact in-memory set (the Bloom filter generations replace it at scale). */
export class ExactSeenSet implements SeenSet {
  private readonly seen = new Set<string>();
  checkAndAdd(urls: readonly string[]): boolean[] {
    return urls.map((u) => {
      if (this.seen.has(u)) return true;
      this.seen.add(u);
      return false;
    });
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
}

export type SeenDecision = { forward: CandidateMsg } | { drop: string };

/** Pure: what to do with one link, before the seen check. */
export function screenLink(link: LinkMsg, opts: SeenTestOptions): SeenDecision {
  if (link.depth > opts.maxDepth) return { drop: 'too-deep' };
  const n = normalizeUrl(link.url);
  if (!n.ok) return { drop: n.reason };
  if (opts.scope.size > 0 && !opts.scope.has(n.host) && !(n.registeredDomain && opts.scope.has(n.registeredDomain))) {
    return { drop: 'out-of-scope' };
  }
  return {
    forward: { url: n.url, host: n.host, depth: link.depth, discovered_at: link.discovered_at, source_url: link.source_url },
  };
}

export function seenTest(links: readonly LinkMsg[], seen: SeenSet, opts: SeenTestOptions): OutRecord[] {
  const candidates: CandidateMsg[] = [];
  const seeds: boolean[] = [];
  for (const link of links) {
    const d = screenLink(link, opts);
    if ('drop' in d) {
      opts.onReject?.(d.drop, link.url);
      continue;
    }
    candidates.push(d.forward);
    seeds.push(link.is_seed);
  }
  const known = seen.checkAndAdd(candidates.map((c) => c.url));
  const out: OutRecord[] = [];
  candidates.forEach((c, i) => {
    if (known[i] && !seeds[i]) opts.onReject?.('seen', c.url);
    else out.push({ topic: 'frontier', key: c.host, host: c.host, value: c });
  });
  return out;
}

export function seenTestStage(seen: SeenSet, opts: SeenTestOptions): Stage {
  return {
    id: 'seen-test',
    inputs: ['links'],
    outputs: ['frontier'],
    handle(rec, _ctx: StageContext) {
      return seenTest([rec.value as LinkMsg], seen, opts);
    },
  };
}
