/**
 * `crawl run`'s progress: exactly one line per interval (1 s), driven by its own timer, with
 * the fetch rate over a sliding window, the pages fetched, stored, parsed and handed off, the
 * frontier's queue, and an ETA when --max-pages or --max-secs gives one. On a terminal the line
 * is redrawn in place (Node's readline cursor functions); piped, each interval is a line of its
 * own (`npm run bench` reads `, parsed N,` from them).
 *
 * The count and the rate are of responses as they arrive, not of pages stored: a page is stored
 * only when its WARC file is (every 2 s in `crawl run`), so a line a second counting stored
 * pages showed the same number twice with two different rates.
 */
import { clearLine, cursorTo } from 'node:readline';

export interface ProgressCounts {
  /** Responses received (the page is in hand; its WARC file may still be open). */
  fetched: number;
  /** Pages in stored WARC files: what --max-pages counts. */
  stored: number;
  parsed: number;
  handedOff: number;
  queued: number;
  inFlight: number;
  hosts: number;
}

/** Events per second over the last `windowMs`, from samples of a growing count. */
export class SlidingRate {
  private readonly samples: Array<{ t: number; n: number }> = [];

  constructor(readonly windowMs: number) {}

  add(t: number, n: number): void {
    this.samples.push({ t, n });
    // Keep the newest sample at or before the window's start, so the window is full once it can be.
    while (this.samples.length > 2 && t - this.samples[1].t >= this.windowMs) this.samples.shift();
  }

  perSecond(): number {
    if (this.samples.length < 2) return 0;
    const first = this.samples[0];
    const last = this.samples[this.samples.length - 1];
    return last.t > first.t ? ((last.n - first.n) * 1000) / (last.t - first.t) : 0;
  }
}

/** 42 s, 3m07s, 2h05m. */
export function formatDuration(secs: number): string {
  const s = Math.max(0, Math.ceil(secs));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

export interface ProgressLimits {
  maxPages?: number;
  /** Seconds since the start, and the --max-secs limit. */
  elapsedSecs?: number;
  maxSecs?: number;
}

/** Seconds until the first limit is reached, or null when no limit gives one yet. */
export function etaSecs(c: ProgressCounts, pagesPerSec: number, l: ProgressLimits): number | null {
  const etas: number[] = [];
  if (l.maxPages !== undefined && pagesPerSec > 0) etas.push(Math.max(0, l.maxPages - c.stored) / pagesPerSec);
  if (l.maxSecs !== undefined && l.elapsedSecs !== undefined) etas.push(Math.max(0, l.maxSecs - l.elapsedSecs));
  return etas.length ? Math.min(...etas) : null;
}

export function progressLine(c: ProgressCounts, pagesPerSec: number, windowSecs: number, eta: number | null): string {
  return (
    `${pagesPerSec.toFixed(1)} pages/s (last ${windowSecs} s), fetched ${c.fetched}, stored ${c.stored}, parsed ${c.parsed}, handed off ${c.handedOff}, ` +
    `queued ${c.queued}, in flight ${c.inFlight}, hosts ${c.hosts}` +
    (eta === null ? '' : `, ETA ${formatDuration(eta)}`)
  );
}

export interface ReporterOptions {
  intervalMs?: number;
  windowMs?: number;
  now?: () => number;
}

type Out = Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean; columns?: number };

/** What a reporter shows: the growing count its rate is taken from, and the line itself. */
export interface ProgressView {
  count: number;
  line(perSec: number, windowSecs: number, elapsedSecs: number): string;
}

/** One line per interval from `read()`, on its own timer: a line a tick, whatever the caller does meanwhile. */
export class ProgressReporter {
  private readonly rate: SlidingRate;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly started: number;
  private timer: NodeJS.Timeout | null = null;
  private drawn = false;

  constructor(private readonly out: Out, private readonly read: () => ProgressView, opts: ReporterOptions = {}) {
    this.intervalMs = opts.intervalMs ?? 1000;
    this.rate = new SlidingRate(opts.windowMs ?? 10_000);
    this.now = opts.now ?? Date.now;
    this.started = this.now();
    this.rate.add(this.started, read().count);
  }

  /** Prints one line a tick from now on. */
  start(): void {
    this.timer ??= setInterval(() => this.tick(), this.intervalMs);
    this.timer.unref();
  }

  /** Samples the counts and prints exactly one line. */
  tick(): void {
    const t = this.now();
    const view = this.read();
    this.rate.add(t, view.count);
    const line = view.line(this.rate.perSecond(), Math.round(this.rate.windowMs / 1000), (t - this.started) / 1000);
    if (this.out.isTTY) {
      cursorTo(this.out as NodeJS.WritableStream, 0);
      clearLine(this.out as NodeJS.WritableStream, 0);
      // Cut to the terminal's width: a wrapped line could not be redrawn in place.
      this.out.write(this.out.columns ? line.slice(0, this.out.columns - 1) : line);
      this.drawn = true;
    } else this.out.write(`${line}\n`);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.drawn) this.out.write('\n');
    this.drawn = false;
  }
}

/** `crawl run`'s view: rate of responses, ETA from --max-pages (stored pages) or --max-secs. */
export function crawlView(read: () => ProgressCounts, limits: Omit<ProgressLimits, 'elapsedSecs'>): () => ProgressView {
  return () => {
    const c = read();
    return {
      count: c.fetched,
      line: (perSec, windowSecs, elapsedSecs) => progressLine(c, perSec, windowSecs, etaSecs(c, perSec, { ...limits, elapsedSecs })),
    };
  };
}
