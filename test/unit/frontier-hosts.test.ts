/**
 * HostState (processors/frontier-hosts.ts): a host that waits with work and was never asked
 * keeps only its host, queue length, next allowed time and flags; its pace is made the first
 * time a field of it leaves its default, and every field reads back what was written.
 */
import type { FetchStatusMsg } from '../../lib/messages';
import { AIMD_DEFAULTS, NO_BACKOFF } from '../../processors/frontier-aimd';
import { applyAnswer, HostState } from '../../processors/frontier-hosts';
import * as ownStrings from '../../lib/own-string';

const PACE = { ...AIMD_DEFAULTS, minHostDelayMs: 1000, maxCrawlDelayMs: 10_000, responseTimeFactor: 10 };

function answer(fields: Partial<FetchStatusMsg> & { finished_at: number }): FetchStatusMsg {
  return {
    url: 'https://www.example.co.uk/a', host: 'www.example.co.uk', lease_id: 'L1', stored: true, outcome: 'FETCHED', http_status: 200, reason: null,
    started_at: fields.finished_at, response_ms: 0, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null,
    last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, ...fields,
  };
}

describe('HostState', () => {
  afterEach(() => jest.restoreAllMocks());

  it('keeps its own copy of the host name (lib/own-string.ts): a name cut from a URL would keep the URL', () => {
    // The copy's text is the same, so the stand-in marks it to show which string was kept.
    const own = jest.spyOn(ownStrings, 'ownString').mockImplementation((s) => `own:${s}`);
    const h = new HostState('www.example-thirteen.com', 0);
    expect(own).toHaveBeenCalledWith('www.example-thirteen.com');
    expect(h.host).toBe('own:www.example-thirteen.com');
  });

  it('a new host reads its defaults and carries no pace', () => {
    const h = new HostState('www.example.co.uk', 5000);
    expect(h).toMatchObject({
      host: 'www.example.co.uk', domain: 'example.co.uk', size: 0, nextAt: 5000, scheduled: false, dirty: false, ip: null, head: null,
      inflight: null, lastContactAt: null, crawlDelayMs: 0, backoff: NO_BACKOFF, persistedGap: null, fetches: 0,
    });
    expect(h.paced).toBe(false);
  });

  it('the queue length, time and flags change without making the pace; writing a default makes none either', () => {
    const h = new HostState('a.test', 0);
    h.size += 3;
    h.nextAt = 1234.5;
    h.scheduled = true;
    h.dirty = true;
    expect([h.scheduled, h.dirty]).toEqual([true, true]);
    h.scheduled = false;
    expect([h.scheduled, h.dirty]).toEqual([false, true]);
    h.dirty = false;
    h.scheduled = true;
    expect([h.scheduled, h.dirty]).toEqual([true, false]);
    h.head = null;
    h.inflight = null;
    h.ip = null;
    h.fetches = 0;
    h.crawlDelayMs = 0;
    h.backoff = NO_BACKOFF;
    h.persistedGap = null;
    h.lastContactAt = null;
    expect(h.paced).toBe(false);
    expect([h.size, h.nextAt]).toEqual([3, 1234.5]);
  });

  it('each pace field reads back what was written, and back to its default', () => {
    const h = new HostState('a.test', 0);
    h.fetches++;
    expect(h.paced).toBe(true);
    const b = { ...NO_BACKOFF, delayMs: 4000, failures: 1, cause: '503' };
    const inflight = { id: 'L1', url: 'https://a.test/', domain: 'a.test', ip: '127.0.0.1' };
    const head = [{ url: 'https://a.test/x', key: Buffer.from('q') }];
    Object.assign(h, { ip: '127.0.0.2', head, inflight, lastContactAt: 99, crawlDelayMs: 2000, backoff: b, persistedGap: 0 });
    expect(h).toMatchObject({ fetches: 1, ip: '127.0.0.2', head, inflight, lastContactAt: 99, crawlDelayMs: 2000, backoff: b, persistedGap: 0 });
    Object.assign(h, { ip: null, head: null, inflight: null, lastContactAt: null, crawlDelayMs: 0, backoff: NO_BACKOFF, persistedGap: null, fetches: 0 });
    expect(h).toMatchObject({ fetches: 0, ip: null, head: null, inflight: null, lastContactAt: null, crawlDelayMs: 0, backoff: NO_BACKOFF, persistedGap: null });
  });

  it('the first answer paces a new host as before: its gap from minHostDelayMs, no host-policy row for an ordinary answer', () => {
    const h = new HostState('www.example.co.uk', 0);
    expect(applyAnswer(h, answer({ finished_at: 10_000, response_ms: 50, ip: '127.0.0.9' }), 10_000, PACE, 1000, null)).toBeNull();
    expect(h).toMatchObject({ nextAt: 11_000, lastContactAt: 10_000, ip: '127.0.0.9', persistedGap: null });
    // A 503 grows the gap past what was last written (minHostDelayMs): a row is written and the gap kept.
    const row = applyAnswer(h, answer({ finished_at: 12_000, http_status: 503 }), 12_000, PACE, 1000, null);
    expect(row).not.toBeNull();
    expect(h.persistedGap).toBeGreaterThan(1000);
    expect(h.backoff.failures).toBe(1);
    expect(h.nextAt).toBeGreaterThanOrEqual(12_000 + h.persistedGap!);
  });
});
