/**
 * `crawl run`'s seeds, fed into the embedded log as the crawl runs: the --seed arguments, then
 * the --seeds-file list (a path or `-`), streamed in batches through lib/seed-source.ts. The
 * next batch is read only while seen-test has few crawl.links records still to take, so a list
 * of millions of lines never sits in memory, neither as text nor as log records.
 *
 * Scope (`--scope domain|host`) is the seeds' domains or hosts. For a list in a file, a first
 * streaming pass collects them before the crawl starts, so a link to the domain of a seed further
 * down the list is in scope from the first page on. Standard input cannot be read twice: its
 * seeds widen the scope as they are read.
 */
import type { Logger } from '../lib/logger';
import type { LinkMsg } from '../lib/messages';
import { argLines, feedSeeds, parseSeed, seedBatches, seedLines, seedLink, SeedTally, type Seed, type SeedLine } from '../lib/seed-source';
import { registeredDomain } from '../lib/url-normalize';

export type Scope = 'domain' | 'host' | 'any';

async function* both(args: SeedLine[], file: string | undefined, signal: AbortSignal): AsyncGenerator<SeedLine> {
  yield* args;
  if (file) yield* seedLines(file, signal);
}

export class SeedFeed {
  /** Scope keys (registered domains or hosts); empty with `any`: no limit. */
  readonly scope = new Set<string>();
  readonly tally: SeedTally;
  private readonly batches: AsyncGenerator<Seed[]>;
  private readonly stopped = new AbortController();
  private finished = false;

  constructor(
    private readonly o: { args: readonly string[]; file?: string; scope: Scope; batchSize?: number },
    private readonly log: Logger,
    notice: (line: string) => void,
  ) {
    this.tally = new SeedTally(notice);
    this.batches = seedBatches(both(argLines(o.args), o.file, this.stopped.signal), o.batchSize ?? 1000);
  }

  get done(): boolean {
    return this.finished;
  }

  private scopeKey(host: string): string {
    return this.o.scope === 'host' ? host : registeredDomain(host) ?? host;
  }

  /** A seed added while the crawl runs (`crawl seed --out`, POST /seeds): its domain (or host) is in scope from now on. */
  admit(host: string): void {
    if (this.o.scope !== 'any') this.scope.add(this.scopeKey(host));
  }

  /** The scope of a list in a file, read ahead in one streaming pass (only the keys are kept). */
  async readScope(): Promise<void> {
    if (this.o.scope === 'any' || !this.o.file || this.o.file === '-') return;
    for await (const l of seedLines(this.o.file)) {
      const s = parseSeed(l.text, l.line);
      if (s.ok) this.scope.add(this.scopeKey(s.host));
    }
  }

  /** The next batch's valid seeds as links ([] for a batch of refused lines), or null at the end of the lists. */
  async next(now = Date.now()): Promise<LinkMsg[] | null> {
    const r = await this.batches.next();
    if (r.done) {
      this.finished = true;
      return null;
    }
    const links: LinkMsg[] = [];
    for (const s of r.value) {
      this.tally.add(s);
      if (!s.ok) {
        this.log.info({ seed: s.input, line: s.line, reason: s.reason, detail: s.detail }, 'invalid seed URL: skipped');
        continue;
      }
      if (this.o.scope !== 'any') this.scope.add(this.scopeKey(s.host));
      links.push(seedLink(s, now));
    }
    return links;
  }

  /** The --feed URLs as seed links of priority class 1, counted and scoped as seeds are. */
  feedLinks(urls: readonly string[], now = Date.now()): LinkMsg[] {
    const seeds = feedSeeds(urls, this.tally, now);
    if (this.o.scope !== 'any') for (const s of seeds) this.scope.add(this.scopeKey(s.host));
    return seeds.map((s) => s.link);
  }

  /** Links up to the first valid seed (at least one batch); [] when the lists hold none. */
  async first(): Promise<LinkMsg[]> {
    for (;;) {
      const links = await this.next();
      if (links === null || links.length > 0) return links ?? [];
    }
  }

  /** Feeds every remaining batch to `append`, waiting while `hold()` says so, until the lists end or `close()`. */
  async feed(append: (links: LinkMsg[]) => void, hold: () => boolean): Promise<void> {
    while (!this.stopped.signal.aborted) {
      if (hold()) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      const links = await this.next();
      if (links === null) return;
      if (links.length && !this.stopped.signal.aborted) append(links);
    }
  }

  /** Stops reading, a read that waits included (standard input); `feed` then returns. */
  async close(): Promise<void> {
    this.finished = true;
    this.stopped.abort();
    await this.batches.return(undefined);
  }
}
