/**
 * The URLs of bench/frontier-scale.ts: `urls` distinct URLs of 60-120 characters over
 * min(1M, urls/50) hosts whose sizes follow Zipf's law with the largest host holding a tenth of
 * all URLs (5M of 50M), every host at least one URL. They come as a page's links do: groups of
 * up to 8 URLs of one host (lib/link-groups), groups in a scattered order across hosts (a
 * multiplicative permutation), so the store sees random keys. Deterministic: the same `urls`
 * gives the same URLs in the same order.
 */
import type { LinkMsg } from '../lib/messages';

const GROUP = 8;
/** What pads a URL to its length (at most 120 characters are ever needed). */
const FILL = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(4);
const WORDS = ['news', 'article', 'category', 'products', 'blog', 'archive', 'item', 'view', 'tag', 'docs', 'forum', 'wiki', 'shop', 'event', 'story', 'guide'];

/** Host sizes: max(1, floor(largest / k^a)), a found by bisection so they add up to `total`. */
export function zipfSizes(total: number, hosts: number, largest: number): Uint32Array {
  const sizes = new Uint32Array(hosts);
  const fill = (a: number): number => {
    let sum = 0;
    for (let k = 0; k < hosts; k++) {
      sizes[k] = Math.max(1, Math.floor(largest / Math.pow(k + 1, a)));
      sum += sizes[k];
    }
    return sum;
  };
  let lo = 0.01;
  let hi = 5;
  for (let i = 0; i < 60; i++) {
    const mid = (lo + hi) / 2;
    if (fill(mid) > total) lo = mid;
    else hi = mid;
  }
  let diff = total - fill(hi);
  // The rest, one by one to the hosts after the largest (whose size stays `largest`).
  for (let k = 1; diff !== 0 && hosts > 1; k = k + 1 < hosts ? k + 1 : 1) {
    if (diff > 0) {
      sizes[k]++;
      diff--;
    } else if (sizes[k] > 1) {
      sizes[k]--;
      diff++;
    }
  }
  return sizes;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

export class ScaleWeb {
  readonly hosts: number;
  readonly sizes: Uint32Array;
  /** Groups before each host (prefix sums), for finding a group's host. */
  private readonly groupStart: Float64Array;
  readonly groups: number;

  /** `hosts`: the web's hosts (at most `urls`); default min(1M, urls/50). */
  constructor(readonly urls: number, hosts?: number) {
    this.hosts = Math.max(1, Math.min(urls, hosts ?? Math.min(1_000_000, Math.floor(urls / 50))));
    this.sizes = zipfSizes(urls, this.hosts, Math.max(1, Math.floor(urls / 10)));
    this.groupStart = new Float64Array(this.hosts + 1);
    for (let k = 0; k < this.hosts; k++) this.groupStart[k + 1] = this.groupStart[k] + Math.ceil(this.sizes[k] / GROUP);
    this.groups = this.groupStart[this.hosts];
  }

  /** A site of its own (its own registered domain: the frontier's domain cap does not join them). */
  hostName(k: number): string {
    return `www.${WORDS[k % WORDS.length]}-${k.toString(36)}-site.com`;
  }

  /** The i-th URL of host k: 60-120 characters, lowercase, normalised. */
  url(k: number, i: number): string {
    return this.urlOn(`https://${this.hostName(k)}/`, k, i);
  }

  /** url(k, i) given its `https://<host>/` (the feeder makes it once a group). */
  private urlOn(origin: string, k: number, i: number): string {
    const h = Math.imul(k + 1, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b);
    const want = 60 + ((h >>> 0) % 61);
    const u = `${origin}${WORDS[(h >>> 4) % WORDS.length]}/${WORDS[(h >>> 9) % WORDS.length]}/${i.toString(36)}`;
    return u.length < want ? `${u}-${FILL.slice(0, want - u.length - 1)}` : u;
  }

  private hostOfGroup(g: number): number {
    let lo = 0;
    let hi = this.hosts - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.groupStart[mid] <= g) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /** Every URL once, as link groups in scattered order. */
  *links(now = Date.now()): Generator<{ host: string; link: LinkMsg }> {
    const n = this.groups;
    let step = Math.floor(n * 0.6180339887) | 1;
    while (gcd(step, n) !== 1) step++;
    for (let i = 0, g = 0; i < n; i++, g = (g + step) % n) {
      const k = this.hostOfGroup(g);
      const first = (g - this.groupStart[k]) * GROUP;
      const last = Math.min(this.sizes[k], first + GROUP);
      const host = this.hostName(k);
      const origin = `https://${host}/`;
      const more: string[] = [];
      for (let j = first + 1; j < last; j++) more.push(this.urlOn(origin, k, j));
      yield { host, link: { url: this.urlOn(origin, k, first), more_urls: more, source_url: origin, depth: 1, discovered_at: now, is_seed: false } };
    }
  }
}
