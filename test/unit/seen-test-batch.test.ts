import pino from 'pino';
import { bloomParams } from '../../lib/bloom/sizing';
import { MemoryBloom } from '../../lib/bloom/memory';
import type { SeenSet } from '../../lib/bloom/types';
import { HostPolicyTable, hostPolicyKey } from '../../lib/host-policy';
import { expandLink, groupCandidates, urlsOf as urlsInRecord } from '../../lib/link-groups';
import { TrapScreen } from '../../lib/traps';
import type { CandidateMsg, HostPolicyMsg, LinkMsg } from '../../lib/messages';
import { ExactSeenSet, screenLink, seenTest, seenTestStage, type SeenTestOptions } from '../../processors/seen-test';
import type { InRecord, OutRecord, Stage, StageContext } from '../../runtime/stage';
import { rng } from '../support/rng';

const ctx: StageContext = { now: () => 1_000, log: pino({ level: 'silent' }) };
const link = (url: string, f: Partial<LinkMsg> = {}): LinkMsg => ({ url, source_url: 'https://src.example/', depth: 1, discovered_at: 5, is_seed: false, ...f });
const recs = (links: LinkMsg[]): InRecord[] => links.map((value, offset) => ({ topic: 'links', partition: 0, offset, key: 'k', value, timestamp: 0 }));
// A frontier record holds a group of URLs of one host (lib/link-groups).
const urlsOf = (outs: readonly OutRecord[]): string[] => outs.flatMap((o) => urlsInRecord(o.value as CandidateMsg));

/** A set that records the order of calls, to check the order of operations. */
class Recording implements SeenSet {
  readonly calls: string[] = [];
  constructor(private readonly inner: SeenSet) {}
  async check(urls: readonly string[]): Promise<boolean[]> {
    this.calls.push(`check ${urls.length}`);
    return this.inner.check(urls);
  }
  async add(urls: readonly string[]): Promise<void> {
    this.calls.push(`add ${urls.length}`);
    return this.inner.add(urls);
  }
}

function stage(seen: SeenSet, rejects: Array<[string, string]> = []): Stage {
  return seenTestStage(seen, { maxDepth: 16, scope: new Set(), onReject: (r, u) => rejects.push([r, u]) });
}

describe('seen-test stage over an async set', () => {
  it('checks a whole batch at once and adds only when told the emits are produced', async () => {
    const seen = new Recording(new ExactSeenSet());
    const s = stage(seen);
    const batch = recs([link('https://a.example/1'), link('https://a.example/2'), link('https://b.example/1')]);
    const outs = await s.handleBatch!(batch, ctx);
    expect(urlsOf(outs)).toEqual(['https://a.example/1', 'https://a.example/2', 'https://b.example/1']);
    expect(seen.calls).toEqual(['check 3']);
    // A crash here (emits never confirmed produced): the retry forwards them again, never hides them.
    expect(urlsOf(await s.handleBatch!(batch, ctx))).toHaveLength(3);
    await s.produced!(outs);
    expect(seen.calls).toEqual(['check 3', 'check 3', 'add 3']);
    expect(await s.handleBatch!(batch, ctx)).toEqual([]);
  });

  it('drops repeats within a batch as seen, lets seeds bypass the set, and counts every rejection by reason', async () => {
    const rejects: Array<[string, string]> = [];
    const seen = new ExactSeenSet();
    await seen.add(['https://a.example/old']);
    const s = stage(seen, rejects);
    const outs = await s.handleBatch!(
      recs([
        link('https://a.example/new'),
        link('HTTPS://A.example:443/new#frag'),
        link('https://a.example/old'),
        link('https://a.example/old', { is_seed: true, depth: 0 }),
        link('https://a.example/deep', { depth: 17 }),
        link('ftp://a.example/'),
        link('https://a.example/a/b/a/b/a/b'),
      ]),
      ctx,
    );
    expect(urlsOf(outs)).toEqual(['https://a.example/new', 'https://a.example/old']);
    expect(rejects.map((r) => r[0]).sort()).toEqual(['seen', 'seen', 'too-deep', 'trap-repeated-segment', 'unsupported-scheme']);
  });

  it('follows learned trap rules from the host-policy table', async () => {
    const rejects: Array<[string, string]> = [];
    const s = stage(new ExactSeenSet(), rejects);
    expect(s.globalTables).toEqual(['hostPolicy']);
    const rule: HostPolicyMsg = { host: 'events.example', field: 'trap:/calendar', updated_at: 1, blocked_until: null, reason: null, min_delay_ms: null };
    s.onGlobal!({ partition: 0, key: hostPolicyKey('events.example', 'trap:/calendar'), value: rule }, 'hostPolicy');
    const outs = await s.handleBatch!(recs([link('https://events.example/calendar?m=2027-01'), link('https://events.example/about')]), ctx);
    expect(urlsOf(outs)).toEqual(['https://events.example/about']);
    expect(rejects).toEqual([['trap-rule', 'https://events.example/calendar?m=2027-01']]);
    s.onGlobal!({ partition: 0, key: hostPolicyKey('events.example', 'trap:/calendar'), value: null }, 'hostPolicy');
    expect(urlsOf(await s.handleBatch!(recs([link('https://events.example/calendar?m=2027-02')]), ctx))).toHaveLength(1);
  });

  it('screens traps on the normalised path and query', async () => {
    const rejects: Array<[string, string]> = [];
    const s = stage(new ExactSeenSet(), rejects);
    // /x/%2E%2E/x/x is /x/x once parsed: two "x", not a trap; /a/%2E%2E/b/b/b is /b/b/b, a trap.
    const outs = await s.handleBatch!(recs([link('https://a.example/x/%2E%2E/x/x'), link('https://a.example/a/%2E%2E/b/b/b'), link('https://a.example/%62/b/%62')]), ctx);
    expect(urlsOf(outs)).toEqual(['https://a.example/x/x']);
    expect(rejects).toEqual([['trap-repeated-segment', 'https://a.example/a/%2E%2E/b/b/b'], ['trap-repeated-segment', 'https://a.example/%62/b/%62']]);
    const growing = ['?s=a', '?s=aaaaa', '?s=aaaaaaaaa', '?s=aaaaaaaaaaaaa'].map((q) => link(`https://g.example/search${q}`));
    for (const l of growing) await s.handleBatch!(recs([l]), ctx);
    expect(rejects.at(-1)).toEqual(['trap-growing-query', 'https://g.example/search?s=aaaaaaaaaaaaa']);
  });

  it('works the same over the Bloom filter (the embedded default)', async () => {
    const s = stage(new MemoryBloom(bloomParams(10_000, 0.01)));
    const links = Array.from({ length: 300 }, (_, i) => link(`https://h${i % 7}.example/p/${i}`));
    const outs = await s.handleBatch!(recs(links), ctx);
    // One record per host, holding that host's URLs in the order they came.
    expect(outs).toHaveLength(7);
    expect(urlsOf(outs).sort()).toEqual(links.map((l) => l.url).sort());
    expect(urlsInRecord(outs[3]!.value as CandidateMsg)).toEqual(links.filter((_, i) => i % 7 === 3).map((l) => l.url));
    await s.produced!(outs);
    expect(await s.handleBatch!(recs(links), ctx)).toEqual([]);
  });

  it('forwards everything when the set cannot answer "seen" (a degraded store)', async () => {
    const blind: SeenSet = { check: async (u) => u.map(() => false), add: async () => undefined };
    const s = stage(blind);
    const b = recs([link('https://a.example/x')]);
    await s.produced!(await s.handleBatch!(b, ctx));
    expect(await s.handleBatch!(b, ctx)).toHaveLength(1);
  });
});

describe('seen-test over a batch of link groups', () => {
  /**
   * The reference: every URL of every group as a link of its own, screened by screenLink,
   * repeats in the batch dropped as seen, checked and added one at a time, and the forwarded
   * candidates grouped by groupCandidates. The batch path builds the same groups without a
   * link, a decision or a candidate object per URL.
   */
  function reference(links: readonly LinkMsg[], seen: ExactSeenSet, opts: SeenTestOptions): OutRecord[] {
    const cands: CandidateMsg[] = [];
    const seeds: boolean[] = [];
    const inBatch = new Map<string, number>();
    for (const l of links.flatMap(expandLink)) {
      const d = screenLink(l, opts);
      if ('drop' in d) {
        opts.onReject?.(d.drop, l.url);
        continue;
      }
      const first = inBatch.get(d.forward.url);
      if (first !== undefined) {
        if (l.is_seed) seeds[first] = true;
        opts.onReject?.('seen', d.forward.url);
        continue;
      }
      inBatch.set(d.forward.url, cands.length);
      cands.push(d.forward);
      seeds.push(l.is_seed);
    }
    const known = seen.checkAndAdd(cands.map((c) => c.url));
    const forward = cands.filter((c, i) => {
      if (known[i] && !seeds[i]) opts.onReject?.('seen', c.url);
      return !known[i] || seeds[i];
    });
    return groupCandidates(forward).map((c) => ({ topic: 'frontier', key: c.host, host: c.host, value: c }));
  }

  function batch(r: () => number): LinkMsg[] {
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)]!;
    const url = (): string =>
      pick([
        () => `https://${pick(['a', 'b', 'c'])}.example/p/${Math.floor(r() * 6)}`,
        () => `HTTPS://${pick(['A', 'b'])}.example:443/p/${Math.floor(r() * 6)}#f`,
        () => 'https://a.example/x/x/x/x',
        () => 'ftp://a.example/',
        () => 'http://[oops/',
        () => 'https://out.test/q',
      ])();
    return Array.from({ length: 1 + Math.floor(r() * 12) }, () => {
      const more = Array.from({ length: Math.floor(r() * 5) }, url);
      return {
        url: url(), source_url: pick(['https://s1.example/', 'https://s2.example/', null]), depth: pick([0, 1, 2, 17]),
        discovered_at: pick([5, 6]), is_seed: r() < 0.15, ...(r() < 0.2 ? { redirects: 1 } : {}),
        ...(r() < 0.3 ? { priority: pick([0.25, 0.5, null]) } : {}), ...(more.length > 0 || r() < 0.5 ? { more_urls: more } : {}),
      };
    });
  }

  it('gives the groups, checks and rejections of screening each URL alone, on 500 random batches', () => {
    for (let seed = 1; seed <= 500; seed++) {
      const r = rng(seed);
      const scope = r() < 0.3 ? new Set(['a.example', 'b.example']) : new Set<string>();
      const [got, want] = [[], []].map((rejects: Array<[string, string]>) => ({ rejects, seen: new ExactSeenSet(), opts: { maxDepth: 16, scope, onReject: (why: string, u: string) => rejects.push([why, u]), traps: new TrapScreen(new HostPolicyTable()), now: () => 1_000 } }));
      for (let round = 0; round < 3; round++) {
        const links = batch(r);
        expect({ seed, round, outs: seenTest(links, got.seen, got.opts) }).toEqual({ seed, round, outs: reference(links, want.seen, want.opts) });
        expect({ seed, round, rejects: got.rejects }).toEqual({ seed, round, rejects: want.rejects });
      }
    }
  });
});
