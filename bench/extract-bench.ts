/**
 * extract() against the floor: a bare parse5-sax-parser pass over the same page, in the same
 * process. The difference is what our own bookkeeping (text, links, robots, URL resolution) costs.
 *
 *   npx tsc -p tsconfig.json && node dist/bench/extract-bench.js [iterations]
 *
 * Rounds of the two contenders are interleaved so that JIT warm-up, GC and CPU frequency drift
 * hit both alike; the reported figure is the median round.
 */
import { extract } from '../lib/html/extract';
import { bareHtmlparser2Pass, barePass as bare, median, timeRound } from './parser-floor';

const ITERATIONS = Number(process.argv[2] ?? 2000);
const ROUNDS = 10;

/** A plausible article page: ~50 KiB, 25 links, a head with scripts/styles, nav, footer. */
function makePage(): string {
  const para = 'Lorem ipsum dolor sit amet, <b>consectetur</b> adipiscing elit, sed do eiusmod tempor incididunt ' +
    'ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud &amp; exercitation ullamco. ';
  let body = '<header><nav><ul>' + Array.from({ length: 5 }, (_, i) => `<li><a href="/section/${i}">Section ${i}</a></li>`).join('') + '</ul></nav></header><main>';
  let links = 5;
  for (let i = 0; body.length < 49.6 * 1024; i++) {
    body += `<div class="block b${i}"><h2>Heading ${i}</h2><p>${para.repeat(3)}</p>`;
    if (links < 23) { body += `<p>See <a href="../related/${i}.html" rel="${i % 4 === 0 ? 'nofollow' : 'bookmark'}">related ${i}</a>.</p>`; links++; }
    body += '</div>\n';
  }
  body += '</main><footer><a href="https://other.example/about">About</a> <a href="mailto:x@example.com">Mail</a> <a href="/contact">Contact</a></footer>';
  const head = '<meta charset="utf-8"><title>Bench &amp; page</title><link rel="canonical" href="/article">' +
    '<link rel="stylesheet" href="/s.css"><style>body{margin:0}.b1{color:red}</style>' +
    '<script>window.dataLayer=[];function f(){return "<a href=/nope>";}</script>';
  return `<!doctype html><html lang="en"><head>${head}</head><body>${body}</body></html>`;
}

function main(): void {
  const html = makePage();
  const url = 'https://bench.example/articles/page.html';
  const check = extract(html, url);
  const bytes = Buffer.byteLength(html);
  console.log(`page: ${(bytes / 1024).toFixed(1)} KiB, ${check.links.length} links extracted (${check.links.filter((l) => l.nofollow).length} nofollow), text ${check.text.length} chars`);

  const perRound = Math.max(1, Math.floor(ITERATIONS / ROUNDS));
  for (let i = 0; i < 200; i++) { extract(html, url); bare(html); bareHtmlparser2Pass(html); } // warm-up
  const ex: number[] = [];
  const floor: number[] = [];
  const floor2: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    ex.push(timeRound(() => extract(html, url), perRound));
    floor.push(timeRound(() => bare(html), perRound));
    floor2.push(timeRound(() => bareHtmlparser2Pass(html), perRound));
  }
  const e = median(ex);
  const f = median(floor);
  const f2 = median(floor2);
  const mbps = (ms: number) => (bytes / 1024 / 1024 / (ms / 1000)).toFixed(1);
  console.log(`iterations: ${perRound * ROUNDS} each (${ROUNDS} interleaved rounds, median shown), node ${process.version}`);
  console.log(`extract():             ${e.toFixed(3)} ms/page  (${mbps(e)} MiB/s)`);
  console.log(`bare parse5-sax pass:  ${f.toFixed(3)} ms/page  (${mbps(f)} MiB/s)`);
  console.log(`bare htmlparser2 pass: ${f2.toFixed(3)} ms/page  (${mbps(f2)} MiB/s)`);
  console.log(`ratio extract/floor:   ${(e / f).toFixed(2)}x (parse5), ${(e / f2).toFixed(2)}x (htmlparser2)`);
}

main();
