/** The benchmark's flags, parsed and checked (pure), and the Node flags `crawl` runs with. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { WebKind } from './web-server';

export type Part = 'embedded' | 'kafka' | 'peer' | 'frontier-scale' | 'crawl-run-scale';
const PARTS: readonly Part[] = ['embedded', 'kafka', 'peer', 'frontier-scale', 'crawl-run-scale'];
/** Run by default: the scale runs only when asked for (they take a while and disk). */
const DEFAULT_PARTS: readonly Part[] = ['embedded', 'kafka', 'peer'];

export interface BenchArgs {
  only: Part[];
  /** Whether --only was given (a part named there that cannot run is an error, not a skip). */
  onlyGiven?: boolean;
  hosts: number;
  /** Whether --hosts was given (frontier-scale's web then has that many hosts; otherwise min(1M, N/50)). */
  hostsGiven?: boolean;
  latencies: number[];
  /** Seconds each contender crawls. */
  secs: number;
  /** Seconds after the first page that the sustained figures leave out (the crawl's start). */
  warmupSecs: number;
  maxPages?: number;
  /** Fetches in flight for the peer (matches kcrawl's default fetch concurrency). */
  concurrency: number;
  /** Folder for `node --cpu-prof` profiles of the kcrawl processes. */
  profile?: string;
  json?: string;
  /** Kafka mode's processes, each a list of processors (`crawl process <names>`). */
  kafkaProcs: string[][];
  /** Node flags added after the launcher's for every kcrawl process (experiments: `--node-flags "--v8-pool-size=1"`). */
  nodeFlags: string[];
  /** Folder to write each embedded run's stdout to (`--trace-gc` output: `--node-flags "--trace-gc"`). */
  crawlerStdout?: string;
  /** frontier-scale: URLs to take in, and seconds of leasing measured with them in the table. */
  urls: number;
  leaseSecs: number;
  /** frontier-scale: partitions the one frontier process owns, each with its own store (8, the product's default). */
  partitions: number;
  /** frontier-scale: keep the run's folder here (a journal to rebuild from again: --rebuild-only). */
  keep?: string;
  /** frontier-scale: only the store-deleted rebuild, from the journal a kept run left in --keep. */
  rebuildOnly?: boolean;
  /** frontier-scale: only restarts after kill -9 on the store and journal a kept run left in --keep (nothing deleted). */
  restartOnly?: boolean;
  /** crawl-run-scale: seed URLs in the seeds file (over --hosts hosts; crawls --secs before its kill -9). */
  seeds: number;
  /** The web served: real pages (bench/real-web.ts, every headline figure) or lorem ipsum (a micro-benchmark). */
  web: WebKind;
  /** Hosts the per-stage CPU pass (bench/stage-cpu.ts) starts from; 0 skips it. */
  stageHosts: number;
}

export const STAGE_NAMES = ['seen-test', 'frontier', 'fetch', 'parse', 'handoff'] as const;
/** How Kafka mode is deployed in the bench unless --kafka-procs says otherwise. */
export const DEFAULT_KAFKA_PROCS = 'parse,handoff,seen-test/frontier,fetch';

export const USAGE = `usage: npm run bench -- [flags]   (or node dist/bench/run.js [flags])
  --only embedded,kafka,peer   contenders to run (all three by default; kafka needs the stack's env)
  --web real|lorem             the web served: real pages (default; shared/corpus/realpages made
                               distinct per page) or the lorem-ipsum micro-benchmark (50 KiB pages)
  --hosts N                    hosts of the web (5000); frontier-scale: hosts of its web (default min(1000000, N/50))
  --latency MS[,MS…]           response times to run at (0,200)
  --secs S                     seconds each contender crawls (20)
  --warmup S                   seconds after the first page left out of the sustained figures (15)
  --max-pages N                stop a contender after N pages
  --concurrency N              the peer's fetches in flight (256)
  --profile DIR                write node --cpu-prof profiles of kcrawl's processes to DIR
  --json FILE                  also write the results as JSON
  --kafka-procs SPEC           Kafka mode's processes, e.g. ${DEFAULT_KAFKA_PROCS}
  --node-flags "FLAGS"         Node/V8 flags added to every kcrawl process
  --crawler-stdout DIR         write each embedded run's stdout to DIR/embedded-<latency>.stdout (e.g. --trace-gc's lines)
  --stages N                   per-stage CPU a page over N hosts' pages before the contenders (64; 0: skip)
  --urls N                     frontier-scale: distinct URLs into one frontier (1000000; the acceptance run is 50000000)
  --lease-secs S               frontier-scale: seconds of leasing measured with the table full (30)
  --partitions P               frontier-scale: partitions the frontier process owns, a store each (8, as crawl run and Kafka mode)
  --keep DIR                   frontier-scale: keep the run's folder (its journal) in DIR
  --rebuild-only               frontier-scale: only delete the store and rebuild it from DIR's journal (needs --keep)
  --restart-only               frontier-scale: only restarts on DIR's kept store and journal, deleting nothing (needs --keep):
                               a process leases for a few seconds (leases in flight, memtable and WAL not flushed), kill -9,
                               then the measured restart: first lease after start, store current, main-thread CPU, peak RSS
  --seeds N                    crawl-run-scale: seeds in the file (1000000; the acceptance run is 20000000 over --hosts 100000)`;

/** "a,b/c,d" -> [[a, b], [c, d]]: every stage exactly once. */
export function parseKafkaProcs(v: string): string[][] {
  const procs = v.split('/').map((p) => p.split(',').map((s) => s.trim()).filter(Boolean));
  const all = procs.flat();
  for (const n of all) if (!(STAGE_NAMES as readonly string[]).includes(n)) throw new Error(`--kafka-procs: unknown stage ${n} (${STAGE_NAMES.join(', ')})`);
  const missing = STAGE_NAMES.filter((n) => !all.includes(n));
  if (procs.some((p) => p.length === 0) || missing.length > 0 || new Set(all).size !== all.length) {
    throw new Error(`--kafka-procs ${v}: expected every stage exactly once, processes separated by '/', stages by ',' (e.g. ${DEFAULT_KAFKA_PROCS})`);
  }
  return procs;
}

const wholeNumber = (flag: string, v: string | undefined, min: number): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag} ${v ?? ''}: expected a whole number >= ${min}`);
  return n;
};

/** A standalone benchmark's numeric flag `--name N` (the politeness and memory scripts), or `dflt` when it is not given. */
export function numberFlag(name: string, dflt: number, argv: readonly string[] = process.argv): number {
  const i = argv.indexOf(`--${name}`);
  return i < 0 ? dflt : Number(argv[i + 1]);
}

export function parseBenchArgs(argv: readonly string[]): BenchArgs {
  const a: BenchArgs = { only: [...DEFAULT_PARTS], urls: 1_000_000, leaseSecs: 30, partitions: 8, seeds: 1_000_000, hosts: 5000, latencies: [0, 200], secs: 20, warmupSecs: 15, concurrency: 256, kafkaProcs: parseKafkaProcs(DEFAULT_KAFKA_PROCS), nodeFlags: [], web: 'real', stageHosts: 64 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i]!;
    const v = argv[i + 1];
    i++;
    switch (flag) {
      case '--only': {
        const parts = (v ?? '').split(',').filter(Boolean);
        for (const p of parts) if (!PARTS.includes(p as Part)) throw new Error(`--only ${p}: expected ${PARTS.join(', ')} (comma-separated)`);
        a.only = parts as Part[];
        a.onlyGiven = true;
        break;
      }
      case '--hosts':
        a.hosts = wholeNumber(flag, v, 1);
        a.hostsGiven = true;
        if (a.hosts > 20 * 256 * 250) throw new Error('--hosts: at most 1,280,000 (127.1.0.1 to 127.20.255.250)');
        break;
      case '--latency':
        a.latencies = (v ?? '').split(',').map((s) => wholeNumber(flag, s, 0));
        break;
      case '--secs': a.secs = wholeNumber(flag, v, 1); break;
      case '--warmup': a.warmupSecs = wholeNumber(flag, v, 0); break;
      case '--max-pages': a.maxPages = wholeNumber(flag, v, 1); break;
      case '--concurrency': a.concurrency = wholeNumber(flag, v, 1); break;
      case '--profile': a.profile = v; break;
      case '--web':
        if (v !== 'real' && v !== 'lorem') throw new Error(`--web ${v ?? ''}: expected real or lorem`);
        a.web = v;
        break;
      case '--stages': a.stageHosts = wholeNumber(flag, v, 0); break;
      case '--json': a.json = v; break;
      case '--crawler-stdout':
        if (!v || v.startsWith('--')) throw new Error('--crawler-stdout: expected a folder');
        a.crawlerStdout = v;
        break;
      case '--kafka-procs': a.kafkaProcs = parseKafkaProcs(v ?? ''); break;
      case '--urls': a.urls = wholeNumber(flag, v, 1000); break;
      case '--lease-secs': a.leaseSecs = wholeNumber(flag, v, 3); break;
      case '--partitions': a.partitions = wholeNumber(flag, v, 1); break;
      case '--keep': a.keep = v; break;
      case '--rebuild-only': a.rebuildOnly = true; i--; break;
      case '--restart-only': a.restartOnly = true; i--; break;
      case '--seeds': a.seeds = wholeNumber(flag, v, 1); break;
      case '--node-flags': {
        const flags = (v ?? '').split(/\s+/).filter(Boolean);
        for (const f of flags) if (!f.startsWith('--')) throw new Error(`--node-flags ${f}: expected Node or V8 flags, each starting with --`);
        a.nodeFlags = flags;
        break;
      }
      default: throw new Error(`unknown flag ${flag}\n${USAGE}`);
    }
  }
  if (a.rebuildOnly && !a.keep) throw new Error('--rebuild-only: needs --keep DIR, the folder of a kept frontier-scale run');
  if (a.restartOnly && !a.keep) throw new Error('--restart-only: needs --keep DIR, the folder of a kept frontier-scale run');
  if (a.restartOnly && a.rebuildOnly) throw new Error('--restart-only and --rebuild-only: one at a time');
  return a;
}

/**
 * Whether Kafka mode can run, given CRAWL_KAFKA_BROKERS: the parts to run and, when Kafka mode
 * is left out, the note the report prints with its table (a skip must not pass for a result).
 * Kafka mode asked for by name (--only) without the stack's variables is an error, raised
 * before minutes of other runs.
 */
export function kafkaPlan(a: Pick<BenchArgs, 'only' | 'onlyGiven'>, brokers: string | undefined): { only: Part[]; note?: string } {
  if (!a.only.includes('kafka') || brokers) return { only: a.only };
  const start = 'start the local stack and export its variables: `bash stack/stack.sh up && eval "$(bash stack/stack.sh env)"`';
  if (a.onlyGiven) throw new Error(`--only kafka: CRAWL_KAFKA_BROKERS is not set; ${start}`);
  return { only: a.only.filter((p) => p !== 'kafka'), note: `Kafka mode: NOT RUN (CRAWL_KAFKA_BROKERS is not set); to include it, ${start}, then run again` };
}

/** A launcher line's shell part before `exec node`, and the flags after it (null: no launcher line). */
function launcherLine(script: string): { shell: string; flags: string } | null {
  const [first, second] = readFileSync(script, 'utf8').split('\n', 2);
  if (first !== '#!/bin/sh') return null;
  const m = /^':' \/\/;(.*?)\bexec node\b(.*?)"\$0" "\$@"$/.exec(second ?? '');
  return m ? { shell: m[1], flags: m[2] } : null;
}

function runInSh(script: string, command: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const r = spawnSync('/bin/sh', ['-c', command], { encoding: 'utf8', env });
  if (r.status !== 0) throw new Error(`${script}: its launcher line failed in sh (${r.status}): ${r.stderr.trim()}`);
  return r.stdout.split('\n');
}

/**
 * The Node flags a script's launcher line gives node: what `npx crawl` runs with. bin/crawl.js
 * starts `#!/bin/sh` and then `':' //; <shell> exec node <flags> "$0" "$@"`, where the flags may
 * use what the shell before them set (the helper threads come from the core count). The line
 * is run in sh with `exec node` printing its arguments instead, so the bench starts
 * `node <flags> bin/crawl.js` with the flags users get on this machine.
 */
export function launcherNodeFlags(script: string): string[] {
  const l = launcherLine(script);
  if (!l) return [];
  return runInSh(script, `${l.shell} printf '%s\\n' ${l.flags}`).filter(Boolean);
}

/**
 * The variables a script's launcher line exports (`export NAME=...`) as they come out in this
 * environment, `env` (a default the user's own value overrides: MALLOC_ARENA_MAX), for a bench that
 * starts node itself.
 */
export function launcherEnv(script: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const l = launcherLine(script);
  const names = l ? [...l.shell.matchAll(/\bexport (\w+)=/g)].map((m) => m[1]) : [];
  if (!l || names.length === 0) return {};
  const values = runInSh(script, `${l.shell} printf '%s\\n' ${names.map((n) => `"$${n}"`).join(' ')}`, env);
  // A variable the line exports only on some machines (LD_PRELOAD, where jemalloc is installed) comes out empty elsewhere.
  return Object.fromEntries(names.map((n, i): [string, string] => [n, values[i]]).filter(([, v]) => v !== ''));
}
