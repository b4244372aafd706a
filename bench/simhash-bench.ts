/**
 * SimHash of the benchmark web's page text: the text extract() gives for pages of
 * bench/synthetic-web.ts, fingerprinted by lib/simhash.ts from the string (the API's way) and
 * from its UTF-8 bytes (the parse worker's way), median of rounds. Then the same for text of
 * varied words (random words of a 20,000-word vocabulary, nearly every shingle new to the feature-hash
 * cache, so this is the cost of MD5 per distinct shingle): the benchmark's pages repeat a few
 * hundred distinct shingles, real pages have thousands, each hashed once per cache fill.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/simhash-bench.js [rounds]
 */
import { extract } from '../lib/html/extract';
import { simhashWithCount } from '../lib/simhash';
import { fillerHtml, pageHtml } from './synthetic-web';

const ROUNDS = Number(process.argv[2] ?? 9);

/** Median µs per call of fn over the texts (each round: every text `repeat` times). */
function medianMicros(texts: readonly string[], repeat: number, fn: (i: number) => unknown): number {
  const perCall: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (let k = 0; k < repeat; k++) for (let i = 0; i < texts.length; i++) fn(i);
    perCall.push(Number(process.hrtime.bigint() - t0) / 1e3 / (repeat * texts.length));
  }
  perCall.sort((a, b) => a - b);
  return perCall[Math.floor(ROUNDS / 2)];
}

function variedTexts(n: number, chars: number): string[] {
  let seed = 7;
  const rnd = (): number => ((seed = (Math.imul(seed, 1103515245) + 12345) & 0x7fffffff) / 0x7fffffff);
  const vocab = Array.from({ length: 20_000 }, () => Array.from({ length: 3 + Math.floor(rnd() * 8) }, () => String.fromCharCode(97 + Math.floor(rnd() * 26))).join(''));
  return Array.from({ length: n }, () => {
    const words: string[] = [];
    for (let len = 0; len < chars; len += words[words.length - 1].length + 1) words.push(vocab[Math.floor(rnd() * vocab.length)]);
    return words.join(' ');
  });
}

function report(label: string, texts: readonly string[], repeat: number): void {
  const utf8 = texts.map((t) => Buffer.from(t, 'utf8'));
  const fromString = medianMicros(texts, repeat, (i) => simhashWithCount(texts[i]));
  const fromBytes = medianMicros(texts, repeat, (i) => simhashWithCount(texts[i], undefined, utf8[i]));
  const { simhash, shingles } = simhashWithCount(texts[0]);
  process.stdout.write(`${label}: text ${texts[0].length} characters, ${shingles} shingles, simhash ${simhash}: ${fromString.toFixed(1)} µs per page from the string, ${fromBytes.toFixed(1)} from its UTF-8 bytes (median of ${ROUNDS} rounds)\n`);
}

function main(): void {
  const filler = fillerHtml(60 * 1024);
  report('benchmark web', Array.from({ length: 100 }, (_, i) => extract(pageHtml(i, i * 7, 5000, 8080, filler), 'http://127.1.0.1:8080/p/1').text), 20);
  report('varied words', variedTexts(20, 45_000), 2);
}

main();
