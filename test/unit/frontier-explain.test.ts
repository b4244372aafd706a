/** `crawl explain`'s verdicts, pure: every input handed in, clock injected. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { stateFromJournal } from '../../cli/explain';
import { partitionForHost } from '../../lib/partitioner';
import { restoreStores } from '../../processors/frontier-restore';
import { MemoryChangelog } from '../support/memory-changelog';
import { HostPolicyTable } from '../../lib/host-policy';
import type { HostPolicyMsg, OptOutMsg, UrlStateMsg } from '../../lib/messages';
import { OptOutRegistry } from '../../lib/optout-registry';
import { robotsFromFetch } from '../../lib/robots';
import { explain, explanationText, type ExplainInput, type Verdict } from '../../processors/frontier-explain';
import { FileLog } from '../../runtime/file-log';

const NOW = Date.parse('2026-11-30T12:00:00Z');
const UA = 'KCrawl/0.1 (+https://example.org/bot)';
const ROBOTS = robotsFromFetch({ status: 200, body: Buffer.from('User-agent: *\nDisallow: /private\nAllow: /private/ok\n\nUser-agent: kcrawl\nDisallow: /nokc\n') });

function pol(host: string, field: string, f: Partial<HostPolicyMsg>): [string, HostPolicyMsg] {
  return [`${host}|${field}`, { host, field, updated_at: 0, blocked_until: null, reason: null, min_delay_ms: null, ...f }];
}

function row(url: string, f: Partial<UrlStateMsg>): UrlStateMsg {
  return {
    url, host: new URL(url).hostname, state: 'QUEUED', depth: 0, discovered_at: 0, updated_at: 0, lease_id: null, lease_expires_at: null, attempts: 0,
    next_due_at: null, fetched_at: null, http_status: null, sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null,
    warc_length: null, reason: null, ...f,
  };
}

interface Case {
  name: string;
  url: string;
  policy?: Array<[string, HostPolicyMsg]>;
  optout?: Array<[string, OptOutMsg]>;
  robots?: ExplainInput['robots'];
  row?: Partial<UrlStateMsg>;
  robotsError?: string;
  verdict: Verdict;
  at?: number | null;
  codes: string[];
}

const cases: Case[] = [
  { name: 'allowed, nothing in the way', url: 'http://a.test/page', verdict: 'fetch-now', at: NOW, codes: [] },
  { name: 'robots disallow: rule and line', url: 'http://a.test/nokc/x', verdict: 'never', codes: ['robots-disallowed'] },
  { name: 'robots: the * group does not apply when our group exists', url: 'http://a.test/private', verdict: 'fetch-now', codes: [] },
  { name: 'robots 503: later', url: 'http://a.test/page', robots: robotsFromFetch({ status: 503, body: Buffer.alloc(0) }), verdict: 'fetch-later', at: NOW + 60_000, codes: ['robots-unavailable'] },
  { name: 'robots 404: allowed', url: 'http://a.test/nokc', robots: robotsFromFetch({ status: 404, body: Buffer.alloc(0) }), verdict: 'fetch-now', codes: [] },
  { name: 'robots unknown', url: 'http://a.test/page', robots: null, verdict: 'fetch-now', codes: ['robots-unknown'] },
  { name: 'operator block until a time', url: 'http://a.test/page', policy: [pol('a.test', 'block', { blocked_until: NOW + 3600_000, reason: 'complaint #12' })], verdict: 'fetch-later', at: NOW + 3600_000, codes: ['blocked'] },
  { name: 'expired block', url: 'http://a.test/page', policy: [pol('a.test', 'block', { blocked_until: NOW - 1 })], verdict: 'fetch-now', codes: [] },
  { name: 'opt-out by registered domain', url: 'http://www.example.com/', optout: [['example.com|crawl', { subject: 'example.com', purpose: 'crawl', allowed: false, registry_version: 3, updated_at: 0 }]], verdict: 'never', codes: ['opted-out'] },
  { name: 'opt-out record of the registry (v2), scope registered_domain', url: 'http://shop.example.org/', optout: [['example.org', { subject: 'example.org', registry_version: 4, updated_at: 0, scope: 'registered_domain', purposes: { crawl: 'deny', search_index: 'allow', ai_training: 'allow' }, source: 'webmaster_console', verified: true, effective_at: 0 }]], verdict: 'never', codes: ['opted-out'] },
  { name: "a webmaster's rate, until its end", url: 'http://a.test/page', policy: [pol('a.test', 'webmaster-rate', { min_delay_ms: 2000, max_requests_per_second: 0.5, expires_at: NOW + 60_000 })], verdict: 'fetch-now', codes: ['webmaster-rate'] },
  { name: 'an expired webmaster rate', url: 'http://a.test/page', policy: [pol('a.test', 'webmaster-rate', { min_delay_ms: 2000, max_requests_per_second: 0.5, expires_at: NOW })], verdict: 'fetch-now', codes: [] },
  { name: 'learned trap rule', url: 'http://a.test/cal/2031/01', policy: [pol('a.test', 'trap:/cal', { reason: '5 near-duplicates' })], verdict: 'never', codes: ['trap-rule'] },
  { name: 'repeated segment trap', url: 'http://a.test/x/y/x/y/x/y', verdict: 'never', codes: ['trap-repeated-segment'] },
  { name: 'back-off window (Retry-After)', url: 'http://a.test/page', policy: [pol('a.test', 'backoff', { blocked_until: NOW + 30_000, reason: 'http-429 retry-after', min_delay_ms: 2000, failures: 1 })], verdict: 'fetch-later', at: NOW + 30_000, codes: ['backoff'] },
  { name: 'slowed host', url: 'http://a.test/page', policy: [pol('a.test', 'backoff', { min_delay_ms: 4000, reason: 'recovering' })], verdict: 'fetch-now', codes: ['slowed'] },
  { name: 'block and back-off: the later wins', url: 'http://a.test/page', policy: [pol('a.test', 'block', { blocked_until: NOW + 10_000 }), pol('a.test', 'backoff', { blocked_until: NOW + 20_000 })], verdict: 'fetch-later', at: NOW + 20_000, codes: ['blocked', 'backoff'] },
  { name: 'fetched, recrawl due', url: 'http://a.test/page', row: { state: 'FETCHED', fetched_at: NOW - 1000, http_status: 200, next_due_at: NOW + 86_400_000 }, verdict: 'fetched', at: NOW + 86_400_000, codes: ['fetched'] },
  { name: 'failed, retry at', url: 'http://a.test/page', row: { state: 'FAILED', attempts: 2, reason: 'http-503', next_due_at: NOW + 120_000 }, verdict: 'fetch-later', at: NOW + 120_000, codes: ['retry'] },
  { name: 'dead this cycle', url: 'http://a.test/page', row: { state: 'DEAD', attempts: 5, reason: 'CONNECT_FAILED' }, verdict: 'never', codes: ['dead'] },
  { name: 'invalid URL', url: 'ftp://a.test/x', verdict: 'never', codes: ['unsupported-scheme'] },
  { name: 'what the crawl last read in robots.txt', url: 'http://a.test/page', policy: [pol('a.test', 'robots', { reason: 'parsed', min_delay_ms: 2000 })], verdict: 'fetch-now', codes: ['robots-recorded'] },
  { name: 'a target the SSRF guard refuses', url: 'http://a.test/x', robots: robotsFromFetch({ error: 'SSRF_BLOCKED: 10.0.0.1' }), robotsError: 'SSRF_BLOCKED: 10.0.0.1', verdict: 'never', codes: ['refused-target'] },
];

describe('explain', () => {
  it.each(cases.map((c) => [c.name, c] as const))('%s', (_n, c) => {
    const policy = new HostPolicyTable();
    for (const [k, v] of c.policy ?? []) policy.apply(k, v);
    const optout = new OptOutRegistry();
    for (const [k, v] of c.optout ?? []) optout.apply(k, v);
    const e = explain({
      url: c.url, now: NOW, userAgent: UA, robots: c.robots === undefined ? ROBOTS : c.robots, policy, optout, row: c.row ? row(c.url, c.row) : null,
      robotsError: c.robotsError ?? null,
    });
    expect(e.verdict).toBe(c.verdict);
    if (c.at !== undefined) expect(e.at).toBe(c.at);
    expect(e.findings.map((f) => f.code).filter((x) => x !== 'crawl-rate')).toEqual(c.codes);
  });

  it('says how to let the crawler reach a refused address', () => {
    const e = explain({ url: 'http://a.test/x', now: NOW, userAgent: UA, robots: robotsFromFetch({ error: 'SSRF_BLOCKED: 10.0.0.1' }), robotsError: 'SSRF_BLOCKED: 10.0.0.1', policy: new HostPolicyTable(), optout: new OptOutRegistry(), row: null });
    expect(explanationText(e, NOW)).toContain('unless allowed (--allow-private-network or --allow-cidr; give explain the same flags as the crawl) (SSRF_BLOCKED: 10.0.0.1)');
  });

  it('names the matching robots rule with its line, in text and JSON', () => {
    const e = explain({ url: 'http://a.test/nokc/x', now: NOW, userAgent: UA, robots: ROBOTS, policy: new HostPolicyTable(), optout: new OptOutRegistry(), row: null });
    expect(e.robots).toEqual({ kind: 'parsed', allowed: false, rule: { directive: 'disallow', pattern: '/nokc', line: 6 } });
    const text = explanationText(e, NOW);
    expect(text).toContain('would not be fetched');
    expect(text).toContain('line 6: Disallow: /nokc');
    expect(JSON.parse(JSON.stringify(e))).toMatchObject({ verdict: 'never', findings: [{ code: 'robots-disallowed' }] });
  });

  it('says when robots.txt was cut at 500 KiB (RFC 9309 §2.5), and that rules past it do not count', () => {
    // A Disallow past the limit: ignored, so the URL is allowed.
    const body = Buffer.from(`User-agent: *\nAllow: /\n${'# padding\n'.repeat(52_000)}Disallow: /late\n`);
    expect(body.length).toBeGreaterThan(500 * 1024);
    const robots = robotsFromFetch({ status: 200, body });
    expect(robots.cutFromBytes).toBe(body.length);
    const e = explain({ url: 'http://a.test/late', now: NOW, userAgent: UA, robots, policy: new HostPolicyTable(), optout: new OptOutRegistry(), row: null, maxBodyBytes: 512 * 1024 });
    expect(e.verdict).toBe('fetch-now');
    expect(e.robots).toMatchObject({ allowed: true, cut_from_bytes: body.length });
    expect(explanationText(e, NOW)).toContain(`robots-cut: robots.txt is ${body.length.toLocaleString('en')} bytes: only its first 512,000 bytes (500 KiB, RFC 9309 §2.5) were read; rules after that are ignored`);
    // At the fetch cap, the file may be longer still.
    const capped = explain({ url: 'http://a.test/', now: NOW, userAgent: UA, robots: robotsFromFetch({ status: 200, body: Buffer.concat([body, Buffer.alloc(20_000, 0x0a)]).subarray(0, 512 * 1024) }), policy: new HostPolicyTable(), optout: new OptOutRegistry(), row: null, maxBodyBytes: 512 * 1024 });
    expect(capped.findings.find((f) => f.code === 'robots-cut')?.detail).toMatch(/^robots\.txt is 524,288 bytes or more: /);
    // Within the limit: nothing said.
    expect(robotsFromFetch({ status: 200, body: body.subarray(0, 500 * 1024) }).cutFromBytes).toBeUndefined();
  });

  it('text gives the time of a back-off', () => {
    const policy = new HostPolicyTable();
    policy.apply(...pol('a.test', 'backoff', { blocked_until: NOW + 30_000, reason: 'http-429 retry-after' }));
    const text = explanationText(explain({ url: 'http://a.test/', now: NOW, userAgent: UA, robots: ROBOTS, policy, optout: new OptOutRegistry(), row: null }), NOW);
    expect(text).toContain(`would be fetched at ${new Date(NOW + 30_000).toISOString()}`);
    expect(text).toContain('backoff: host backing off (http-429 retry-after)');
  });
});

describe('priority class and feeds in explain', () => {
  const base = { now: NOW, userAgent: UA, robots: ROBOTS, policy: new HostPolicyTable(), optout: new OptOutRegistry() };
  it('shows the row\'s class, derives it for a row written before classes, and none for an unknown URL', () => {
    const e = explain({ ...base, url: 'http://a.test/x', row: row('http://a.test/x', { priority_class: 3, depth: 1, priority: 1 }) });
    expect(e.priority_class).toBe(3);
    expect(explanationText(e, NOW)).toContain('priority class: 3 (low: the tail)');
    expect(explain({ ...base, url: 'http://a.test/x', row: row('http://a.test/x', { depth: 0, priority: 1 }) }).priority_class).toBe(1);
    expect(explain({ ...base, url: 'http://a.test/x', row: row('http://a.test/x', { depth: 1, priority: 0.3 }) }).priority_class).toBe(2);
    expect(explain({ ...base, url: 'http://a.test/x', row: row('http://a.test/x', { depth: 1, priority: 0.3 }), classPolicy: { priorityClassTailDepth: 1, priorityClassHighMin: 0.75, priorityClassLowBelow: 0.3 } }).priority_class).toBe(3);
    const unknown = explain({ ...base, url: 'http://a.test/x', row: null });
    expect(unknown.priority_class).toBeNull();
    expect(explanationText(unknown, NOW)).not.toContain('priority class');
  });

  it('says when and how a feed is polled', () => {
    const feed = {
      url: 'http://a.test/feed', host: 'a.test', kind: 'atom', interval_ms: 300_000, added_at: NOW - 3600_000, last_polled_at: NOW - 60_000, last_ok_at: NOW - 60_000,
      last_status: 304, etag: null, last_modified: null, items_seen: [], new_items: 0, polls: 12, items_total: 40, failures: 0, updated_at: NOW - 60_000,
    };
    const e = explain({ ...base, url: 'http://a.test/feed', row: row('http://a.test/feed', { state: 'FETCHED', fetched_at: NOW - 60_000, next_due_at: NOW + 240_000, priority_class: 1 }), feed });
    expect(e.feed).toEqual(feed);
    expect(explanationText(e, NOW)).toContain('feed: polled as a feed (atom) every 300 s');
    expect(e.findings.map((f) => f.code)).toEqual(['fetched', 'feed']);
  });
});

describe('stateFromJournal (read-only view of an embedded run)', () => {
  it('reads host policy, opt-outs and the URL row as the run journaled them, tombstones applied; the row from the store when it can be opened', async () => {
    const out = mkdtempSync(join(tmpdir(), 'explain-'));
    const log = new FileLog({ dir: join(out, 'state'), partitions: 4 });
    const [bk, bv] = pol('a.test', 'block', { blocked_until: NOW + 1000 });
    const [rk, rv] = pol('a.test', 'crawl-rate', { min_delay_ms: 5000 });
    log.append([
      { topic: 'hostPolicy', key: bk, host: 'a.test', value: bv },
      { topic: 'hostPolicy', key: rk, host: 'a.test', value: rv },
      { topic: 'urls', key: 'http://a.test/', host: 'a.test', value: row('http://a.test/', { state: 'FAILED', attempts: 1 }) },
      { topic: 'optout', key: 'b.test|crawl', host: 'b.test', value: { subject: 'b.test', purpose: 'crawl', allowed: false, registry_version: 1, updated_at: 0 } },
    ]);
    log.append([{ topic: 'hostPolicy', key: bk, host: 'a.test', value: null }]);
    log.close();
    const s = await stateFromJournal(out, 'http://a.test/', 'a.test');
    expect(s.policy.block('a.test', NOW)).toBeNull();
    expect(s.policy.minDelayMs('a.test')).toBe(5000);
    expect(s.row).toMatchObject({ state: 'FAILED', attempts: 1 });
    expect(s.optout.allows('b.test', 'crawl')).toBe(false);
    expect((await stateFromJournal(out, 'http://a.test/other', 'a.test')).row).toBeNull();
    // A folder no crawl wrote to is an error, not a crawl that knows nothing.
    await expect(stateFromJournal(join(out, 'typo'), 'http://a.test/', 'a.test')).rejects.toThrow(`--out ${join(out, 'typo')}: no crawl there (no ${join(out, 'typo', 'state')})`);
    expect(s.feed).toBeNull();

    // The frontier's store, where there is one (here it says FETCHED, the journal FAILED): read it.
    const p = partitionForHost('a.test', 4);
    const changelog = new MemoryChangelog(4);
    changelog.append('http://a.test/', 'a.test', row('http://a.test/', { state: 'FETCHED', fetched_at: 5 }));
    const [r] = await restoreStores([p], changelog, { dirOf: (q) => join(out, 'state', 'frontier', `urls-${q}`), levelOf: () => 0, levels: 4, log: pino({ level: 'silent' }) });
    // In use by a running crawl (its lock held): the journal answers.
    expect((await stateFromJournal(out, 'http://a.test/', 'a.test')).row).toMatchObject({ state: 'FAILED' });
    await r.store.close();
    expect((await stateFromJournal(out, 'http://a.test/', 'a.test')).row).toMatchObject({ state: 'FETCHED', fetched_at: 5 });
  });
});
