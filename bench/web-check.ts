/**
 * What the real-page web serves, checked as the crawler sees it: a sample of its pages (the
 * first pages of a spread of hosts), their text by extract(), their SimHash (version 2), and
 * the Hamming distance of every pair. No two distinct pages may be near-duplicates (within
 * NEAR_DUPLICATE_MAX_BITS), or the crawl would skip them and measure less work than it shows.
 * `npm run bench` prints the summary; test/unit/bench-real-web.test.ts asserts it.
 */
import { NEAR_DUPLICATE_MAX_BITS } from '../lib/dedup';
import { extract } from '../lib/html/extract';
import { hammingDistance, simhashWithCount } from '../lib/simhash';
import { MIN_SIMHASH_SHINGLES } from '../processors/parse';
import { pageTemplate, realPage, type Template } from './real-web';
import { hostAddress } from './synthetic-web';

export interface DistanceSummary {
  pages: number;
  /** Pages with too little text for a fingerprint (parse gives them none either). */
  unfingerprinted: number;
  pairs: number;
  /** Pairs of pages made from the same template. */
  sameTemplatePairs: number;
  min: number;
  /** The same, over pairs of the same template only. */
  minSameTemplate: number;
  median: number;
  /** Pairs within the crawler's near-duplicate threshold. */
  withinThreshold: number;
  /** How many pairs lie at each distance 0-64. */
  histogram: number[];
}

/** `hostsSampled` hosts spread over the web's `hosts`, `pagesPerHost` pages each. */
export function servedDistances(templates: readonly Template[], hosts: number, hostsSampled: number, pagesPerHost: number, port = 8080): DistanceSummary {
  const fps: Array<{ fp: string; template: number }> = [];
  let unfingerprinted = 0;
  for (let k = 0; k < hostsSampled; k++) {
    const h = Math.floor((k * hosts) / hostsSampled);
    for (let n = 0; n < pagesPerHost; n++) {
      const html = realPage(templates, h, n, hosts, port).toString('utf8');
      const { simhash, shingles } = simhashWithCount(extract(html, `http://${hostAddress(h)}:${port}/p/${n}`).text);
      if (shingles < MIN_SIMHASH_SHINGLES) unfingerprinted++;
      else fps.push({ fp: simhash, template: pageTemplate(h, n, templates.length).index });
    }
  }
  const histogram = new Array<number>(65).fill(0);
  let min = 64;
  let minSameTemplate = 64;
  let sameTemplatePairs = 0;
  for (let i = 0; i < fps.length; i++) {
    for (let j = i + 1; j < fps.length; j++) {
      const d = hammingDistance(fps[i].fp, fps[j].fp);
      histogram[d]++;
      if (d < min) min = d;
      if (fps[i].template === fps[j].template) {
        sameTemplatePairs++;
        if (d < minSameTemplate) minSameTemplate = d;
      }
    }
  }
  const pairs = (fps.length * (fps.length - 1)) / 2;
  let seen = 0;
  let median = 0;
  for (let d = 0; d <= 64; d++) {
    seen += histogram[d];
    if (seen * 2 >= pairs) {
      median = d;
      break;
    }
  }
  const withinThreshold = histogram.slice(0, NEAR_DUPLICATE_MAX_BITS + 1).reduce((a, b) => a + b, 0);
  return { pages: hostsSampled * pagesPerHost, unfingerprinted, pairs, sameTemplatePairs, min, minSameTemplate, median, withinThreshold, histogram };
}

export function distanceLine(s: DistanceSummary): string {
  return `served pages' SimHash (v2) distances, ${s.pages} pages sampled (${s.unfingerprinted} with too little text to fingerprint), ${s.pairs} pairs: ` +
    `min ${s.min} bits (${s.minSameTemplate} between pages of the same template, ${s.sameTemplatePairs} such pairs), median ${s.median}, ` +
    `${s.withinThreshold} pairs within the near-duplicate threshold of ${NEAR_DUPLICATE_MAX_BITS} bits`;
}
