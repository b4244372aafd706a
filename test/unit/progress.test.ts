/**
 * `crawl run`'s progress line (cli/progress.ts): exactly one line per interval on its own
 * timer, the rate over a sliding window, counts of responses as they arrive (not of pages
 * stored, which move only when a WARC file is stored), and an ETA from the limits.
 */
import { crawlView, etaSecs, formatDuration, progressLine, ProgressReporter, SlidingRate, type ProgressCounts } from '../../cli/progress';

class Capture {
  text = '';
  constructor(readonly isTTY = false) {}
  write(s: string): boolean {
    this.text += s;
    return true;
  }
  lines(): string[] {
    return this.text.split('\n').filter(Boolean);
  }
}

const counts = (over: Partial<ProgressCounts> = {}): ProgressCounts => ({ fetched: 0, stored: 0, parsed: 0, handedOff: 0, queued: 0, inFlight: 0, hosts: 0, ...over });

describe('SlidingRate', () => {
  test('is the rate of the last window, not of the whole run', () => {
    const r = new SlidingRate(10_000);
    let n = 0;
    // 20 s at 10/s, then 10 s at 100/s, sampled once a second.
    for (let t = 0; t <= 30_000; t += 1000) {
      r.add(t, n);
      n += t < 20_000 ? 10 : 100;
    }
    // Cumulative: 1,200 in 30 s = 40/s. The last 10 s: 100/s.
    expect(r.perSecond()).toBeCloseTo(100, 6);
  });

  test('uses what it has before a window is full, and 0 with a single sample', () => {
    const r = new SlidingRate(10_000);
    r.add(0, 0);
    expect(r.perSecond()).toBe(0);
    r.add(2000, 30);
    expect(r.perSecond()).toBe(15);
  });
});

describe('ProgressReporter', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('prints exactly one line per interval, each with its own count, while pages are stored only every 2 s', () => {
    const out = new Capture();
    // Responses arrive steadily (50 a second); pages count as stored only when a WARC file is, every 2 s.
    const c = counts();
    const t0 = Date.now();
    const read = (): ProgressCounts => {
      const secs = (Date.now() - t0) / 1000;
      c.fetched = Math.floor(secs * 50);
      c.stored = Math.floor(secs / 2) * 100;
      return { ...c };
    };
    const p = new ProgressReporter(out, crawlView(read, {}));
    p.start();
    jest.advanceTimersByTime(10_000);
    p.stop();
    const lines = out.lines();
    expect(lines).toHaveLength(10);
    const fetched = lines.map((l) => Number(/fetched (\d+)/.exec(l)![1]));
    // Never the same count twice in a row (counting stored pages showed each twice).
    for (let i = 1; i < fetched.length; i++) expect(fetched[i]).toBeGreaterThan(fetched[i - 1]);
    // And a steady rate, not one that swings with each stored file.
    for (const l of lines) expect(l).toMatch(/^50\.0 pages\/s \(last 10 s\), /);
  });

  test('the rate follows a change of speed within the window', () => {
    const out = new Capture();
    let n = 0;
    const p = new ProgressReporter(out, () => ({ count: n, line: (perSec) => perSec.toFixed(1) }), { windowMs: 5000 });
    p.start();
    for (let s = 0; s < 20; s++) {
      n += s < 10 ? 10 : 200;
      jest.advanceTimersByTime(1000);
    }
    p.stop();
    const lines = out.lines();
    expect(lines).toHaveLength(20);
    expect(Number(lines[9])).toBe(10);
    expect(Number(lines[19])).toBe(200); // cumulative would read 105
  });

  test('redraws one line in place on a terminal, and ends it on stop', () => {
    const out = new Capture(true);
    const p = new ProgressReporter(out, () => ({ count: 0, line: () => 'status' }));
    p.start();
    jest.advanceTimersByTime(3000);
    expect(out.text).not.toContain('\n');
    expect(out.text.match(/status/g)).toHaveLength(3);
    expect(out.text).toContain('\x1b[2K'); // the line is cleared before each redraw
    p.stop();
    expect(out.text.endsWith('\n')).toBe(true);
  });

  test('cuts the line to the terminal width, so that it can be redrawn', () => {
    const out = Object.assign(new Capture(true), { columns: 20 });
    const p = new ProgressReporter(out, () => ({ count: 0, line: () => 'x'.repeat(50) }));
    p.tick();
    expect(out.text.replace(/\x1b\[\d*[GK]/g, '')).toBe('x'.repeat(19));
  });

  test('prints nothing after stop', () => {
    const out = new Capture();
    const p = new ProgressReporter(out, () => ({ count: 0, line: () => 'x' }));
    p.start();
    jest.advanceTimersByTime(2000);
    p.stop();
    jest.advanceTimersByTime(5000);
    expect(out.lines()).toHaveLength(2);
  });
});

describe('the line', () => {
  test('names every count; `, parsed N,` is what npm run bench reads', () => {
    const line = progressLine(counts({ fetched: 390, stored: 300, parsed: 280, handedOff: 100, queued: 5249, inFlight: 100, hosts: 100 }), 53, 10, 12);
    expect(line).toBe('53.0 pages/s (last 10 s), fetched 390, stored 300, parsed 280, handed off 100, queued 5249, in flight 100, hosts 100, ETA 12 s');
    expect(/, parsed (\d+),/.exec(line)?.[1]).toBe('280');
  });

  test('ETA: from --max-pages (pages still to store at the current rate) or --max-secs, whichever comes first', () => {
    expect(etaSecs(counts({ stored: 400 }), 50, { maxPages: 1000 })).toBe(12);
    expect(etaSecs(counts({ stored: 400 }), 50, { maxPages: 1000, maxSecs: 60, elapsedSecs: 55 })).toBe(5);
    expect(etaSecs(counts({ stored: 400 }), 0, { maxPages: 1000 })).toBeNull();
    expect(etaSecs(counts(), 50, {})).toBeNull();
    expect(etaSecs(counts({ stored: 1200 }), 50, { maxPages: 1000 })).toBe(0);
  });

  test('durations', () => {
    expect(formatDuration(0)).toBe('0 s');
    expect(formatDuration(41.2)).toBe('42 s');
    expect(formatDuration(187)).toBe('3m07s');
    expect(formatDuration(7500)).toBe('2h05m');
  });
});
