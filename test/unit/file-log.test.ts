import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync } from 'node:fs';
import * as avro from 'avsc';
import { loadSchema, schemaBefore } from '../../lib/avro';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { until } from '../support/until';
import { FileLog } from '../../runtime/file-log';
import { EmbeddedRunner } from '../../runtime/embedded-runner';
import type { InRecord, OutRecord, Stage } from '../../runtime/stage';
import { partitionForHost } from '../../lib/partitioner';
import type { CandidateMsg, FetchedPageMsg, LinkMsg, UrlStateMsg } from '../../lib/messages';
import { topics } from '../../topologies/crawl';

const P = 4;
const silent = pino({ level: 'silent' });

function link(url: string): LinkMsg {
  return { url, source_url: null, depth: 0, discovered_at: 1, is_seed: true };
}
function linkRec(host: string, path = '/'): OutRecord {
  return { topic: 'links', key: host, host, value: link(`http://${host}${path}`) };
}
function urlRow(url: string, state: UrlStateMsg['state']): UrlStateMsg {
  return {
    url, host: new URL(url).hostname, state, depth: 0, discovered_at: 0, updated_at: 0, lease_id: null, lease_expires_at: null,
    attempts: 0, next_due_at: null, fetched_at: null, http_status: null, sha256: null, etag: null, last_modified: null,
    warc_uri: null, warc_offset: null, warc_length: null, reason: null, redirects: 0, priority: null, priority_class: null,
  };
}
function segFiles(dir: string, topic: keyof typeof topics, p: number): string[] {
  const d = join(dir, 'topics', topics[topic].name, String(p));
  return readdirSync(d).filter((f) => f.endsWith('.seg')).map((f) => join(d, f));
}

describe('FileLog', () => {
  let dir: string;
  const open: FileLog[] = [];
  const newLog = (): FileLog => {
    const l = new FileLog({ dir, partitions: P });
    open.push(l);
    return l;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'filelog-'));
  });
  afterEach(() => {
    for (const l of open.splice(0)) {
      try {
        l.close();
      } catch {
        /* already closed */
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('routes appends by host with lib/partitioner and reads them back in order', () => {
    const log = newLog();
    const hosts = ['a.test', 'b.test', 'c.test', 'd.test', 'e.test', 'f.test', 'g.test'];
    log.append(hosts.flatMap((h) => [linkRec(h, '/1'), linkRec(h, '/2')]), 1234);
    for (const h of hosts) {
      const p = partitionForHost(h, P);
      const recs = log.read('links', p, 0, 1000).filter((r) => r.key === h);
      expect(recs.map((r) => (r.value as LinkMsg).url)).toEqual([`http://${h}/1`, `http://${h}/2`]);
      expect(recs[0]).toMatchObject({ topic: 'links', partition: p, timestamp: 1234 });
      for (let q = 0; q < P; q++) if (q !== p) expect(log.read('links', q, 0, 1000).some((r) => r.key === h)).toBe(false);
    }
    let total = 0;
    for (let p = 0; p < P; p++) {
      const recs = log.read('links', p, 0, 1000);
      expect(recs.map((r) => r.offset)).toEqual(recs.map((_, i) => i));
      expect(log.endOffset('links', p)).toBe(recs.length);
      total += recs.length;
    }
    expect(total).toBe(hosts.length * 2);
  });

  it('writes small and large values across its frame buffers and reads every byte back after reopen', () => {
    // Frames are built in chunks that start at 16 KiB and double up to 1 MiB; a value that does
    // not fit the room left is encoded again in the next chunk, sized for it if need be. Bodies
    // of 1 B to 1.5 MiB mixed with small link records cross every such boundary.
    const page = (i: number, bytes: number): FetchedPageMsg => ({
      url: `http://a.test/${i}`, final_url: `http://a.test/${i}`, host: 'a.test', depth: 1, fetched_at: i, http_status: 200,
      content_type: 'text/html', body: Buffer.alloc(bytes, i % 251), truncated: false, sha256: `s${i}`, prev_sha256: null,
      warc: { uri: 'file:///w.warc.gz', offset: i, length: bytes }, x_robots_tag: null,
    });
    const sizes = [1, 30_000, 40_000, 70_000, 200_000, 5, 63_000, 64_000, 10, 1_500_000, 50_000, 50_000, 50_000];
    const log = newLog();
    const p = partitionForHost('a.test', P);
    const expected: Array<[string, number]> = [];
    sizes.forEach((bytes, i) => {
      log.append([{ topic: 'fetched', key: 'a.test', host: 'a.test', value: page(i, bytes) }, linkRec('a.test', `/l${i}`)], 1000 + i);
      expected.push([`http://a.test/${i}`, bytes]);
      // Some turns end here (a flush), some run on into the next appends.
      if (i % 3 === 2) log.flush();
    });
    log.close();
    const log2 = newLog();
    const pages = log2.read('fetched', p, 0, 100);
    expect(pages.map((r) => [(r.value as FetchedPageMsg).url, (r.value as FetchedPageMsg).body.length])).toEqual(expected);
    pages.forEach((r, i) => {
      expect(r.timestamp).toBe(1000 + i);
      expect((r.value as FetchedPageMsg).body.equals(Buffer.alloc(sizes[i]!, i % 251))).toBe(true);
    });
    expect(log2.read('links', p, 0, 100).map((r) => (r.value as LinkMsg).url)).toEqual(sizes.map((_, i) => `http://a.test/l${i}`));
  });

  it('read honours from and max; append emits "append"', () => {
    const log = newLog();
    let events = 0;
    log.on('append', () => events++);
    log.append([0, 1, 2, 3, 4].map((i) => linkRec('a.test', `/${i}`)));
    log.append([]);
    expect(events).toBe(1);
    const p = partitionForHost('a.test', P);
    expect(log.read('links', p, 2, 2).map((r) => r.offset)).toEqual([2, 3]);
    expect(log.read('links', p, 5, 10)).toEqual([]);
  });

  it('commit only moves forward; checkpoint persists offsets across reopen', () => {
    const log = newLog();
    log.subscribe('g', ['links']);
    log.commit('g', 'links', 1, 5);
    log.commit('g', 'links', 1, 3);
    expect(log.committed('g').links).toEqual([0, 5, 0, 0]);
    log.checkpoint();
    log.close();
    const log2 = newLog();
    expect(log2.committed('g').links).toEqual([0, 5, 0, 0]);
    expect(log2.committed('other')).toEqual({});
  });

  it('journals commits after a checkpoint into the emptied journal, which a killed process leaves for the next', async () => {
    const log = newLog();
    log.subscribe('g', ['links']);
    log.commit('g', 'links', 1, 5);
    await new Promise((r) => setImmediate(r));
    log.checkpoint();
    const journal = join(dir, 'offsets', 'g.log');
    expect(readFileSync(journal, 'utf8')).toBe('');
    log.commit('g', 'links', 1, 7);
    log.commit('g', 'links', 2, 2);
    await new Promise((r) => setImmediate(r));
    expect(readFileSync(journal, 'utf8')).toBe('["links",1,7]\n["links",2,2]\n');
    // No close (a kill): the snapshot says 5, the journal 7.
    const log2 = newLog();
    expect(log2.committed('g').links).toEqual([0, 7, 2, 0]);
    log.close();
  });

  it('reopen restores the records some group has not committed and continues offsets', () => {
    const log = newLog();
    const p = partitionForHost('a.test', P);
    log.append([linkRec('a.test', '/1'), linkRec('a.test', '/2'), linkRec('a.test', '/3')]);
    log.subscribe('g', ['links']);
    log.commit('g', 'links', p, 1);
    log.close();
    const log2 = newLog();
    expect(log2.endOffset('links', p)).toBe(3);
    const from = log2.committed('g').links![p];
    expect(from).toBe(1);
    expect(log2.read('links', p, from, 10).map((r) => (r.value as LinkMsg).url)).toEqual(['http://a.test/2', 'http://a.test/3']);
    log2.append([linkRec('a.test', '/4')]);
    // /1, committed by every group reading links, is not read back (a consumed record's retention).
    expect(log2.read('links', p, 0, 10).map((r) => [r.offset, (r.value as LinkMsg).url])).toEqual([
      [1, 'http://a.test/2'], [2, 'http://a.test/3'], [3, 'http://a.test/4'],
    ]);
    log2.close();
    // And the appended record survives another reopen, after the earlier ones.
    const log3 = newLog();
    expect(log3.read('links', p, 0, 10).map((r) => (r.value as LinkMsg).url)).toEqual([
      'http://a.test/2', 'http://a.test/3', 'http://a.test/4',
    ]);
    expect(log3.endOffset('links', p)).toBe(4);
  });

  it('the compacted urls table keeps the latest value per key; tombstones delete; survives reopen', () => {
    const log = newLog();
    const u1 = 'http://a.test/1';
    const u2 = 'http://a.test/2';
    const u3 = 'http://a.test/3';
    const p = partitionForHost('a.test', P);
    log.append([
      { topic: 'urls', key: u1, host: 'a.test', value: urlRow(u1, 'QUEUED') },
      { topic: 'urls', key: u2, host: 'a.test', value: urlRow(u2, 'QUEUED') },
      { topic: 'urls', key: u3, host: 'a.test', value: urlRow(u3, 'QUEUED') },
      { topic: 'urls', key: u1, host: 'a.test', value: urlRow(u1, 'LEASED') },
      { topic: 'urls', key: u1, host: 'a.test', value: urlRow(u1, 'FETCHED') },
      { topic: 'urls', key: u2, host: 'a.test', value: null },
    ]);
    const expected = [
      { partition: p, key: u1, value: urlRow(u1, 'FETCHED') },
      { partition: p, key: u3, value: urlRow(u3, 'QUEUED') },
    ];
    const byKey = (a: { key: string }, b: { key: string }): number => a.key.localeCompare(b.key);
    expect(log.table('urls', p).sort(byKey)).toEqual(expected);
    log.close();
    const log2 = newLog();
    expect(log2.table('urls', p).sort(byKey)).toEqual(expected);
    for (let q = 0; q < P; q++) if (q !== p) expect(log2.table('urls', q)).toEqual([]);
  });

  it('a compacted table is never held in memory: rows are read from the segments, appends after included', () => {
    const log = newLog();
    const p = partitionForHost('a.test', P);
    const u = (i: number): string => `http://a.test/${i}`;
    log.append(Array.from({ length: 50 }, (_, i) => ({ topic: 'urls' as const, key: u(i), host: 'a.test', value: urlRow(u(i), 'QUEUED') })));
    log.flush();
    // Written or still pending: an update, a tombstone and a new row.
    log.append([
      { topic: 'urls', key: u(3), host: 'a.test', value: urlRow(u(3), 'FETCHED') },
      { topic: 'urls', key: u(7), host: 'a.test', value: null },
      { topic: 'urls', key: u(50), host: 'a.test', value: urlRow(u(50), 'QUEUED') },
    ]);
    expect(log.read('urls', p, 0, 100)).toEqual([]);
    const expected = Array.from({ length: 51 }, (_, i) => i)
      .filter((i) => i !== 7)
      .map((i) => ({ partition: p, key: u(i), value: urlRow(u(i), i === 3 ? 'FETCHED' : 'QUEUED') }));
    const byKey = (a: { key: string }, b: { key: string }): number => a.key.localeCompare(b.key);
    expect(log.table('urls', p).sort(byKey)).toEqual(expected.sort(byKey));
    log.close();
    expect(newLog().table('urls', p).sort(byKey)).toEqual(expected);
  });

  it('compact() cleans a compacted topic\'s closed segments on disk: the newest record of each key, offsets kept, tombstones for a day', async () => {
    const p = partitionForHost('a.test', P);
    const u = (i: number): string => `http://a.test/${i}`;
    const log = new FileLog({ dir, partitions: P, segmentBytes: 4096 });
    open.push(log);
    const t0 = Date.now();
    // 10 rounds over the same 40 URLs (each round a new state), a tombstone written 2 days ago and one just now.
    for (let round = 0; round < 10; round++) {
      log.append(Array.from({ length: 40 }, (_, i) => ({ topic: 'urls' as const, key: u(i), host: 'a.test', value: urlRow(u(i), round % 2 ? 'FETCHED' : 'QUEUED') })), t0);
    }
    log.append([{ topic: 'urls', key: u(5), host: 'a.test', value: null }], t0 - 2 * 86_400_000);
    log.append([{ topic: 'urls', key: u(6), host: 'a.test', value: null }], t0);
    // New keys after them, so the tombstones are in closed segments, not the active one.
    log.append(Array.from({ length: 200 }, (_, i) => ({ topic: 'urls' as const, key: u(100 + i), host: 'a.test', value: urlRow(u(100 + i), 'QUEUED') })), t0);
    log.flush();
    const end = log.endOffset('urls', p);
    const before = log.table('urls', p);
    const raw = async (): Promise<Array<{ offset: number; key: string; tomb: boolean }>> => {
      const out: Array<{ offset: number; key: string; tomb: boolean }> = [];
      await log.readRaw('urls', p, 0, end, 1000, async (recs) => void out.push(...recs.map((r) => ({ offset: r.offset, key: r.key, tomb: r.value === null }))));
      return out;
    };
    expect(await raw()).toHaveLength(end);
    const bytes = (): number => segFiles(dir, 'urls', p).length + readdirSync(join(dir, 'topics', topics.urls.name, String(p))).filter((f) => f.endsWith('.cseg')).length;
    const filesBefore = bytes();
    expect(await log.compact(t0)).toBeGreaterThan(0);
    const after = await raw();
    // The cleaned range (up to the active segment, left as it is): one record per key, offsets unchanged and increasing.
    const cleanedEnd = Math.max(...readdirSync(join(dir, 'topics', topics.urls.name, String(p))).filter((f) => f.endsWith('.cseg')).map((f) => Number(f.slice(21, 41))));
    const cleaned = after.filter((r) => r.offset < cleanedEnd);
    expect(cleanedEnd).toBeGreaterThan(end / 2);
    expect(new Set(cleaned.map((r) => r.key)).size).toBe(cleaned.length);
    expect(after.map((r) => r.offset)).toEqual([...after.map((r) => r.offset)].sort((a, b) => a - b));
    expect(after.filter((r) => r.key === u(5))).toEqual([]); // its tombstone was older than a day
    expect(after.find((r) => r.key === u(6))?.tomb).toBe(true); // kept: a reader may not have seen it yet
    expect(after.length).toBeLessThan(end / 2);
    expect(bytes()).toBeLessThan(filesBefore);
    // The table reads the same, now and after a reopen; appends go on at the same offsets.
    const byKey = (a: { key: string }, b: { key: string }): number => a.key.localeCompare(b.key);
    expect(log.table('urls', p).sort(byKey)).toEqual(before.sort(byKey));
    log.append([{ topic: 'urls', key: u(1), host: 'a.test', value: urlRow(u(1), 'DEAD') }]);
    expect(log.endOffset('urls', p)).toBe(end + 1);
    log.close();
    const again = new FileLog({ dir, partitions: P, segmentBytes: 4096 });
    open.push(again);
    expect(again.endOffset('urls', p)).toBe(end + 1);
    expect(again.table('urls', p).find((r) => r.key === u(1))?.value).toMatchObject({ state: 'DEAD' });
    expect(again.table('urls', p).length).toBe(before.length);
  });

  /** A value in the schema as writers before `version` wrote it (lib/avro schemaBefore). */
  const oldBytes = (schema: string, version: number, value: unknown): Buffer =>
    avro.Type.forSchema(schemaBefore(loadSchema(schema), version) as avro.Schema).toBuffer(value);

  /** Appends a frame as an earlier release wrote it: [length][key length][key][timestamp][value]. */
  function appendOldFrame(topic: 'links' | 'urls', p: number, keyText: string, value: Buffer): void {
    const key = Buffer.from(keyText);
    const frame = Buffer.alloc(4 + 4 + key.length + 8 + value.length);
    frame.writeUInt32LE(frame.length - 4, 0);
    frame.writeUInt32LE(key.length, 4);
    key.copy(frame, 8);
    frame.writeDoubleLE(99, 8 + key.length);
    value.copy(frame, 16 + key.length);
    const [seg] = segFiles(dir, topic, p);
    appendFileSync(seg!, frame);
  }

  it('reads links written before groups existed (the first Link schema) from an earlier release\'s segment', () => {
    const log = newLog();
    const p = partitionForHost('a.test', P);
    log.append([linkRec('a.test', '/now')]);
    log.close();
    appendOldFrame('links', p, 'a.test', oldBytes('crawl.Link.v1', 2, link('http://a.test/then')));
    const log2 = newLog();
    expect(log2.read('links', p, 0, 10).map((r) => r.value)).toEqual([
      { ...link('http://a.test/now'), redirects: 0, priority: null, lastmod: null, more_urls: [], priority_class: null },
      { ...link('http://a.test/then'), redirects: 0, priority: null, lastmod: null, more_urls: [], priority_class: null },
    ]);
  });

  it('reads URL-table rows written before priority classes existed (the first UrlState schema) from an earlier release\'s segment', () => {
    const log = newLog();
    const u = 'http://a.test/old';
    const p = partitionForHost('a.test', P);
    log.append([{ topic: 'urls', key: 'http://a.test/new', host: 'a.test', value: { ...urlRow('http://a.test/new', 'QUEUED'), priority_class: 2 } }]);
    log.close();
    const { priority_class: _c, ...oldRow } = urlRow(u, 'FETCHED');
    appendOldFrame('urls', p, u, oldBytes('crawl.UrlState.v1', 2, oldRow));
    const log2 = newLog();
    const rows = new Map(log2.table('urls', p).map((r) => [r.key, r.value]));
    expect(rows.get(u)).toEqual({ ...oldRow, priority_class: null });
    expect(rows.get('http://a.test/new')).toMatchObject({ priority_class: 2 });
  });

  it('cuts a torn last frame on reopen and keeps appending after it', () => {
    const log = newLog();
    const p = partitionForHost('a.test', P);
    log.append([linkRec('a.test', '/1'), linkRec('a.test', '/2'), linkRec('a.test', '/3')]);
    log.close();
    const [seg] = segFiles(dir, 'links', p);
    const size = statSync(seg).size;
    truncateSync(seg, size - 3);
    const log2 = newLog();
    expect(log2.endOffset('links', p)).toBe(2);
    expect(log2.read('links', p, 0, 10).map((r) => (r.value as LinkMsg).url)).toEqual(['http://a.test/1', 'http://a.test/2']);
    log2.append([linkRec('a.test', '/4'), linkRec('a.test', '/5')]);
    expect(log2.read('links', p, 0, 10).map((r) => r.offset)).toEqual([0, 1, 2, 3]);
    log2.close();
    const log3 = newLog();
    expect(log3.read('links', p, 0, 10).map((r) => [r.offset, (r.value as LinkMsg).url])).toEqual([
      [0, 'http://a.test/1'], [1, 'http://a.test/2'], [2, 'http://a.test/4'], [3, 'http://a.test/5'],
    ]);
  });

  it('checkpoint trims records every subscribed group has consumed, and no more', () => {
    const log = newLog();
    const p = partitionForHost('a.test', P);
    log.append([1, 2, 3, 4, 5].map((i) => linkRec('a.test', `/${i}`)));
    log.subscribe('fast', ['links']);
    log.subscribe('slow', ['links']);
    log.commit('fast', 'links', p, 5);
    log.commit('slow', 'links', p, 2);
    log.checkpoint();
    // The slow group's unread records are still there; what both have read is gone from memory.
    expect(log.read('links', p, 0, 10).map((r) => r.offset)).toEqual([2, 3, 4]);
    log.commit('slow', 'links', p, 4);
    log.checkpoint();
    expect(log.read('links', p, 0, 10).map((r) => r.offset)).toEqual([4]);
    expect(log.endOffset('links', p)).toBe(5);
  });

  it('a checkpoint deletes segments every group has consumed, also when each commit had trimmed memory already; a reopen reads none of them', () => {
    const p = partitionForHost('a.test', P);
    const log = new FileLog({ dir, partitions: P, segmentBytes: 512 });
    open.push(log);
    log.subscribe('g', ['links']);
    for (let i = 0; i < 200; i++) log.append([linkRec('a.test', `/${i}`)]);
    log.flush();
    const before = segFiles(dir, 'links', p).length;
    expect(before).toBeGreaterThan(10);
    for (let i = 64; i <= 192; i += 64) log.commit('g', 'links', p, i); // memory trimmed at each commit, in runs of 64
    log.checkpoint();
    expect(segFiles(dir, 'links', p).length).toBeLessThan(before / 2);
    log.close();
    const again = new FileLog({ dir, partitions: P, segmentBytes: 512 });
    open.push(again);
    expect(again.read('links', p, 0, 1000).map((r) => r.offset)).toEqual(Array.from({ length: 8 }, (_, i) => 192 + i));
    expect(again.endOffset('links', p)).toBe(200);
  });

  it('subscribe before commits prevents trimming anything unread', () => {
    const log = newLog();
    const p = partitionForHost('a.test', P);
    log.append([1, 2, 3].map((i) => linkRec('a.test', `/${i}`)));
    log.subscribe('reader', ['links']);
    log.subscribe('done', ['links']);
    log.commit('done', 'links', p, 3);
    log.checkpoint();
    expect(log.read('links', p, 0, 10)).toHaveLength(3);
  });
});

describe('FileLog: crawl.host-policy', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'host-policy-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('closes its segments at its own small size (journalSegmentBytes), so compaction keeps what a start reads back near the live rows', async () => {
    expect(topics.hostPolicy.journalSegmentBytes).toBe(1024 * 1024);
    const log = new FileLog({ dir, partitions: P });
    const host = 'a.test';
    const p = partitionForHost(host, P);
    const row = (i: number, round: number): OutRecord => ({
      topic: 'hostPolicy', key: `${host}|backoff-${i}`, host,
      value: { host, field: `backoff-${i}`, updated_at: round, blocked_until: round, reason: 'x'.repeat(200), min_delay_ms: null },
    });
    // 100 keys rewritten 100 times: about 2.5 MiB of rows, 100 of them current.
    for (let round = 0; round < 100; round++) log.append(Array.from({ length: 100 }, (_, i) => row(i, round)));
    log.flush();
    expect(segFiles(dir, 'hostPolicy', p).length).toBeGreaterThan(1);
    // A crawl.urls table of the same bytes stays in one segment (64 MiB).
    for (let round = 0; round < 30; round++) log.append(Array.from({ length: 100 }, (_, i) => ({ topic: 'urls' as const, key: `http://${host}/${i}`, host, value: urlRow(`http://${host}/${i}`, 'QUEUED') })));
    log.flush();
    expect(segFiles(dir, 'urls', p)).toHaveLength(1);
    await log.compact();
    const files = readdirSync(join(dir, 'topics', topics.hostPolicy.name, String(p))).map((f) => join(dir, 'topics', topics.hostPolicy.name, String(p), f));
    const bytes = files.reduce((n, f) => n + statSync(f).size, 0);
    // The cleaned rows plus the open segment: well under the 2.5 MiB written.
    expect(bytes).toBeLessThan(1.2 * 1024 * 1024);
    const table = log.table('hostPolicy', p);
    expect(table).toHaveLength(100);
    expect(table.every((r) => (r.value as { updated_at: number }).updated_at === 99)).toBe(true);
    log.close();
  });
});

describe('EmbeddedRunner', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads each table once at a start for every stage that restores from it or follows it', async () => {
    const host = 'a.test';
    const seed = new FileLog({ dir, partitions: P });
    seed.append([{ topic: 'hostPolicy', key: `${host}|block`, host, value: { host, field: 'block', updated_at: 1, blocked_until: 9, reason: null, min_delay_ms: null } }]);
    seed.close();
    const log = new FileLog({ dir, partitions: P });
    const reads = jest.spyOn(log, 'table');
    const seen: string[] = [];
    const follower = (id: string, how: 'restoreFrom' | 'globalTables'): Stage => ({
      id, inputs: ['links'], outputs: [], [how]: ['hostPolicy'],
      restore: (row) => void seen.push(`${id} restore ${row.key}`),
      onGlobal: (row) => void seen.push(`${id} global ${row.key}`),
      handle: async () => [],
    });
    const runner = new EmbeddedRunner(log, [follower('one', 'globalTables'), follower('two', 'restoreFrom'), follower('three', 'globalTables')], silent);
    await runner.start();
    expect(seen).toEqual(['one global a.test|block', 'two restore a.test|block', 'three global a.test|block']);
    expect(reads.mock.calls.filter(([topic]) => topic === 'hostPolicy')).toHaveLength(P);
    await runner.stop();
    log.close();
  });

  /** links -> frontier (one candidate per link) and a sink reading frontier. */
  function pipeline(opts: { failOnce?: string; seen: string[]; linksSeen: string[] }): Stage[] {
    const failed = new Set<string>();
    const toFrontier: Stage = {
      id: 'to-frontier',
      inputs: ['links'],
      outputs: ['frontier'],
      async handle(rec: InRecord) {
        const l = rec.value as LinkMsg;
        opts.linksSeen.push(l.url);
        if (opts.failOnce && l.url === opts.failOnce && !failed.has(l.url)) {
          failed.add(l.url);
          throw new Error('transient');
        }
        const host = new URL(l.url).hostname;
        const c: CandidateMsg = { url: l.url, host, depth: l.depth, discovered_at: l.discovered_at, source_url: null };
        return [{ topic: 'frontier', key: host, host, value: c }];
      },
    };
    const sink: Stage = {
      id: 'sink',
      inputs: ['frontier'],
      outputs: [],
      handle(rec: InRecord) {
        opts.seen.push((rec.value as CandidateMsg).url);
        return [];
      },
    };
    return [toFrontier, sink];
  }

  it('retries a failing record without committing past it, then resumes without reprocessing', async () => {
    const host = 'a.test';
    const p = partitionForHost(host, P);
    const log = new FileLog({ dir, partitions: P });
    const seen: string[] = [];
    const linksSeen: string[] = [];
    const runner = new EmbeddedRunner(log, pipeline({ failOnce: `http://${host}/2`, seen, linksSeen }), silent, {
      retryDelayMs: 150, checkpointMs: 20,
    });
    await runner.start();
    log.append([linkRec(host, '/1'), linkRec(host, '/2'), linkRec(host, '/3')]);
    // /1 and /3 are done, /2 failed and waits for its retry: the offset stays at 1.
    await until(() => linksSeen.length >= 3 && seen.length >= 2);
    expect(log.committed('crawl.to-frontier').links![p]).toBe(1);
    await until(() => seen.length === 3);
    await until(() => log.committed('crawl.to-frontier').links![p] === 3);
    expect(linksSeen.filter((u) => u.endsWith('/2'))).toHaveLength(2);
    expect([...seen].sort()).toEqual([`http://${host}/1`, `http://${host}/2`, `http://${host}/3`]);
    await until(() => runner.idle());
    await runner.stop();
    log.close();

    // A new runner over the same dir: committed records are not handled again; new ones are.
    const log2 = new FileLog({ dir, partitions: P });
    const seen2: string[] = [];
    const linksSeen2: string[] = [];
    const runner2 = new EmbeddedRunner(log2, pipeline({ seen: seen2, linksSeen: linksSeen2 }), silent, { checkpointMs: 20 });
    await runner2.start();
    log2.append([linkRec(host, '/4')]);
    await until(() => seen2.length >= 1);
    await until(() => runner2.idle());
    await runner2.stop();
    log2.close();
    expect(linksSeen2).toEqual([`http://${host}/4`]);
    expect(seen2).toEqual([`http://${host}/4`]);
  });

  it('holds a stage while its holdWhile says so, and goes on when it stops saying so; lag() counts what is not committed', async () => {
    const log = new FileLog({ dir, partitions: P });
    const handled: string[] = [];
    const reader: Stage = {
      id: 'reader',
      inputs: ['links'],
      outputs: [],
      handle: (rec: InRecord) => {
        handled.push((rec.value as LinkMsg).url);
        return [];
      },
    };
    let hold = true;
    const runner = new EmbeddedRunner(log, [reader], silent, { checkpointMs: 20, holdWhile: { reader: () => hold } });
    await runner.start();
    log.append([linkRec('h1.test', '/1'), linkRec('h2.test', '/2'), linkRec('h3.test', '/3')]);
    await new Promise((r) => setTimeout(r, 100));
    expect(handled).toEqual([]);
    expect(log.lag('crawl.reader', 'links')).toBe(3);
    hold = false;
    await until(() => handled.length === 3);
    await until(() => log.lag('crawl.reader', 'links') === 0);
    await runner.stop();
    log.close();
  });

  it('shares its read-ahead among partitions in turn: a partition with a long backlog does not starve the others', async () => {
    const log = new FileLog({ dir, partitions: P });
    // One host per partition; partition 0's host has 60 records waiting, every other one 3.
    const hostOf = new Map<number, string>();
    for (let i = 0; hostOf.size < P; i++) {
      const h = `h${i}.test`;
      if (!hostOf.has(partitionForHost(h, P))) hostOf.set(partitionForHost(h, P), h);
    }
    const recs: OutRecord[] = [];
    for (let p = 0; p < P; p++) for (let j = 0; j < (p === 0 ? 60 : 3); j++) recs.push(linkRec(hostOf.get(p)!, `/${j}`));
    log.append(recs);
    const order: number[] = [];
    const reader: Stage = {
      id: 'reader',
      inputs: ['links'],
      outputs: [],
      // Each record takes a turn of the event loop, so slots free up one by one.
      handle: (rec: InRecord) => new Promise<OutRecord[]>((r) => setImmediate(() => (order.push(rec.partition), r([])))),
    };
    const runner = new EmbeddedRunner(log, [reader], silent, { checkpointMs: 20, readAhead: 4 });
    await runner.start();
    await until(() => order.length === recs.length);
    await runner.stop();
    log.close();
    // Every partition is served within the first two rounds, not after partition 0's backlog.
    const firstRounds = order.slice(0, 2 * 4 * P);
    for (let p = 0; p < P; p++) expect(firstRounds).toContain(p);
    const lastOther = Math.max(...order.map((p, i) => (p === 0 ? -1 : i)));
    expect(lastOther).toBeLessThan(order.length - 30);
  });
});
