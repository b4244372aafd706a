/**
 * SimHash against extraction on every template page of the real-page corpus (bench/corpus.ts),
 * #35's first target: SimHash at most a tenth of extract()'s CPU on every page, whatever its
 * script. Per page: extract() (the crawler's text and links pass), version 2 SimHash of that
 * text from its UTF-8 bytes (as the parse worker calls it), the share, and version 1 (the MD5
 * shingles it replaced, lib/simhash-v1.ts) for comparison; then what one call of the hash
 * library per word would cost, the design lib/simhash.ts rejects.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/simhash-bench.js [rounds] [--all]
 *
 * --all: every page of the corpus (65), not only the 44 templates. CPU time of this thread's
 * process (user + sys), median of interleaved rounds: each round times max(3, 3e6 / HTML bytes)
 * calls of extract() then as many of SimHash (16 calls on clean-links, about 1,000 on the small
 * test pages). SimHash in ms to 4 places: the small pages' take microseconds.
 */
import { xxh64 } from '@node-rs/xxhash';
import { extract } from '../lib/html/extract';
import { simhashWithCount } from '../lib/simhash';
import { simhash64V1 } from '../lib/simhash-v1';
import { corpusPages, templatePages } from './corpus';
import { median, processCpuMs } from './parser-floor';

const ROUNDS = Number(process.argv.slice(2).find((a) => /^\d+$/.test(a)) ?? 7);
const ALL = process.argv.includes('--all');

/** Median CPU ms of one call of fn, each round running it `n` times; the rounds of all fns interleave. */
function timeEach(fns: ReadonlyArray<() => unknown>, n: number): number[] {
  const rounds = fns.map(() => [] as number[]);
  for (const fn of fns) for (let i = 0; i < 2; i++) fn();
  for (let r = 0; r < ROUNDS; r++) {
    fns.forEach((fn, k) => {
      const t0 = processCpuMs();
      for (let i = 0; i < n; i++) fn();
      rounds[k].push((processCpuMs() - t0) / n);
    });
  }
  return rounds.map(median);
}

function main(): void {
  const url = 'http://127.1.0.1:8080/p/1';
  const rows: string[] = [];
  let worst = { share: 0, name: '' };
  let over = 0;
  let sumExtract = 0;
  let sumSimhash = 0;
  const pages = ALL ? corpusPages() : templatePages();
  const texts: string[] = [];
  for (const { name, html } of pages) {
    const text = extract(html, url).text;
    texts.push(text);
    const utf8 = Buffer.from(text, 'utf8');
    const n = Math.max(3, Math.round(3e6 / html.length));
    const [ex, v2] = timeEach([() => extract(html, url), () => simhashWithCount(utf8)], n);
    const [v1] = timeEach([() => simhash64V1(text)], 1);
    const share = v2 / ex;
    if (share > worst.share) worst = { share, name };
    if (share > 0.1) over++;
    sumExtract += ex;
    sumSimhash += v2;
    const nonLatin1 = /[^\u0000-\u00ff]/.test(text) ? 'yes' : 'no';
    rows.push(`| ${name} | ${(Buffer.byteLength(html) / 1024).toFixed(0)} | ${text.length} | ${nonLatin1} | ${ex.toFixed(3)} | ${v2.toFixed(4)} | ${(100 * share).toFixed(1)}% | ${v1.toFixed(2)} |`);
  }
  process.stdout.write('| page | KiB | text chars | past U+00FF | extract ms | SimHash v2 ms | v2 / extract | SimHash v1 ms (string way) |\n|---|---:|---:|---|---:|---:|---:|---:|\n');
  process.stdout.write(`${rows.join('\n')}\n\n`);
  process.stdout.write(`${pages.length} pages: SimHash v2 is ${(100 * sumSimhash / sumExtract).toFixed(1)}% of extract's CPU over all of them, at most ${(100 * worst.share).toFixed(1)}% (${worst.name}); over 10% on ${over}.\n`);

  // The rejected design: one library call per word (its 64-bit hash as a BigInt).
  const words = texts.flatMap((t) => t.toLowerCase().match(/[\p{L}\p{N}\p{M}_]+/gu) ?? []);
  const [perWord] = timeEach([() => {
    let x = 0n;
    for (const w of words) x ^= xxh64(w, 0n);
    return x;
  }], 1);
  process.stdout.write(`@node-rs/xxhash xxh64, one call per word: ${((perWord * 1e6) / words.length).toFixed(0)} ns a word (${words.length} words of the corpus); node ${process.version}\n`);
}

main();
