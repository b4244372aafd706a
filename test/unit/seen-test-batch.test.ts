import pino from 'pino';
import { bloomParams } from '../../lib/bloom/sizing';
import { MemoryBloom } from '../../lib/bloom/memory';
import type { SeenSet } from '../../lib/bloom/types';
import { hostPolicyKey } from '../../lib/host-policy';
import { urlsOf as urlsInRecord } from '../../lib/link-groups';
import type { CandidateMsg, HostPolicyMsg, LinkMsg } from '../../lib/messages';
import { ExactSeenSet, seenTestStage } from '../../processors/seen-test';
import type { InRecord, OutRecord, Stage, StageContext } from '../../runtime/stage';

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
