/**
 * The peer in the benchmark: Crawlee's CheerioCrawler in its politest configuration (one
 * second between requests to a domain, robots.txt respected, no retries hammering a host),
 * following every link like our crawl does with --scope any. Run as a child process so its CPU
 * and memory are its own:
 *
 *   node dist/bench/peer-crawlee.js <seedsFile> <maxConcurrency> <maxSecs> <maxPages>
 */
import dns, { type LookupAddress } from 'node:dns';
import { readFileSync } from 'node:fs';
import { CheerioCrawler, Configuration, log as crawleeLog, LogLevel, RequestQueue } from '@crawlee/cheerio';
import { hostAddress, hostIndexOfName } from './synthetic-web';

/**
 * Resolves the synthetic web's names (host<i>.test) to their loopback addresses. The peer
 * crawls by name because Crawlee keys its per-domain delay by registered domain and has none
 * for an IP address: on bare addresses its politeness setting would do nothing.
 */
const systemLookup = dns.lookup;

function benchLookup(hostname: string, options: unknown, callback: unknown): void {
  const cb = (typeof options === 'function' ? options : callback) as (err: Error | null, address: string | LookupAddress[], family?: number) => void;
  const opts = (typeof options === 'object' && options !== null ? options : {}) as { all?: boolean };
  const i = hostIndexOfName(hostname);
  if (i < 0) {
    systemLookup(hostname, opts as never, cb as never);
    return;
  }
  if (opts.all) cb(null, [{ address: hostAddress(i), family: 4 }]);
  else cb(null, hostAddress(i), 4);
}

async function main(): Promise<void> {
  // Every connection of this process (pages and Crawlee's own robots.txt requests) resolves here.
  (dns as { lookup: unknown }).lookup = benchLookup;
  const [seedsFile, concurrency, maxSecs, maxPages] = process.argv.slice(2);
  const seeds = readFileSync(seedsFile!, 'utf8').split('\n').filter(Boolean);
  crawleeLog.setLevel(LogLevel.WARNING);
  // In memory only: the benchmark measures crawling, not Crawlee's on-disk request queue.
  const config = new Configuration({ persistStorage: false, purgeOnStart: true });
  let pages = 0;
  // The seeds go into the queue directly. crawler.run(seeds) would first check each seed against
  // its host's robots.txt, one fetch after another before the first page (the crawler's
  // addRequests): with 5,000 hosts answering in 200 ms, 1,000 s of robots.txt alone, and the peer
  // fetched no page at all in any earlier edition's 200 ms run. Robots.txt is still obeyed: the
  // crawler checks every request against it before fetching (respectRobotsTxtFile below). A named
  // queue, since run() empties the default one.
  const queue = await RequestQueue.open('bench-seeds', { config });
  await queue.addRequests(seeds.map((url) => ({ url })));
  const crawler = new CheerioCrawler(
    {
      requestQueue: queue,
      maxConcurrency: Number(concurrency),
      // Crawlee's own autoscaling decides how many fetches are in flight, as its users run it:
      // its pool starts at desiredConcurrency, which CheerioCrawler sets to 10, and adds 5%
      // every 10 s while the machine is not overloaded. minConcurrency (here equal to the
      // maximum) only keeps it from scaling down. Started at 256 instead (desiredConcurrency),
      // it did fewer pages a second with 0 ms responses (47.4 against 56.8 in the same hour:
      // its 1-second domain delay puts hundreds of waiting requests back at a time) and more
      // with 200 ms ones (53.4 against 23.4); README "Performance" gives both.
      minConcurrency: Number(concurrency),
      sameDomainDelaySecs: 1,
      respectRobotsTxtFile: true,
      maxRequestRetries: 0,
      maxRequestsPerCrawl: Number(maxPages),
      requestHandler: async ({ enqueueLinks }) => {
        pages++;
        await enqueueLinks({ strategy: 'all' });
      },
    },
    config,
  );
  const timer = setTimeout(() => {
    crawler.stop('benchmark time is up');
    // stop() waits for requests it has delayed for politeness; the benchmark waits no longer.
    setTimeout(() => {
      process.stdout.write(`${JSON.stringify({ pages, stoppedHard: true })}\n`);
      process.exit(0);
    }, 5000).unref();
  }, Number(maxSecs) * 1000);
  await crawler.run();
  clearTimeout(timer);
  process.stdout.write(`${JSON.stringify({ pages })}\n`);
  process.exit(0);
}

void main();
