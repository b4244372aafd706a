/**
 * Benchmark results as a markdown table, each contender also as a ratio against the peer
 * crawler measured on the same web at the same latency. Pure, so it is unit-tested.
 */
import { stealShare, sustainedCpuMsPerPage, sustainedPagesPerSec, type SustainedWindow } from './sustained';

export interface RunResult {
  contender: 'embedded' | 'kafka' | 'peer';
  latencyMs: number;
  hosts: number;
  /** Pages served (HTTP 200 page requests), counted by the synthetic web. */
  pages: number;
  /** Pages through the whole topology (handoff events): fewer than `pages` when parse lags. */
  handedOff: number;
  /** Pages through parse (crawl.parsed records); unset: every page served was parsed (the peer). */
  parsed?: number;
  /** Of those, the ones parsed before the crawl was told to stop (Kafka mode); unset: not known. */
  parsedInWindow?: number;
  /** Server-side window from the first page request to the last. */
  windowSecs: number;
  /** Pages the servers served in each whole second of the window (the run's ramp-up and steady state). */
  pagesBySecond?: number[];
  /** user + sys of every counted process (crawler processes; services in Kafka mode). */
  cpuMs: number;
  /** Of cpuMs, what the services used (Kafka mode). */
  serviceCpuMs: number;
  peakRssBytes: number;
  gapViolations: number;
  concurrencyViolations: number;
  minGapMs: number | null;
  /** TCP connections the server saw (requests / connections = keep-alive reuse). */
  connections?: number;
  /** min(CPU limit, politeness limit) in pages/s, where it can be judged. */
  limitPagesPerSec: number | null;
  /**
   * user + sys of the synthetic web's server during the run. It shares the cores with the
   * crawler, so the machine can serve and crawl at most cores / (crawler + server CPU per page).
   */
  webCpuMs?: number;
  /**
   * The parser's floor (bench/parser-floor.ts): CPU ms of a bare parse5 SAX pass over one page of
   * this web, the mean of the figures taken right before and right after this contender ran.
   */
  parserFloorMs?: number;
  note?: string;
  /** The same run after its warm-up, to its stop (bench/sustained.ts); unset when too short. */
  sustained?: SustainedWindow;
}

/** Pages served that were also parsed: a page fetched but never parsed has not cost its full CPU yet. */
export const pagesDone = (r: RunResult): number => Math.min(r.pages, r.parsed ?? r.pages);
/**
 * Pages served and parsed per second of the served window: a backlog left unparsed does not
 * count, nor (where known) what parse only caught up with while the crawl was stopping.
 */
export const pagesPerSec = (r: RunResult): number => (r.windowSecs > 0 ? Math.min(pagesDone(r), r.parsedInWindow ?? Infinity) / r.windowSecs : 0);
/** CPU per page done (conservative when parse lagged: fetch work for unparsed pages is counted). */
export const cpuMsPerPage = (r: RunResult): number => (pagesDone(r) > 0 ? r.cpuMs / pagesDone(r) : 0);

/** CPU per page as a multiple of the parser's floor measured in the same run; null where none was. */
export const floorMultiple = (r: RunResult): number | null =>
  r.parserFloorMs !== undefined && r.parserFloorMs > 0 && pagesDone(r) > 0 ? cpuMsPerPage(r) / r.parserFloorMs : null;

/** The synthetic web server's CPU per page done; null where it was not measured. */
export const webCpuMsPerPage = (r: RunResult): number | null => (r.webCpuMs !== undefined && pagesDone(r) > 0 ? r.webCpuMs / pagesDone(r) : null);

/**
 * Pages/s as a share of what the machine could do at all with this run's CPU per page when the
 * server serving the pages runs on the same cores: cores / (crawler + server CPU per page).
 */
export function machineShare(r: RunResult, cores: number): number | null {
  const web = webCpuMsPerPage(r);
  const perPage = cpuMsPerPage(r) + (web ?? 0);
  return web === null || perPage <= 0 ? null : pagesPerSec(r) / ((cores * 1000) / perPage);
}

/**
 * The throughput a crawl can reach: CPU-bound at `cores` / CPU per page, politeness-bound at
 * one page per host per `hostPeriodMs` (response time plus the gap the crawler's politeness
 * rule then waits). The smaller one is the limit.
 */
export function throughputLimit(cpuMsPerPage: number, cores: number, hosts: number, hostPeriodMs: number): number {
  const cpu = cpuMsPerPage > 0 ? (cores * 1000) / cpuMsPerPage : Infinity;
  const polite = (hosts * 1000) / hostPeriodMs;
  return Math.min(cpu, polite);
}

/** kcrawl's per-host period: the response, then max(min gap, factor x response time) (processors/frontier-state.ts). */
export function kcrawlHostPeriodMs(latencyMs: number, minHostDelayMs = 1000, responseTimeFactor = 10): number {
  return latencyMs + Math.max(minHostDelayMs, responseTimeFactor * latencyMs);
}

/**
 * Pages/s of a run with slow responses as a share of the same contender's run at 0 ms in the
 * same invocation: how much of its CPU-bound throughput the crawler keeps when every response
 * takes latencyMs (fetches held open hide the wait). Null for 0 ms runs and without a 0 ms run.
 */
export function shareOfOwnZeroLatency(r: RunResult, results: readonly RunResult[]): number | null {
  if (r.latencyMs === 0) return null;
  const zero = results.find((z) => z.contender === r.contender && z.latencyMs === 0);
  return zero && pagesPerSec(zero) > 0 ? pagesPerSec(r) / pagesPerSec(zero) : null;
}

const contenderName = (r: RunResult): string => (r.contender === 'peer' ? 'Crawlee CheerioCrawler' : r.contender === 'kafka' ? 'kcrawl Kafka mode' : 'kcrawl embedded');
const fmt = (n: number, digits = 1): string => (Number.isFinite(n) ? n.toFixed(digits) : '–');
const ratio = (a: number, b: number): string => (b > 0 && a > 0 ? `${(a / b).toFixed(2)}×` : '–');

export function markdownTable(results: readonly RunResult[], cores = 2): string {
  const head =
    '| contender | latency | hosts | pages | parsed | handed off | pages/s | vs peer | CPU ms/page | × parser floor | vs peer | web server CPU ms/page | peak RSS MiB | gap < 1 s | concurrent > 1 | min gap ms | % of limit | % of machine | % of own 0 ms |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|';
  const rows = results.map((r) => {
    const peer = results.find((p) => p.contender === 'peer' && p.latencyMs === r.latencyMs);
    const pps = pagesPerSec(r);
    const cpp = cpuMsPerPage(r);
    // Ratios read "times better than the peer": throughput ours/peer, CPU peer/ours.
    const ppsRatio = peer && r !== peer ? ratio(pps, pagesPerSec(peer)) : '';
    const cpuRatio = peer && r !== peer ? ratio(cpuMsPerPage(peer), cpp) : '';
    const ofLimit = r.limitPagesPerSec ? `${fmt((100 * pps) / r.limitPagesPerSec, 0)}%` : '–';
    const web = webCpuMsPerPage(r);
    const share = machineShare(r, cores);
    const ofMachine = share === null ? '–' : `${fmt(100 * share, 0)}%`;
    const floor = floorMultiple(r);
    const own = shareOfOwnZeroLatency(r, results);
    const ofOwn = own === null ? '–' : `${fmt(100 * own, 0)}%`;
    const name = contenderName(r);
    return (
      `| ${name}${r.note ? ` (${r.note})` : ''} | ${r.latencyMs} ms | ${r.hosts} | ${r.pages} | ${r.parsed ?? r.pages}${r.parsedInWindow !== undefined ? ` (${r.parsedInWindow} by stop)` : ''} | ${r.handedOff} | ${fmt(pps)} | ${ppsRatio} | ${fmt(cpp, 2)} | ${floor === null ? '–' : `${fmt(floor, 2)}×`} | ${cpuRatio} | ${web === null ? '–' : fmt(web, 2)} | ` +
      `${fmt(r.peakRssBytes / 1024 / 1024, 0)} | ${r.gapViolations} | ${r.concurrencyViolations} | ${r.minGapMs ?? '–'} | ${ofLimit} | ${ofMachine} | ${ofOwn} |`
    );
  });
  return [head, ...rows].join('\n');
}

/**
 * The sustained part of each run (after the warm-up, to the stop): pages/s and CPU per page in
 * it, against the peer's sustained figures at the same latency, the parser's floor, the limit
 * at this CPU per page, and the machine (crawler and web server CPU per page together).
 */
export function sustainedTable(results: readonly RunResult[], cores = 2): string {
  const head =
    '| contender | latency | window | pages in it | pages/s | vs peer | CPU ms/page | × parser floor | vs peer | web server CPU ms/page | % of limit | % of machine | steal | % of limit, steal aside |\n' +
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|';
  const rows = results.map((r) => {
    const name = contenderName(r);
    const w = r.sustained;
    if (!w || w.pages <= 0) return `| ${name} | ${r.latencyMs} ms | – | – | – | | – | – | | – | – | – | – | – |`;
    const peer = results.find((p) => p.contender === 'peer' && p.latencyMs === r.latencyMs)?.sustained;
    const pps = sustainedPagesPerSec(w);
    const cpp = sustainedCpuMsPerPage(w);
    const vsPeer = r.contender !== 'peer' && peer && peer.pages > 0;
    const web = w.webCpuMs / w.pages;
    const machine = pps / ((cores * 1000) / (cpp + web));
    const steal = stealShare(w, cores);
    return (
      `| ${name} | ${r.latencyMs} ms | ${fmt(w.fromSec, 0)}–${fmt(w.fromSec + w.secs, 0)} s | ${Math.round(w.pages)} | ${fmt(pps)} | ${vsPeer ? ratio(pps, sustainedPagesPerSec(peer)) : ''} | ` +
      `${fmt(cpp, 2)} | ${r.parserFloorMs ? `${fmt(cpp / r.parserFloorMs, 2)}×` : '–'} | ${vsPeer ? ratio(sustainedCpuMsPerPage(peer), cpp) : ''} | ${fmt(web, 2)} | ` +
      `${w.limitPagesPerSec ? `${fmt((100 * pps) / w.limitPagesPerSec, 0)}%` : '–'} | ${fmt(100 * machine, 0)}% | ` +
      `${steal === null ? '–' : `${fmt(100 * steal, 0)}%`} | ${w.limitNetOfStealPagesPerSec ? `${fmt((100 * pps) / w.limitNetOfStealPagesPerSec, 0)}%` : '–'} |`
    );
  });
  // Fetch running ahead of parse in the window: its CPU includes pages parsed only after it.
  const ahead = results
    .filter((r) => r.sustained?.fetched !== undefined && r.sustained.pages > 0)
    .map((r) => `${contenderName(r)} ${r.latencyMs} ms: ${Math.round(r.sustained!.fetched!)} pages fetched in the window, ${Math.round(r.sustained!.pages)} parsed`);
  return [head, ...rows].join('\n') + (ahead.length ? `\n\nFetched and parsed in the window (fetch ahead of parse adds its CPU, not its pages): ${ahead.join('; ')}.` : '');
}
