/**
 * `crawl run`'s seeds, fed into crawl.links from any async iterable of seed strings (a seeds
 * file of 20 million lines is never held in memory) while the crawl runs: a batch at a time,
 * whenever seen-test has fewer than `maxLag` links records still to take. How far a source was
 * fed is recorded under the run's state folder once the links are in the journal, so the same
 * command after a kill -9 goes on from there instead of feeding every seed again.
 */
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { groupLinks } from '../lib/link-groups';
import type { LinkMsg } from '../lib/messages';
import { normalizeUrl, registeredDomain } from '../lib/url-normalize';
import type { FileLog } from '../runtime/file-log';

export interface SeedProgress {
  /** Names the source (a file's path, size and modification time); null: not resumable. */
  source: string;
  /** Seeds (lines, valid or not) taken from the source so far. */
  taken: number;
}

export interface SeedIntakeOptions {
  log: FileLog;
  source: AsyncIterable<string>;
  /** Names the source for resuming (null: feed it all every time). */
  sourceId: string | null;
  /** Where progress is recorded. */
  progressFile: string;
  /** Registered domains (or hosts) the crawl stays within, grown as seeds are read; null: no limit. */
  scope: { set: Set<string>; by: 'domain' | 'host' } | null;
  logger: Logger;
  /** Feed while seen-test has fewer links records than this left to take. */
  maxLag?: number;
  batch?: number;
  now?: () => number;
  signal?: AbortSignal;
}

export interface SeedIntakeResult {
  fed: number;
  invalid: number;
  /** Seeds skipped as fed by an earlier run. */
  resumedAfter: number;
}

function readProgress(file: string): SeedProgress | null {
  if (!existsSync(file)) return null;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as SeedProgress;
  } catch {
    return null;
  }
}

function writeProgress(file: string, p: SeedProgress): void {
  writeFileSync(`${file}.tmp`, JSON.stringify(p));
  renameSync(`${file}.tmp`, file);
}

/** A seed line as a link; null (and logged) when it is not a crawlable URL. */
function seedLink(s: string, now: number, logger: Logger): LinkMsg | null {
  const n = normalizeUrl(s);
  if (!n.ok) {
    logger.error({ seed: s, reason: n.reason, detail: n.detail }, 'invalid seed URL: skipped');
    return null;
  }
  return { url: n.url, source_url: null, depth: 0, discovered_at: now, is_seed: true };
}

export async function feedSeeds(o: SeedIntakeOptions): Promise<SeedIntakeResult> {
  const maxLag = o.maxLag ?? 20_000;
  const batch = o.batch ?? 1000;
  const now = o.now ?? Date.now;
  const earlier = o.sourceId === null ? null : readProgress(o.progressFile);
  const skip = earlier && earlier.source === o.sourceId ? earlier.taken : 0;
  let taken = 0;
  let fed = 0;
  let invalid = 0;
  let links: LinkMsg[] = [];
  const hostOf = (url: string): string => new URL(url).hostname;
  const flush = async (): Promise<void> => {
    if (links.length === 0) return;
    while (o.log.lag('crawl.seen-test', 'links') >= maxLag && !o.signal?.aborted) await new Promise((r) => setTimeout(r, 20));
    for (const l of links) {
      if (!o.scope) continue;
      const host = hostOf(l.url);
      o.scope.set.add(o.scope.by === 'host' ? host : registeredDomain(host) ?? host);
    }
    o.log.append(groupLinks(links, hostOf).map(({ host, link }) => ({ topic: 'links' as const, key: host, host, value: link })));
    fed += links.length;
    links = [];
    // Recorded once the journal has the links (written at the end of this turn of the event loop).
    if (o.sourceId !== null) {
      const p: SeedProgress = { source: o.sourceId, taken };
      await new Promise((r) => setImmediate(r));
      o.log.flush();
      writeProgress(o.progressFile, p);
    }
  };
  for await (const s of o.source) {
    if (o.signal?.aborted) break;
    taken++;
    if (taken <= skip) continue;
    const link = seedLink(s, now(), o.logger);
    if (link) links.push(link);
    else invalid++;
    if (links.length >= batch) await flush();
  }
  if (!o.signal?.aborted) await flush();
  return { fed, invalid, resumedAfter: skip };
}
