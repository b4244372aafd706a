import { failureReason, RunTally, summaryText } from '../../cli/run-summary';
import type { RunSummary } from '../../cli/embedded';
import type { FetchStatusMsg, ParsedPageMsg } from '../../lib/messages';
import type { InRecord } from '../../runtime/stage';

function rec(topic: InRecord['topic'], value: unknown): InRecord {
  return { topic, partition: 0, offset: 0, key: 'a.test', value, timestamp: 0 };
}

function status(fields: Partial<FetchStatusMsg>): InRecord {
  return rec('fetchStatus', { outcome: 'FETCHED', stored: true, http_status: 200, ...fields });
}

function parsed(fields: Partial<ParsedPageMsg>): InRecord {
  return rec('parsed', { change: 'NEW', noindex: false, near_duplicate_of: null, ...fields });
}

const SUMMARY: RunSummary = {
  pagesStored: 150, otherResponsesStored: 0, failures: 0, failuresByReason: {}, truncated: 0, handoffEvents: 50, notHandedOff: { unchanged: 0, noindex: 0, duplicates: 0 },
  pagesParsed: 150, pagesParsedBeforeStop: 0, leftForNextRun: { unparsed: 0, notHandedOff: 0 }, warcFiles: 2, seconds: 5.5, pagesPerSecond: 27.3,
  stoppedBy: 'max-secs', handoffFile: 'out/handoff/crawl.handoff.v3.avro', waitingRetry: 0, seeds: '50 accepted, 0 refused',
};

describe('RunTally', () => {
  test('counts responses stored once announced (pages or not), never the early status or a failure', () => {
    const t = new RunTally();
    t.add([
      status({ stored: false }), // the response is in; its WARC file is not stored yet
      status({}), // a page
      status({ http_status: 301 }), // a redirect
      status({ outcome: 'NOT_HTML' }), // stored as a metadata record
      status({ outcome: 'FAILED', reason: 'store-failed' }),
      status({ outcome: 'FAILED', http_status: null, reason: 'ECONNREFUSED' }),
      status({ outcome: 'ROBOTS_DISALLOWED', http_status: null }),
    ]);
    expect(t.storedResponses).toBe(3);
  });

  test('says why parsed pages were not handed off, in the order handoff tests it', () => {
    const t = new RunTally();
    t.add([parsed({}), parsed({ near_duplicate_of: 'http://a.test/' }), parsed({ change: 'UNCHANGED', noindex: true }), parsed({ noindex: true, near_duplicate_of: 'http://a.test/' })]);
    expect(t.notHandedOff).toEqual({ unchanged: 1, noindex: 1, duplicates: 1 });
  });
});

describe('failures by reason', () => {
  test('each outcome and error code in words, counted; successes are not failures', () => {
    const t = new RunTally();
    const outcomes: Array<[Parameters<RunTally['outcome']>, string | null]> = [
      [['FETCHED', 200, null], null],
      [['NOT_HTML', 200, 'not-html'], null],
      [['ROBOTS_DISALLOWED', null, 'full'], null],
      [['FAILED', null, 'DEADLINE_EXCEEDED'], 'timeout (30 s deadline)'],
      [['FAILED', null, 'CONNECT_TIMEOUT'], 'connect timeout'],
      [['FAILED', null, 'DNS_FAILED'], 'DNS'],
      [['FAILED', null, 'CONNECT_FAILED'], 'connection refused'],
      [['REFUSED', null, 'SSRF_BLOCKED'], 'private address refused'],
      [['REFUSED', null, 'HEADERS_TOO_LARGE'], 'headers too large'],
      [['FAILED', 503, 'http-503'], 'HTTP 5xx'],
      [['FAILED', 500, 'http-500'], 'HTTP 5xx'],
      [['FAILED', 429, 'http-429'], 'HTTP 429'],
      [['ROBOTS_UNAVAILABLE', null, 'unreachable'], 'robots.txt unavailable'],
      [['REFUSED', null, 'blocked'], 'operator block'],
      [['FAILED', null, 'something-new'], 'something-new'],
    ];
    for (const [args, why] of outcomes) {
      expect(t.outcome(...args)).toBe(why !== null);
      if (why !== null) expect(failureReason(...args)).toBe(why);
    }
    expect(t.failures.get('HTTP 5xx')).toBe(2);
    expect([...t.failures.values()].reduce((a, b) => a + b, 0)).toBe(12);
  });

  test('truncated pages are counted from the fetched records', () => {
    const t = new RunTally();
    t.add([rec('fetched', { truncated: true }), rec('fetched', { truncated: false })]);
    expect(t.truncated).toBe(1);
  });

  test('the summary lists them, most first', () => {
    const text = summaryText({ ...SUMMARY, failures: 6, failuresByReason: { DNS: 1, 'HTTP 5xx': 3, 'connection refused': 2 }, truncated: 2 }, 'out');
    expect(text).toContain('\n  failures by reason: HTTP 5xx 3, connection refused 2, DNS 1 (each URL\'s reason: out/crawl.log, or crawl explain URL --out out)\n');
    expect(text).toContain('\n  2 page(s) cut at the body cap (CRAWL_MAX_BODY_BYTES), stored marked WARC-Truncated\n');
  });
});

describe('summaryText', () => {
  test('the first line keeps its shape; lines with nothing to say are left out', () => {
    expect(summaryText(SUMMARY, 'out')).toBe(
      'crawl max-secs: 150 pages stored, 150 parsed (0 before stopping), 0 failures, 50 handoff events, 2 WARC files, 5.5 s (27.30 pages/s)\n' +
        '  seeds: 50 accepted, 0 refused\n  WARC: out/warc\n  handoff: out/handoff/crawl.handoff.v3.avro\n  log: out/crawl.log\n',
    );
  });

  test('says what else was stored, why pages were not handed off, and what is left for the next run', () => {
    const text = summaryText({
      ...SUMMARY, otherResponsesStored: 7, notHandedOff: { unchanged: 0, noindex: 2, duplicates: 98 }, leftForNextRun: { unparsed: 3, notHandedOff: 1 },
    }, 'out');
    expect(text).toContain('\n  also stored: 7 other responses (redirects, 4xx pages, not modified, non-HTML as metadata)\n');
    expect(text).toContain('\n  not handed off: duplicate 98, noindex 2\n');
    expect(text).toContain('\n  left for the next run with the same --out: 3 stored pages not parsed, 1 parsed pages not through handoff yet\n');
  });
});
