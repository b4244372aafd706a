/**
 * Seed lists, streamed: one URL per line from a file, standard input (`-`) or any readable
 * stream; blank lines and `#` comments skipped. A list of millions of lines is never read into
 * memory at once: lines come through an async iterator (node:readline, which pauses its input
 * while the consumer is busy), and `seedBatches` hands them on in batches, the next read only
 * once the caller has dealt with the last (sent it to Kafka, appended it to the log).
 *
 * A seed is normalised as every URL is (lib/url-normalize.ts). One typed without a scheme
 * (`example.org`, `example.org/a`, `//example.org/`) is taken as https://, and `schemeAdded`
 * says so, for the caller to tell the user. Links found on pages get no such help.
 *
 *   for await (const batch of seedBatches(seedLines('seeds.txt'))) {
 *     for (const s of batch) if (s.ok) send(s.url); else tally(s.reason);
 *   }
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { LinkMsg } from './messages';
import { normalizeUrl } from './url-normalize';

export interface SeedLine {
  /** 1-based line number in the list. */
  line: number;
  text: string;
}

/**
 * The seed lines of `from`: a path, `-` for standard input, or a readable stream. `signal` ends
 * the lines early, even while a read waits (a quiet standard input).
 */
export async function* seedLines(from: string | Readable, signal?: AbortSignal): AsyncGenerator<SeedLine> {
  const input = typeof from !== 'string' ? from : from === '-' ? process.stdin : createReadStream(from);
  const lines = createInterface({ input, crlfDelay: Infinity, signal });
  let line = 0;
  try {
    for await (const raw of lines) {
      line++;
      const text = raw.trim();
      if (text && !text.startsWith('#')) yield { line, text };
    }
  } finally {
    lines.close();
    // Standard input is left open unless the reading was cut short (it would hold the process).
    if (input !== process.stdin || signal?.aborted) input.destroy();
  }
}

export type Seed =
  | { ok: true; line: number; input: string; url: string; host: string; schemeAdded: boolean }
  | { ok: false; line: number; input: string; reason: string; detail: string };

// A scheme followed by "//", or one with no "//" whose part after the colon is not a port
// (mailto:x, javascript:…): kept as typed, to be refused as an unsupported scheme.
const HAS_SCHEME = /^[a-z][a-z0-9+.-]*:(\/\/|(?!\d))/i;

/** One seed, normalised; `https://` is put before a URL typed without a scheme. */
export function parseSeed(text: string, line = 0): Seed {
  const input = text.trim();
  // "ht!tp://x" has a scheme, if a broken one: refused as typed, not read as a host.
  const schemeAdded = !HAS_SCHEME.test(input) && !input.includes('://');
  const n = normalizeUrl(schemeAdded ? `https:${input.startsWith('//') ? '' : '//'}${input}` : input);
  if (!n.ok) return { ok: false, line, input, reason: n.reason, detail: n.detail };
  return { ok: true, line, input, url: n.url, host: n.host, schemeAdded };
}

/**
 * Parsed seeds in batches of at most `size`; the next lines are read only when the caller asks
 * for the next batch. A batch also ends when the next line is `maxWaitMs` in coming (a slow
 * pipe, a quiet terminal), so seeds that have arrived are not held back waiting for a full one.
 */
export async function* seedBatches(lines: AsyncIterable<SeedLine> | Iterable<SeedLine>, size = 1000, maxWaitMs = 200): AsyncGenerator<Seed[]> {
  const it: AsyncIterator<SeedLine> | Iterator<SeedLine> = Symbol.asyncIterator in lines ? lines[Symbol.asyncIterator]() : lines[Symbol.iterator]();
  let batch: Seed[] = [];
  let pending: Promise<IteratorResult<SeedLine>> | null = null;
  // One timer a batch, from its first seed on: not one a line.
  let deadline: Promise<null> | null = null;
  let timer: NodeJS.Timeout | undefined;
  const endBatch = (): Seed[] => {
    const b = batch;
    batch = [];
    deadline = null;
    clearTimeout(timer);
    return b;
  };
  try {
    for (;;) {
      pending ??= Promise.resolve(it.next());
      const r = deadline ? await Promise.race([pending, deadline]) : await pending;
      if (r === null) {
        yield endBatch(); // the next line is late: hand over what there is; `pending` stays
        continue;
      }
      pending = null;
      if (r.done) break;
      batch.push(parseSeed(r.value.text, r.value.line));
      if (batch.length >= size) yield endBatch();
      else if (batch.length === 1) deadline = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), maxWaitMs)));
    }
    if (batch.length) yield endBatch();
  } finally {
    clearTimeout(timer);
    await it.return?.();
  }
}

/** Seed strings given as command-line arguments: line 0, they have no line in a list. */
export function argLines(urls: readonly string[]): SeedLine[] {
  return urls.map((text) => ({ line: 0, text }));
}

/** A seed's crawl.links record value (a normalised URL); `priorityClass` 1 for feeds. */
export function seedLink(s: { url: string }, now: number, priorityClass?: 1): LinkMsg {
  return { url: s.url, source_url: null, depth: 0, discovered_at: now, is_seed: true, ...(priorityClass ? { priority_class: priorityClass } : {}) };
}

/**
 * Feed URLs (`--feed`) as seed links of priority class 1, each counted in `tally`: the frontier
 * polls a URL that answers as a feed (processors/frontier-feeds.ts).
 */
export function feedSeeds(urls: readonly string[], tally: SeedTally, now: number): Array<{ host: string; link: LinkMsg }> {
  const out: Array<{ host: string; link: LinkMsg }> = [];
  for (const l of argLines(urls)) {
    const s = parseSeed(l.text, l.line);
    tally.add(s);
    if (s.ok) out.push({ host: s.host, link: seedLink(s, now, 1) });
  }
  return out;
}

/**
 * What became of a seed list: URLs accepted, refused by reason, and taken as https://. It tells
 * the first few refusals and added schemes as they happen (`notice`), then sums up.
 */
export class SeedTally {
  accepted = 0;
  schemeAdded = 0;
  readonly refused = new Map<string, number>();

  constructor(private readonly notice: (line: string) => void = () => undefined, private readonly noticesOfEach = 5) {}

  add(s: Seed): void {
    const where = s.line ? `line ${s.line}: ` : '';
    if (!s.ok) {
      const n = (this.refused.get(s.reason) ?? 0) + 1;
      this.refused.set(s.reason, n);
      if (this.refusedCount <= this.noticesOfEach) this.notice(`${where}refused ${JSON.stringify(s.input)}: ${s.reason} (${s.detail})`);
      return;
    }
    this.accepted++;
    if (s.schemeAdded && ++this.schemeAdded <= this.noticesOfEach) this.notice(`${where}no scheme in ${JSON.stringify(s.input)}: taken as ${s.url}`);
  }

  get refusedCount(): number {
    let n = 0;
    for (const c of this.refused.values()) n += c;
    return n;
  }

  /** "9500 accepted, 500 refused (invalid-url 300, unsupported-scheme 200); 12 taken as https://" */
  summary(): string {
    const reasons = [...this.refused].sort((a, b) => b[1] - a[1]).map(([r, n]) => `${r} ${n}`).join(', ');
    return (
      `${this.accepted} accepted, ${this.refusedCount} refused${reasons ? ` (${reasons})` : ''}` +
      (this.schemeAdded ? `; ${this.schemeAdded} without a scheme taken as https://` : '')
    );
  }
}
