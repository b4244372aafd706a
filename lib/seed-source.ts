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

/** The seed lines of `from`: a path, `-` for standard input, or a readable stream. */
export async function* seedLines(from: string | Readable): AsyncGenerator<SeedLine> {
  const input = typeof from !== 'string' ? from : from === '-' ? process.stdin : createReadStream(from);
  const lines = createInterface({ input, crlfDelay: Infinity });
  let line = 0;
  try {
    for await (const raw of lines) {
      line++;
      const text = raw.trim();
      if (text && !text.startsWith('#')) yield { line, text };
    }
  } finally {
    lines.close();
    if (input !== process.stdin) input.destroy();
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

/** Parsed seeds in batches of at most `size`; the next lines are read only when the caller asks for the next batch. */
export async function* seedBatches(lines: AsyncIterable<SeedLine> | Iterable<SeedLine>, size = 1000): AsyncGenerator<Seed[]> {
  let batch: Seed[] = [];
  for await (const l of lines) {
    batch.push(parseSeed(l.text, l.line));
    if (batch.length >= size) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

/** Seed strings given as command-line arguments: line 0, they have no line in a list. */
export function argLines(urls: readonly string[]): SeedLine[] {
  return urls.map((text) => ({ line: 0, text }));
}

export function seedLink(s: Extract<Seed, { ok: true }>, now: number): LinkMsg {
  return { url: s.url, source_url: null, depth: 0, discovered_at: now, is_seed: true };
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
