/**
 * The benchmark's synthetic web, as pure data: which loopback address each host has, what a
 * page says, and how a host's politeness is judged from the server's side. The server that
 * serves it lives in bench/web-server.ts.
 *
 * Every host is an infinite tree of 50 KiB pages: page n links to 20 pages of its own host
 * (n*20+1 … n*20+20) and 5 pages of other hosts, so a crawl never runs out of work and every
 * host keeps a queue; 25 links a page in all.
 */

/** Addresses from 127.1.0.1 on, skipping .0 and .255 in the last octet (some stacks treat them specially). */
export function hostAddress(i: number): string {
  const third = Math.floor(i / 250);
  const last = 1 + (i % 250);
  const second = 1 + Math.floor(third / 256);
  if (second > 20) throw new RangeError(`host ${i} is past 127.20.255.250: the benchmark's address range`);
  return `127.${second}.${third % 256}.${last}`;
}

/**
 * The same host by name, `host<i>.test`: a registered domain of its own for crawlers that key
 * politeness by domain (Crawlee's sameDomainDelaySecs does nothing for IP addresses). Only a
 * crawler that maps these names to hostAddress(i) itself can use them.
 */
export function hostName(i: number): string {
  return `host${i}.test`;
}

/** host<i>.test -> i, or -1. */
export function hostIndexOfName(name: string): number {
  const m = /^host(\d+)\.test$/.exec(name);
  return m ? Number(m[1]) : -1;
}

export const PAGE_BYTES = 50 * 1024;
export const LINKS_PER_PAGE = 25;
const OWN_LINKS = 20;

/** Deterministic cheap mixing, so cross-host links spread over all hosts without Math.random. */
function mix(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  return (x ^ (x >>> 16)) >>> 0;
}

/** The 25 link targets of page n of host h, as [host index, page number]. */
export function pageLinks(h: number, n: number, hosts: number): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (let k = 1; k <= OWN_LINKS; k++) out.push([h, n * OWN_LINKS + k]);
  for (let k = 0; k < LINKS_PER_PAGE - OWN_LINKS; k++) {
    const r = mix(h * 7919 + n * 104729 + k);
    out.push([r % hosts, (r >>> 8) % 1000]);
  }
  return out;
}

const PARA =
  'Lorem ipsum dolor sit amet, <b>consectetur</b> adipiscing elit, sed do eiusmod tempor incididunt ut labore ' +
  'et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud &amp; exercitation ullamco laboris. ';

/** Body text shared by every page (built once): headings and paragraphs, no links. */
export function fillerHtml(bytes: number): string {
  let s = '';
  for (let i = 0; s.length < bytes; i++) s += `<div class="b${i}"><h2>Section ${i}</h2><p>${PARA}${PARA}${PARA}</p></div>\n`;
  return s.slice(0, s.lastIndexOf('</div>\n') + 7);
}

/**
 * One page: head, the shared filler, then its links, padded to exactly PAGE_BYTES. Links to
 * other hosts use addresses, or names when the page was asked for by name.
 */
export function pageHtml(h: number, n: number, hosts: number, port: number, filler: string, byName = false): string {
  const links = pageLinks(h, n, hosts)
    .map(([th, tn], i) => `<li><a href="${th === h ? '' : `http://${byName ? hostName(th) : hostAddress(th)}:${port}`}/p/${tn}">link ${i}</a></li>`)
    .join('');
  const head = `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Host ${h} page ${n}</title></head><body><main>`;
  const tail = `</main><nav><ul>${links}</ul></nav></body></html>`;
  const pad = PAGE_BYTES - head.length - tail.length;
  return head + (pad > 0 ? filler.slice(0, pad) : '') + tail;
}

/**
 * Per client and host: the gap since the previous request's arrival and how many requests are
 * open at once. `toleranceMs` absorbs clock granularity (both sides use millisecond clocks).
 */
export class PolitenessTracker {
  private readonly last = new Map<string, number>();
  private readonly open = new Map<string, number>();
  requests = 0;
  pages = 0;
  gapViolations = 0;
  concurrencyViolations = 0;
  minGapMs = Infinity;
  firstAt = 0;
  lastAt = 0;
  /** Pages that arrived in each whole second since the first page (ramp-up and steady state). */
  readonly pagesBySecond: number[] = [];

  constructor(private readonly minGapMs_ = 1000, private readonly toleranceMs = 5) {}

  /** A request arrived; returns a function to call when its response is finished. */
  arrive(host: string, at: number, isPage: boolean): () => void {
    this.requests++;
    if (isPage) {
      this.pages++;
      if (this.firstAt === 0) this.firstAt = at;
      this.lastAt = at;
      const sec = Math.floor((at - this.firstAt) / 1000);
      while (this.pagesBySecond.length <= sec) this.pagesBySecond.push(0);
      this.pagesBySecond[sec]++;
    }
    const prev = this.last.get(host);
    if (prev !== undefined) {
      const gap = at - prev;
      if (gap < this.minGapMs) this.minGapMs = gap;
      if (gap < this.minGapMs_ - this.toleranceMs) this.gapViolations++;
    }
    this.last.set(host, at);
    const open = (this.open.get(host) ?? 0) + 1;
    this.open.set(host, open);
    if (open > 1) this.concurrencyViolations++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.open.set(host, this.open.get(host)! - 1);
    };
  }

  get hosts(): number {
    return this.last.size;
  }

  summary(): PolitenessSummary {
    return {
      requests: this.requests, pages: this.pages, hosts: this.hosts, gapViolations: this.gapViolations,
      concurrencyViolations: this.concurrencyViolations, minGapMs: Number.isFinite(this.minGapMs) ? this.minGapMs : null,
      firstPageAt: this.firstAt, lastPageAt: this.lastAt, pagesBySecond: [...this.pagesBySecond],
    };
  }
}

export interface PolitenessSummary {
  requests: number;
  pages: number;
  hosts: number;
  gapViolations: number;
  concurrencyViolations: number;
  minGapMs: number | null;
  /** TCP connections the requests came on (set by the server, not the tracker). */
  connections?: number;
  firstPageAt: number;
  lastPageAt: number;
  /** Pages that arrived in each whole second since the first one. */
  pagesBySecond: number[];
}
