/**
 * extract() (htmlparser2's tokenizer, lib/html/tag-scanner.ts) against the same collector fed by
 * parse5's SAX parser (bench/parse5-scan.ts) over every page of the real-page corpus: title,
 * text, links, canonical, robots, refresh, feeds, charset and lang must be identical, so SimHash
 * values do not change with the tokenizer. Exits 1 on the first page that differs.
 *   npx tsc -p tsconfig.json && node dist/bench/extract-parity.js [corpus dir]   (default: bench/corpus.ts's corpusDir())
 */
import { isDeepStrictEqual } from 'node:util';
import { extract, extractWith } from '../lib/html/extract';
import { corpusDir, corpusPages } from './corpus';
import { parse5Scan } from './parse5-scan';

const dir = process.argv[2] ?? corpusDir();
const pages = corpusPages(dir);
let differ = 0;
let chars = 0;
let links = 0;
for (const { name, html } of pages) {
  const url = `https://${name.replace(/\.html$/, '')}.example/page`;
  const ours = extract(html, url);
  const ref = extractWith(parse5Scan, html, url);
  chars += ours.text.length;
  links += ours.links.length;
  if (!isDeepStrictEqual(ours, ref)) {
    differ++;
    for (const k of Object.keys(ref) as (keyof typeof ref)[]) {
      if (!isDeepStrictEqual(ours[k], ref[k])) console.log(`${name}: ${k} differs`);
    }
    if (!isDeepStrictEqual(ours.text, ref.text)) {
      let i = 0;
      while (ours.text[i] === ref.text[i]) i++;
      console.log(`  text from ${i}: ours ${JSON.stringify(ours.text.slice(i - 40, i + 80))}\n  parse5 ${JSON.stringify(ref.text.slice(i - 40, i + 80))}`);
    }
  }
}
console.log(`${pages.length} pages of ${dir}: ${pages.length - differ} identical, ${differ} differ (${chars} characters of text, ${links} links)`);
process.exitCode = differ === 0 ? 0 : 1;
