/**
 * Backpressure of `crawl run` and Kafka mode (runtime/backlog-holds.ts): which stage waits on which, and, over
 * a real FileLog and EmbeddedRunner, that a producer stops while its consumer lags so the
 * unconsumed records (held in memory by the embedded log) stay bounded, then all go through
 * once the consumer keeps up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { until } from '../support/until';
import { loadConfig } from '../../lib/config';
import { fetchedBytes } from '../../lib/fetched-body';
import type { CandidateMsg, FetchedPageMsg, LinkMsg } from '../../lib/messages';
import { embeddedHoldRules, holdWhileOf, kafkaHoldRules, UncommittedBytes, WARC_BACKLOG_SLACK_BYTES, withParseBacklogBytes, withWarcBacklog } from '../../runtime/backlog-holds';
import { EmbeddedRunner } from '../../runtime/embedded-runner';
import { FileLog } from '../../runtime/file-log';
import type { InRecord, OutRecord, Stage } from '../../runtime/stage';

const silent = pino({ level: 'silent' });

describe('withWarcBacklog', () => {
  it('holds fetch while the WARC writer has more than a file and the slack waiting, whatever parse says; other holds as they were', () => {
    const warc = { backlogBytes: 0 };
    let parseBehind = false;
    const holds = withWarcBacklog({ fetch: () => parseBehind, parse: () => true }, warc, 100);
    expect(holds.fetch()).toBe(false);
    warc.backlogBytes = 100 + WARC_BACKLOG_SLACK_BYTES;
    expect(holds.fetch()).toBe(false);
    warc.backlogBytes++;
    expect(holds.fetch()).toBe(true);
    warc.backlogBytes = 0;
    parseBehind = true;
    expect(holds.fetch()).toBe(true);
    expect(holds.parse()).toBe(true);
    // No parse rule (CRAWL_PARSE_BACKLOG_MAX=0): the writer's still holds.
    const only = withWarcBacklog({}, { backlogBytes: 100 + WARC_BACKLOG_SLACK_BYTES + 1 }, 100);
    expect(only.fetch()).toBe(true);
  });
});

describe('withParseBacklogBytes', () => {
  it('holds fetch while the backlog has more than max bytes, whatever else holds it; max 0 turns it off', () => {
    const backlog = { bytes: 0 };
    let countBehind = false;
    const holds = withParseBacklogBytes({ fetch: () => countBehind, parse: () => false }, backlog, 1000);
    expect(holds.fetch()).toBe(false);
    backlog.bytes = 1000;
    expect(holds.fetch()).toBe(false);
    backlog.bytes = 1001;
    expect(holds.fetch()).toBe(true);
    backlog.bytes = 0;
    countBehind = true;
    expect(holds.fetch()).toBe(true);
    expect(holds.parse()).toBe(false);
    // No count rule (CRAWL_PARSE_BACKLOG_MAX=0): bytes alone hold.
    expect(withParseBacklogBytes({}, { bytes: 1001 }, 1000).fetch()).toBe(true);
    // CRAWL_PARSE_BACKLOG_MAX_BYTES=0: no byte rule, the others as they were.
    const off = withParseBacklogBytes({ parse: () => true }, { bytes: 1e12 }, 0);
    expect(off.fetch).toBeUndefined();
    expect(off.parse()).toBe(true);
  });
});

describe('UncommittedBytes', () => {
  const rec = (partition: number, offset: number, size: number, topic: 'fetched' | 'links' = 'fetched'): InRecord =>
    ({ topic, partition, offset, key: 'k', value: { size }, timestamp: 0 });

  it('counts the bytes appended to its topic until the group commits past them, per partition', () => {
    const committed = [0, 0];
    const b = new UncommittedBytes('fetched', 2, (v) => (v as { size: number }).size, (p) => committed[p]);
    b.add([rec(0, 0, 100), rec(1, 0, 10), rec(0, 1, 200), rec(0, 0, 5000, 'links'), rec(1, 1, 0)]);
    expect(b.bytes).toBe(310);
    committed[0] = 1;
    expect(b.bytes).toBe(210);
    b.add([rec(0, 2, 300)]);
    expect(b.bytes).toBe(510);
    committed[1] = 2;
    committed[0] = 3;
    expect(b.bytes).toBe(0);
    // Records appended before counting began (a resumed crawl) are not counted; commits of them change nothing.
    committed[0] = 10;
    b.add([rec(0, 10, 7)]);
    expect(b.bytes).toBe(7);
  });

  it('stays exact over many records appended and committed in runs', () => {
    const committed = [0, 0, 0];
    const b = new UncommittedBytes('fetched', 3, (v) => (v as { size: number }).size, (p) => committed[p]);
    const ends = [0, 0, 0];
    const sizes: number[][] = [[], [], []];
    let seed = 7;
    const rand = (n: number): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) % n);
    for (let round = 0; round < 2000; round++) {
      const p = rand(3);
      const batch = Array.from({ length: rand(5) }, () => rec(p, ends[p]++, 1 + rand(100_000)));
      for (const r of batch) sizes[p].push((r.value as { size: number }).size);
      b.add(batch);
      const q = rand(3);
      committed[q] = Math.min(ends[q], committed[q] + rand(6));
      const expected = sizes.reduce((sum, s, i) => sum + s.slice(committed[i]).reduce((a, x) => a + x, 0), 0);
      expect(b.bytes).toBe(expected);
    }
  });

  it("follows crawl.parse's commits on a real FileLog over gzipped-record sizes", () => {
    const dir = mkdtempSync(join(tmpdir(), 'holds-bytes-'));
    try {
      const log = new FileLog({ dir, partitions: 2 });
      log.subscribe('crawl.parse', ['fetched']);
      const b = new UncommittedBytes('fetched', log.partitions, (v) => fetchedBytes(v as FetchedPageMsg), (p) => log.committed('crawl.parse').fetched?.[p] ?? 0);
      log.on('append', b.add);
      const page = (host: string, i: number, gz: number): OutRecord => ({
        topic: 'fetched', key: host, host, value: {
          url: `http://${host}/${i}`, final_url: `http://${host}/${i}`, host, depth: 1, fetched_at: i, http_status: 200, content_type: 'text/html',
          body: Buffer.alloc(0), record_gz: Buffer.alloc(gz), truncated: false, sha256: `s${i}`, prev_sha256: null,
          warc: { uri: 'file:///w.warc.gz', offset: i, length: gz }, x_robots_tag: null,
        } satisfies FetchedPageMsg,
      });
      log.append([page('a.test', 0, 1000), page('b.test', 1, 2000), page('a.test', 2, 4000)]);
      expect(b.bytes).toBe(7000);
      const pa = log.read('fetched', 0, 0, 10).length ? 0 : 1;
      const first = log.read('fetched', pa, 0, 10);
      log.commit('crawl.parse', 'fetched', pa, first.length);
      expect(b.bytes).toBe(7000 - first.reduce((sum, r) => sum + fetchedBytes(r.value as FetchedPageMsg), 0));
      log.commit('crawl.parse', 'fetched', 1 - pa, log.endOffset('fetched', 1 - pa));
      expect(b.bytes).toBe(0);
      log.off('append', b.add);
      log.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('embeddedHoldRules', () => {
  it('holds fetch on parse, parse on seen-test and seen-test on the frontier, which nothing holds', () => {
    const rules = embeddedHoldRules(loadConfig({}));
    expect(rules.map((r) => [r.stage, r.group, r.topic, r.max])).toEqual([
      ['fetch', 'crawl.parse', 'fetched', 4096],
      ['parse', 'crawl.seen-test', 'links', 20_000],
      ['seen-test', 'crawl.frontier', 'frontier', 20_000],
    ]);
    // Each rule waits on the group of the next stage of the chain; the chain ends at the frontier.
    expect(rules.some((r) => r.stage === 'frontier')).toBe(false);
    expect(embeddedHoldRules({ parseBacklogMax: 0, stageBacklogMax: 0 })).toEqual([]);
    expect(embeddedHoldRules(loadConfig({ CRAWL_STAGE_BACKLOG_MAX: '5' })).map((r) => r.max)).toEqual([4096, 5, 5]);
  });

  it("keeps fetch's rule alone in Kafka mode, where other backlogs wait on the brokers' disks", () => {
    expect(kafkaHoldRules(loadConfig({ CRAWL_PARSE_BACKLOG_MAX: '7' }))).toEqual([{ stage: 'fetch', group: 'crawl.parse', topic: 'fetched', max: 7 }]);
    expect(kafkaHoldRules({ parseBacklogMax: 0, stageBacklogMax: 10 })).toEqual([]);
    const hold = holdWhileOf(kafkaHoldRules(loadConfig({})), (g, t) => (g === 'crawl.parse' && t === 'fetched' ? 4097 : 0));
    expect(Object.keys(hold)).toEqual(['fetch']);
    expect(hold.fetch()).toBe(true);
  });

  it('says hold exactly while the lag is above the limit', () => {
    const lags: Record<string, number> = { 'crawl.parse fetched': 4096, 'crawl.seen-test links': 20_001, 'crawl.frontier frontier': 0 };
    const hold = holdWhileOf(embeddedHoldRules(loadConfig({})), (g, t) => lags[`${g} ${t}`] ?? 0);
    expect(hold.fetch()).toBe(false);
    expect(hold.parse()).toBe(true);
    expect(hold['seen-test']()).toBe(false);
    lags['crawl.parse fetched'] = 4097;
    expect(hold.fetch()).toBe(true);
  });
});

describe('a producer held on a lagging consumer', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'holds-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('stops producing while the frontier lags past the limit, and every record goes through once it catches up', async () => {
    const log = new FileLog({ dir, partitions: 2 });
    const MAX = 10;
    const READ_AHEAD = 4;
    // seen-test's stand-in: one candidate per link.
    const screen: Stage = {
      id: 'seen-test', inputs: ['links'], outputs: ['frontier'],
      handle: (rec: InRecord): OutRecord[] => {
        const l = rec.value as LinkMsg;
        const c: CandidateMsg = { url: l.url, host: rec.key, depth: 0, discovered_at: 1, source_url: null };
        return [{ topic: 'frontier', key: rec.key, host: rec.key, value: c }];
      },
    };
    // The frontier's stand-in takes nothing until `open`.
    let open: () => void = () => undefined;
    const gate = new Promise<void>((r) => (open = r));
    let taken = 0;
    const frontier: Stage = {
      id: 'frontier', inputs: ['frontier'], outputs: [],
      handle: async (): Promise<OutRecord[]> => {
        await gate;
        taken++;
        return [];
      },
    };
    const rules = embeddedHoldRules({ parseBacklogMax: 0, stageBacklogMax: MAX });
    const runner = new EmbeddedRunner(log, [screen, frontier], silent, {
      checkpointMs: 50, readAhead: READ_AHEAD, holdWhile: holdWhileOf(rules, (g, t) => log.lag(g, t)),
    });
    await runner.start();
    const links: OutRecord[] = Array.from({ length: 200 }, (_, i) => {
      const host = `h${i % 7}.test`;
      return { topic: 'links', key: host, host, value: { url: `http://${host}/${i}`, source_url: null, depth: 0, discovered_at: 1, is_seed: false } satisfies LinkMsg };
    });
    log.append(links);
    await until(() => log.lag('crawl.frontier', 'frontier') > MAX, 10_000);
    // Give the producer time to run on if nothing held it.
    await new Promise((r) => setTimeout(r, 300));
    const lagWhileHeld = log.lag('crawl.frontier', 'frontier');
    // At most one read-ahead past the limit: records dispatched before the hold was seen.
    expect(lagWhileHeld).toBeLessThanOrEqual(MAX + READ_AHEAD);
    expect(log.lag('crawl.seen-test', 'links')).toBeGreaterThanOrEqual(200 - MAX - READ_AHEAD);
    open();
    await until(() => taken === 200 && log.lag('crawl.seen-test', 'links') === 0 && log.lag('crawl.frontier', 'frontier') === 0, 10_000);
    await runner.stop();
    log.close();
  });
});
