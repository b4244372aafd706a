/**
 * The parser's floor: a bare parse5-sax-parser pass over a page, token objects built and emitted
 * (as extract() needs them) and nothing done with them. #8 sets its targets against this floor
 * ("about 1.1 ms" for a 50 KiB page on this machine), but the same pass has measured from 1.4 to
 * 2.8 ms on different days of this machine. So `npm run bench` measures the floor in the same
 * invocation, right before and after each contender, and states each contender's CPU per page
 * also as a multiple of it.
 *
 * The floor is CPU time (user + sys of this process), like the CPU per page it divides: wall time
 * also counts what else the cores are doing. With three busy loops on the two cores, the wall
 * time of a pass went from 1.5-1.7 ms to 3.4-4.3 ms and its CPU time from 1.6-1.8 to 1.8-2.3.
 */
import { Parser } from 'htmlparser2';
import { SAXParser } from 'parse5-sax-parser';

class BareParser extends SAXParser {
  run(html: string): void {
    this.tokenizer.write(html, true);
  }
}

/** One bare SAX pass over `html`; returns the start and end tags it saw. */
export function barePass(html: string): number {
  const p = new BareParser();
  let tags = 0;
  p.on('startTag', () => void tags++);
  p.on('endTag', () => void tags++);
  p.on('text', () => undefined);
  p.run(html);
  return tags;
}

/**
 * The second floor, since extract() runs on htmlparser2's tokenizer (#35): a bare htmlparser2
 * Parser pass (tag names, attributes as objects, decoded text), nothing done with its events.
 * The parse5 pass above stays the floor #35's targets are set against.
 */
export function bareHtmlparser2Pass(html: string): number {
  let tags = 0;
  const p = new Parser({ onopentag: () => void tags++, onclosetag: () => void tags++, ontext: () => undefined }, { decodeEntities: true });
  p.end(html);
  return tags;
}

/** Wall-clock milliseconds. */
export const wallMs = (): number => performance.now();

/** Mean milliseconds of one call of fn over n calls, by `clock` (the wall clock unless given). */
export function timeRound(fn: () => void, n: number, clock: () => number = wallMs): number {
  const t0 = clock();
  for (let i = 0; i < n; i++) fn();
  return (clock() - t0) / n;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) throw new Error('median of nothing');
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

/** CPU milliseconds (user + sys) this process has used so far. */
export function processCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

export interface FloorOptions {
  /** Passes before timing (JIT warm-up). */
  warmup?: number;
  rounds?: number;
  perRound?: number;
  /** The clock read around each round, in ms; processCpuMs unless a test gives another. */
  clock?: () => number;
}

/**
 * Mean CPU milliseconds of a bare pass over each of `pages` (the real-page web: one page a
 * template), the median of `rounds` rounds, each one pass over all of them after one untimed.
 */
export function parserFloorMsOver(pages: readonly string[], rounds = 3, clock: () => number = processCpuMs): number {
  for (const p of pages) barePass(p);
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) times.push(timeRound(() => pages.forEach((p) => void barePass(p)), 1, clock) / pages.length);
  return median(times);
}

/** CPU milliseconds per bare parse5 SAX pass over `html`: the median of `rounds` timed rounds. */
export function parserFloorMs(html: string, o: FloorOptions = {}): number {
  const { warmup = 100, rounds = 9, perRound = 40, clock = processCpuMs } = o;
  for (let i = 0; i < warmup; i++) barePass(html);
  const times: number[] = [];
  for (let r = 0; r < rounds; r++) times.push(timeRound(() => barePass(html), perRound, clock));
  return median(times);
}
