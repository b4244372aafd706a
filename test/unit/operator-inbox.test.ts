/**
 * The embedded crawl's operator inbox (cli/operator-inbox.ts) and the records of `crawl block`
 * (cli/operator-commands.ts): what a request may write, a request's way from a file to the
 * crawl and back as a reply, and whether a crawl runs on a folder. Real files in a temp folder.
 */
import { existsSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blockRequest, blockSeconds, hostArg, unblockRequest } from '../../cli/operator-commands';
import { crawlRunning, inboxDir, OperatorInbox, refusal, submit, submitAndWait, type InboxRequest } from '../../cli/operator-inbox';
import { seedLink } from '../../lib/seed-source';

const json = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
const seedReq = (url: string): InboxRequest => ({ what: 'seed', records: [{ topic: 'links', key: new URL(url).hostname, host: new URL(url).hostname, value: seedLink({ url }, 1000) }] });

describe('refusal', () => {
  it('takes seeds, blocks, unblocks', () => {
    expect(refusal(json(seedReq('https://a.test/')))).toBeNull();
    expect(refusal(json(blockRequest('a.test', { for: 60, reason: 'r' }, 1000, 'operator:me')))).toBeNull();
    expect(refusal(json(unblockRequest('a.test', 1000, 'operator:me')))).toBeNull();
  });

  it('refuses what operators do not write', () => {
    expect(refusal(null)).toBe('not a request object');
    expect(refusal({ what: 'x', records: [] })).toBe('no records');
    const link = seedReq('https://a.test/');
    (link.records[0].value as { is_seed: boolean }).is_seed = false;
    expect(refusal(json(link))).toMatch(/not a seed/);
    expect(refusal({ what: 'x', records: [{ topic: 'fetch', key: 'a.test', host: 'a.test', value: {} }] })).toMatch(/topic operators do not write/);
    const backoff = blockRequest('a.test', { for: 60 }, 1000, 'operator:me');
    backoff.records[0] = { ...backoff.records[0], key: 'a.test|backoff', value: { ...(backoff.records[0].value as object), field: 'backoff' } };
    expect(refusal(json(backoff))).toMatch(/host-policy row the operator does not set/);
    const bad = blockRequest('a.test', { for: 60 }, 1000, 'operator:me');
    (bad.records[0].value as { blocked_until: unknown }).blocked_until = 'soon';
    expect(refusal(json(bad))).toMatch(/does not fit its schema/);
  });
});

describe('crawl block arguments', () => {
  it('blocks for --for seconds, and knows the host unless forced', () => {
    const r = blockRequest('a.test', { for: 90, reason: 'why' }, 1_000_000, 'operator:me');
    expect(r.records[0]).toMatchObject({ topic: 'hostPolicy', key: 'a.test|block', value: { field: 'block', blocked_until: 1_090_000, reason: 'why' } });
    expect(r.records[1]).toMatchObject({ topic: 'webmasterAudit', value: { actor: 'operator:me', action: 'block', host: 'a.test' } });
    expect(r.knownHost).toBe('a.test');
    expect(blockRequest('a.test', { for: 90, force: true }, 0).knownHost).toBeUndefined();
    expect(unblockRequest('a.test', 0).records[0]).toEqual({ topic: 'hostPolicy', key: 'a.test|block', host: 'a.test', value: null });
  });

  it('refuses bad hosts and durations plainly', () => {
    expect(hostArg('Example.COM')).toBe('example.com');
    expect(() => hostArg('https://example.com/')).toThrow(/not a host name/);
    expect(blockSeconds('3600')).toBe(3600);
    for (const bad of ['0', '-5', 'soon', String(367 * 86400)]) expect(() => blockSeconds(bad)).toThrow(/expected seconds > 0/);
  });
});

describe('the inbox', () => {
  it('hands requests to the crawl in order, replies, sets a bad file aside', async () => {
    const out = mkdtempSync(join(tmpdir(), 'kcrawl-inbox-'));
    const inbox = new OperatorInbox(out);
    const first = submit(out, seedReq('https://a.test/'));
    const second = submit(out, blockRequest('b.test', { for: 60 }, Date.now(), 'operator:me'));
    writeFileSync(join(inboxDir(out), '000000000000001-deadbeef.json'), '{"what":');
    const seen: string[] = [];
    const n = await inbox.take(async (req) => {
      if (req.knownHost === 'b.test') throw new Error('the crawl does not know b.test');
      seen.push(req.what);
      return 'ok';
    });
    expect(n).toBe(3);
    expect(seen).toEqual(['seed']);
    const files = readdirSync(inboxDir(out)).sort();
    expect(files).toEqual(['000000000000001-deadbeef.json.bad', '000000000000001-deadbeef.reply.json', `${first}.reply.json`, `${second}.reply.json`].sort());
    // Nothing is taken twice.
    expect(await inbox.take(async () => 'again')).toBe(0);
  });

  it('says whether a crawl runs, and what became of a request', async () => {
    const out = mkdtempSync(join(tmpdir(), 'kcrawl-inbox-'));
    expect(crawlRunning(out)).toBe(false);
    expect(await submitAndWait(out, seedReq('https://a.test/'), 200)).toMatch(/queued in .*no crawl runs on/);
    const inbox = new OperatorInbox(out);
    inbox.claim();
    expect(crawlRunning(out)).toBe(true);
    const timer = setInterval(() => void inbox.take(async (req) => {
      if (req.knownHost) throw new Error('the crawl does not know typo.test; give --force to set it anyway');
      return '1 record(s) in the journal';
    }), 20);
    try {
      expect(await submitAndWait(out, seedReq('https://c.test/'), 5000)).toMatch(/^seed: applied by the crawl on .*\(1 record\(s\) in the journal\)$/);
      await expect(submitAndWait(out, blockRequest('typo.test', { for: 60 }, Date.now(), 'operator:me'), 5000)).rejects.toThrow(/refused crawl block typo\.test .*does not know typo\.test/);
    } finally {
      clearInterval(timer);
    }
    inbox.release();
    expect(crawlRunning(out)).toBe(false);
    expect(existsSync(join(out, 'crawl.pid'))).toBe(false);
  });
});
