/**
 * Links per second through seen-test, side by side in one run (issue #4):
 *   per-link  — the stage's handle() for each link, one Redis round trip per check and per add
 *               (what a naive seen-test does: every link waits on the network);
 *   batched   — handleBatch() over a consumer batch: one pipeline to check, one to add;
 *   memory    — the same batched stage over the in-process filter (embedded default).
 * Links: pages of 25 links, 80% of them already seen (the design notes' estimate).
 *
 *   eval "$(bash stack/stack.sh env)"; npx tsc -p tsconfig.json && node dist/bench/seen-bench.js [batchedLinks] [perLinkLinks] [batchSize]
 */
import pino from 'pino';
import { withRedisSeenSet } from './redis-seen-run';
import { MemoryBloom } from '../lib/bloom/memory';
import { bloomParams } from '../lib/bloom/sizing';
import type { SeenSet } from '../lib/bloom/types';
import type { LinkMsg } from '../lib/messages';
import { seenTestStage } from '../processors/seen-test';
import type { InRecord, Stage, StageContext } from '../runtime/stage';

const BATCHED = Number(process.argv[2] ?? 500_000);
const PER_LINK = Number(process.argv[3] ?? 20_000);
const BATCH = Number(process.argv[4] ?? 500);
const KNOWN_SHARE = 0.8;

const log = pino({ level: 'warn' });
const ctx: StageContext = { now: Date.now, log };
const url = (i: number): string => `https://www${i % 5000}.site${i % 20011}.example/articles/${i}/story-${(i * 2654435761) % 1_000_003}.html`;

/** `count` links; KNOWN_SHARE of them point at URLs 0..known-1 (added beforehand), the rest are new. */
function links(count: number, known: number, offset: number): InRecord[] {
  return Array.from({ length: count }, (_, i) => {
    const isKnown = (i * 7919) % 100 < KNOWN_SHARE * 100;
    const target = isKnown ? (i * 104_729) % known : offset + i;
    const value: LinkMsg = { url: url(target), source_url: url(offset + Math.floor(i / 25)), depth: 2, discovered_at: 1, is_seed: false };
    return { topic: 'links', partition: 0, offset: i, key: 'k', value, timestamp: 0 };
  });
}

/** One Redis round trip per link: the wrapped set is asked one URL at a time. */
class PerLink implements SeenSet {
  constructor(private readonly inner: SeenSet) {}
  async check(urls: readonly string[]): Promise<boolean[]> {
    const out: boolean[] = [];
    for (const u of urls) out.push((await this.inner.check([u]))[0]);
    return out;
  }
  async add(urls: readonly string[]): Promise<void> {
    for (const u of urls) await this.inner.add([u]);
  }
}

async function runBatched(stage: Stage, recs: InRecord[]): Promise<{ rate: number; forwarded: number }> {
  const t0 = process.hrtime.bigint();
  let forwarded = 0;
  for (let i = 0; i < recs.length; i += BATCH) {
    const outs = await stage.handleBatch!(recs.slice(i, i + BATCH), ctx);
    await stage.produced!(outs);
    forwarded += outs.length;
  }
  return { rate: recs.length / (Number(process.hrtime.bigint() - t0) / 1e9), forwarded };
}

async function runPerLink(stage: Stage, recs: InRecord[]): Promise<{ rate: number; forwarded: number }> {
  const t0 = process.hrtime.bigint();
  let forwarded = 0;
  for (const r of recs) {
    const outs = (await stage.handle(r, ctx)) as Awaited<ReturnType<NonNullable<Stage['handleBatch']>>>;
    await stage.produced!(outs);
    forwarded += outs.length;
  }
  return { rate: recs.length / (Number(process.hrtime.bigint() - t0) / 1e9), forwarded };
}

async function main(): Promise<void> {
  const params = bloomParams(10_000_000, 0.01);
  await withRedisSeenSet('seen', params, async (redis) => {
    const memory = new MemoryBloom(params);
    const known = 200_000;
    const knownUrls = Array.from({ length: known }, (_, i) => url(i));
    for (let i = 0; i < known; i += 10_000) await redis.add(knownUrls.slice(i, i + 10_000));
    await memory.add(knownUrls);
    const opts = { maxDepth: 16, scope: new Set<string>() };
    const rows: Array<[string, number, number, number]> = [];
    const per = await runPerLink(seenTestStage(new PerLink(redis), opts), links(PER_LINK, known, 10_000_000));
    rows.push(['per-link (Redis round trip per link)', PER_LINK, per.rate, per.forwarded]);
    const bat = await runBatched(seenTestStage(redis, opts), links(BATCHED, known, 20_000_000));
    rows.push([`batched (${BATCH} links per round trip)`, BATCHED, bat.rate, bat.forwarded]);
    const mem = await runBatched(seenTestStage(memory, opts), links(BATCHED, known, 30_000_000));
    rows.push([`memory (embedded, ${BATCH} per batch)`, BATCHED, mem.rate, mem.forwarded]);
    process.stdout.write(`seen-test, ${KNOWN_SHARE * 100}% of links already seen; filter n=${params.n} p=${params.p} k=${params.k}\n`);
    for (const [name, n, rate, fwd] of rows) {
      process.stdout.write(`  ${name.padEnd(40)} ${String(n).padStart(8)} links  ${rate.toFixed(0).padStart(8)} links/s  (${fwd} forwarded)\n`);
    }
    process.stdout.write(`  batched / per-link: ${(bat.rate / per.rate).toFixed(1)}x; target >= 50,000 links/s batched: ${bat.rate >= 50_000 ? 'met' : 'NOT met'}\n`);
  }, log);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
