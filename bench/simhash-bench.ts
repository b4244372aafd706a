/**
 * SimHash of the benchmark web's page text: the text extract() gives for pages of
 * bench/synthetic-web.ts, fingerprinted by lib/simhash.ts, median of rounds.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/simhash-bench.js [rounds]
 */
import { extract } from '../lib/html/extract';
import { simhashWithCount } from '../lib/simhash';
import { fillerHtml, pageHtml } from './synthetic-web';

const ROUNDS = Number(process.argv[2] ?? 9);

function main(): void {
  const filler = fillerHtml(60 * 1024);
  const texts = Array.from({ length: 100 }, (_, i) => extract(pageHtml(i, i * 7, 5000, 8080, filler), 'http://127.1.0.1:8080/p/1').text);
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < 20; k++) for (const t of texts) simhashWithCount(t);
    perCall.push(Number(process.hrtime.bigint() - t0) / 1e3 / (20 * texts.length));
  }
  perCall.sort((a, b) => a - b);
  const { simhash, shingles } = simhashWithCount(texts[0]);
  process.stdout.write(`text ${texts[0].length} characters, ${shingles} shingles, simhash ${simhash}: ${perCall[Math.floor(ROUNDS / 2)].toFixed(1)} µs per page (median of ${ROUNDS} rounds)\n`);
}

main();
