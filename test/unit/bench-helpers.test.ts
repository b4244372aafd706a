/**
 * The benchmark's pure helpers: the synthetic web's shape, the server-side politeness judge,
 * /proc parsing, flags, the report's ratios and limits; and produce()'s request chunking.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { kafkaPlan, parseBenchArgs, launcherEnv, launcherNodeFlags, numberFlag } from '../../bench/args';
import { cpuMsBetween, parsePeakRssBytes, parseStatChildrenCpuMs, parseStatCpuMs, parseStatKernel, parseStatName, parseStealMs, stealMsBetween } from '../../bench/proc-stat';
import { barePass, median, parserFloorMs, processCpuMs } from '../../bench/parser-floor';
import { cpuMsPerPage, floorMultiple, kcrawlHostPeriodMs, machineShare, markdownTable, shareOfOwnZeroLatency, sustainedTable, throughputLimit, webCpuMsPerPage, type RunResult } from '../../bench/report';
import { growthBetween, pagesBetweenSeconds, stealShare, sustainedBounds, valueAt } from '../../bench/sustained';
import { fillerHtml, hostAddress, hostIndexOfName, hostName, LINKS_PER_PAGE, PAGE_BYTES, pageHtml, pageLinks, PolitenessTracker } from '../../bench/synthetic-web';
import { chunkByBytes, type RawRecord } from '../../connectors/kafka';
import { JEMALLOC } from '../support/jemalloc';

describe('synthetic web', () => {
  it('gives thousands of hosts distinct addresses within 127.1.0.0 to 127.20.255.255', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      const ip = hostAddress(i);
      const [a, b, c, d] = ip.split('.').map(Number);
      expect([a, b >= 1 && b <= 20, c >= 0 && c <= 255, d >= 1 && d <= 250]).toEqual([127, true, true, true]);
      seen.add(ip);
    }
    expect(seen.size).toBe(20_000);
    expect(hostAddress(0)).toBe('127.1.0.1');
    expect(() => hostAddress(20 * 256 * 250)).toThrow(RangeError);
  });

  it('names hosts as host<i>.test and maps the names back', () => {
    expect(hostName(42)).toBe('host42.test');
    expect(hostIndexOfName('host42.test')).toBe(42);
    expect(hostIndexOfName('example.test')).toBe(-1);
  });

  it('serves 50 KiB pages with 25 links, 20 to their own host, the rest within the web', () => {
    const filler = fillerHtml(PAGE_BYTES);
    const html = pageHtml(7, 3, 5000, 8080, filler);
    expect(html.length).toBe(PAGE_BYTES);
    const hrefs = [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!);
    expect(hrefs).toHaveLength(LINKS_PER_PAGE);
    expect(hrefs.filter((h) => h.startsWith('/p/'))).toHaveLength(20);
    const links = pageLinks(7, 3, 5000);
    expect(links.every(([h, n]) => h >= 0 && h < 5000 && n >= 0)).toBe(true);
    expect(pageHtml(7, 3, 5000, 8080, filler, true)).toMatch(/http:\/\/host\d+\.test:8080\/p\//);
  });
});

describe('PolitenessTracker', () => {
  it('counts gaps below 1 s per host (with the clock tolerance) and overlapping requests', () => {
    const t = new PolitenessTracker(1000, 5);
    t.arrive('a', 0, false)();
    t.arrive('b', 10, true)();
    t.arrive('a', 996, true)(); // within tolerance
    const open = t.arrive('a', 1500, true); // 504 ms: a violation, left open
    t.arrive('a', 2600, true)(); // overlaps the open one
    open();
    const s = t.summary();
    expect(s).toMatchObject({ requests: 5, pages: 4, hosts: 2, gapViolations: 1, concurrencyViolations: 1, minGapMs: 504, firstPageAt: 10, lastPageAt: 2600 });
    // Pages per whole second from the first page (10 ms): [10, 1010) has two, [1010, 2010) one, [2010, 3010) one.
    expect(s.pagesBySecond).toEqual([2, 1, 1]);
  });

  it('counts pages per second since the first page, seconds without any as 0', () => {
    const t = new PolitenessTracker(1000, 5);
    for (const at of [5000, 5100, 5999, 8000, 8001]) t.arrive(`h${at}`, at, true)();
    t.arrive('robots', 9500, false)();
    expect(t.summary().pagesBySecond).toEqual([3, 0, 0, 2]);
  });
});

describe('sustained window', () => {
  const pts = [{ at: 1000, value: 0 }, { at: 2000, value: 100 }, { at: 4000, value: 500 }];
  it('reads a running count between samples by linear interpolation, clamped at the ends', () => {
    expect(valueAt(pts, 500)).toBe(0);
    expect(valueAt(pts, 1500)).toBe(50);
    expect(valueAt(pts, 3000)).toBe(300);
    expect(valueAt(pts, 9000)).toBe(500);
    expect(valueAt([], 1)).toBe(0);
    expect(growthBetween(pts, 1500, 3000)).toBe(250);
  });

  it('counts pages per second between offsets, partly covered seconds in proportion', () => {
    const bySecond = [10, 20, 30, 40];
    expect(pagesBetweenSeconds(bySecond, 0, 4)).toBe(100);
    expect(pagesBetweenSeconds(bySecond, 1, 3)).toBe(50);
    expect(pagesBetweenSeconds(bySecond, 0.5, 2.5)).toBe(5 + 20 + 15);
    expect(pagesBetweenSeconds(bySecond, 3.5, 10)).toBe(20);
  });

  it('starts after the warm-up and ends at the last page; none for a run under twice the warm-up', () => {
    expect(sustainedBounds(10_000, 70_000, 15)).toEqual({ from: 25_000, to: 70_000 });
    expect(sustainedBounds(10_000, 39_000, 15)).toBeNull();
    expect(sustainedBounds(0, 70_000, 15)).toBeNull();
  });

  it('reads each process\'s CPU in a window off the polls, processes added later from their first poll', () => {
    const series = [
      { at: 0, cpuMs: new Map([[1, 0]]) },
      { at: 100, cpuMs: new Map([[1, 50], [2, 0]]) },
      { at: 200, cpuMs: new Map([[1, 150], [2, 100]]) },
    ];
    // pid 1: 25 -> 100 (75); pid 2: 0 (clamped to its first poll) -> 50.
    expect(cpuMsBetween(series, [1], 50, 150)).toBe(75);
    expect(cpuMsBetween(series, [2], 50, 150)).toBe(50);
    expect(cpuMsBetween(series, [1, 2], 50, 150)).toBe(125);
    expect(cpuMsBetween(series, [3], 0, 200)).toBe(0);
  });

  it('reads the machine\'s steal time off /proc/stat and the polls', () => {
    const procStat = 'cpu  58807 0 5999 886268 789 0 958 17065 0 0\ncpu0 29000 0 3000 443000 400 0 479 8500 0 0\nintr 1\n';
    expect(parseStealMs(procStat)).toBe(170_650);
    expect(parseStealMs('intr 1\n')).toBe(0);
    const series = [
      { at: 0, cpuMs: new Map<number, number>(), stealMs: 1000 },
      { at: 100, cpuMs: new Map<number, number>(), stealMs: 1020 },
      { at: 200, cpuMs: new Map<number, number>(), stealMs: 1060 },
    ];
    expect(stealMsBetween(series, 50, 150)).toBe(30);
    expect(stealMsBetween([{ at: 0, cpuMs: new Map<number, number>() }], 0, 100)).toBe(0);
    expect(stealShare({ fromSec: 15, secs: 10, pages: 1, cpuMs: 1, webCpuMs: 0, stealMs: 2000 }, 2)).toBe(0.1);
    expect(stealShare({ fromSec: 15, secs: 10, pages: 1, cpuMs: 1, webCpuMs: 0 }, 2)).toBeNull();
  });

  it('prints sustained pages/s and CPU per page against the peer, the limit and the machine', () => {
    const base: RunResult = {
      contender: 'peer', latencyMs: 0, hosts: 10, pages: 100, handedOff: 100, windowSecs: 10, cpuMs: 1000, serviceCpuMs: 0, peakRssBytes: 0,
      gapViolations: 0, concurrencyViolations: 0, minGapMs: 1000, limitPagesPerSec: null,
      sustained: { fromSec: 15, secs: 40, pages: 400, cpuMs: 4000, webCpuMs: 400, limitPagesPerSec: 200 },
    };
    const ours: RunResult = {
      ...base, contender: 'embedded', parserFloorMs: 1,
      // The hypervisor took 8 s of the window's 80 s of core time (10%).
      sustained: { fromSec: 15, secs: 40, pages: 32_000, cpuMs: 64_000, webCpuMs: 6_400, limitPagesPerSec: 1000, stealMs: 8000, limitNetOfStealPagesPerSec: 900 },
    };
    const short: RunResult = { ...base, contender: 'kafka', sustained: undefined };
    const rows = sustainedTable([ours, base, short], 2).split('\n');
    const head = rows[0]!.split('|').map((c) => c.trim());
    const row = rows[2]!.split('|').map((c) => c.trim());
    const cell = (name: string, col: string[] = row): string => col[head.indexOf(name)]!;
    expect(cell('window')).toBe('15–55 s');
    expect(cell('pages/s')).toBe('800.0');
    expect(rows[2]!.split('|')[6]!.trim()).toBe('80.00×'); // pages/s against the peer's 10
    expect(cell('CPU ms/page')).toBe('2.00');
    expect(cell('× parser floor')).toBe('2.00×');
    expect(cell('web server CPU ms/page')).toBe('0.20');
    expect(cell('% of limit')).toBe('80%');
    // 2 cores / (2.0 + 0.2 ms) = 909 pages/s at most: 800 is 88%.
    expect(cell('% of machine')).toBe('88%');
    expect(cell('steal')).toBe('10%');
    expect(cell('% of limit, steal aside')).toBe('89%');
    // A result without steal figures (older JSON) shows none.
    expect(sustainedTable([base], 2).split('\n')[2]!.split('|').map((c) => c.trim()).slice(-3, -1)).toEqual(['–', '–']);
    expect(rows[4]).toBe('| kcrawl Kafka mode | 0 ms | – | – | – | | – | – | | – | – | – | – | – |');
    // No fetched count: no note under the table.
    expect(sustainedTable([ours, base, short], 2)).not.toMatch(/fetched in the window/);
  });

  it('says under the table how many pages fetch took in the window beside those parsed', () => {
    const run: RunResult = {
      contender: 'embedded', latencyMs: 0, hosts: 10, pages: 100, handedOff: 100, windowSecs: 10, cpuMs: 1000, serviceCpuMs: 0, peakRssBytes: 0,
      gapViolations: 0, concurrencyViolations: 0, minGapMs: 1000, limitPagesPerSec: null,
      sustained: { fromSec: 15, secs: 40, pages: 5943.6, fetched: 7076.2, cpuMs: 60_000, webCpuMs: 400 },
    };
    expect(sustainedTable([run], 2).split('\n').pop()).toBe(
      'Fetched and parsed in the window (fetch ahead of parse adds its CPU, not its pages): kcrawl embedded 0 ms: 7076 pages fetched in the window, 5944 parsed.',
    );
  });
});

describe('proc parsing', () => {
  // A command name with spaces and a parenthesis, as /proc allows.
  const stat = '1234 (node (x) y) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 30 20 20 0 11 0 100 1000 100';
  it('reads stime in ms and the major page faults', () => {
    // minflt 100, cminflt 7, majflt 42, cmajflt 9, utime 250, stime 50
    expect(parseStatKernel('1234 (node (x) y) S 1 1234 1234 0 -1 4194304 100 7 42 9 250 50 30 20 20 0 11 0 100 1000 100')).toEqual({ systemMs: 500, majorFaults: 42 });
  });
  it('reads utime+stime and cutime+cstime in ms', () => {
    expect(parseStatCpuMs(stat)).toBe(3000);
    expect(parseStatChildrenCpuMs(stat)).toBe(500);
  });
  it('reads the command name, spaces and parentheses in it', () => {
    expect(parseStatName(stat)).toBe('node (x) y');
    expect(parseStatName('77 (rocksdb:low) S 1')).toBe('rocksdb:low');
  });
  it('reads VmHWM as bytes', () => {
    expect(parsePeakRssBytes('Name:\tnode\nVmPeak:\t  999 kB\nVmHWM:\t  2048 kB\n')).toBe(2048 * 1024);
    expect(parsePeakRssBytes('Name:\tnode\n')).toBe(0);
  });
});

describe('bench flags', () => {
  it('numberFlag: a standalone script\'s `--name N`, or its default when not given', () => {
    const argv = ['node', 'x.js', '--plain', '12', '--pages', '2.5'];
    expect(numberFlag('plain', 3, argv)).toBe(12);
    expect(numberFlag('pages', 1, argv)).toBe(2.5);
    expect(numberFlag('delayed', 4, argv)).toBe(4);
  });
  it('defaults to every part at 0 and 200 ms on 5,000 hosts', () => {
    expect(parseBenchArgs([])).toMatchObject({ only: ['embedded', 'kafka', 'peer'], hosts: 5000, latencies: [0, 200] });
  });
  it('parses parts, hosts and latencies, and rejects what it does not know', () => {
    expect(parseBenchArgs(['--only', 'embedded', '--hosts', '100', '--latency', '0'])).toMatchObject({ only: ['embedded'], hosts: 100, latencies: [0] });
    expect(() => parseBenchArgs(['--only', 'scrapy'])).toThrow(/--only scrapy/);
    expect(() => parseBenchArgs(['--hosts', '0'])).toThrow(/--hosts/);
    expect(() => parseBenchArgs(['--fast'])).toThrow(/unknown flag --fast\n.*--warmup S/s);
    expect(parseBenchArgs([]).warmupSecs).toBe(15);
    // Real pages unless the lorem-ipsum micro-benchmark is asked for by name.
    expect(parseBenchArgs([])).toMatchObject({ web: 'real', stageHosts: 64 });
    expect(parseBenchArgs(['--web', 'lorem', '--stages', '0'])).toMatchObject({ web: 'lorem', stageHosts: 0 });
    expect(() => parseBenchArgs(['--web', 'fake'])).toThrow(/--web fake: expected real or lorem/);
    // frontier-scale: eight partitions unless asked (the product's default), at least one.
    expect(parseBenchArgs(['--only', 'frontier-scale'])).toMatchObject({ urls: 1_000_000, partitions: 8 });
    expect(parseBenchArgs(['--only', 'frontier-scale', '--partitions', '1'])).toMatchObject({ partitions: 1 });
    expect(() => parseBenchArgs(['--partitions', '0'])).toThrow(/--partitions/);
    // frontier-scale's rebuild alone, on the journal of a kept run.
    expect(parseBenchArgs(['--only', 'frontier-scale', '--keep', '/tmp/fs', '--rebuild-only', '--urls', '5000'])).toMatchObject({ keep: '/tmp/fs', rebuildOnly: true, urls: 5000 });
    expect(() => parseBenchArgs(['--rebuild-only'])).toThrow(/--rebuild-only: needs --keep DIR/);
    // frontier-scale's restarts alone, on a kept run's store and journal; --hosts given or not (the web's default then).
    expect(parseBenchArgs(['--only', 'frontier-scale', '--keep', '/tmp/fs', '--restart-only', '--hosts', '1000000'])).toMatchObject({ keep: '/tmp/fs', restartOnly: true, hosts: 1_000_000, hostsGiven: true });
    expect(parseBenchArgs(['--only', 'frontier-scale']).hostsGiven).toBeUndefined();
    expect(() => parseBenchArgs(['--restart-only'])).toThrow(/--restart-only: needs --keep DIR/);
    expect(() => parseBenchArgs(['--keep', '/tmp/fs', '--restart-only', '--rebuild-only'])).toThrow(/one at a time/);
    expect(parseBenchArgs(['--warmup', '0']).warmupSecs).toBe(0);
    expect(() => parseBenchArgs(['--warmup', '-1'])).toThrow(/--warmup/);
    expect(parseBenchArgs([]).kafkaProcs).toEqual([['parse', 'handoff', 'seen-test'], ['frontier', 'fetch']]);
    expect(parseBenchArgs(['--kafka-procs', 'parse,seen-test/frontier,fetch,handoff']).kafkaProcs).toEqual([['parse', 'seen-test'], ['frontier', 'fetch', 'handoff']]);
    expect(() => parseBenchArgs(['--kafka-procs', 'parse/fetch'])).toThrow(/every stage exactly once/);
    expect(() => parseBenchArgs(['--kafka-procs', 'parse,parse/seen-test,frontier,fetch,handoff'])).toThrow(/every stage exactly once/);
    expect(() => parseBenchArgs(['--kafka-procs', 'parse/seen-test,frontier,fetch,handoff,index'])).toThrow(/unknown stage index/);
  });
  it('leaves Kafka mode out with a note when the stack is not set, and fails when --only names it', () => {
    const dflt = parseBenchArgs([]);
    expect(kafkaPlan(dflt, '127.0.0.1:19092')).toEqual({ only: ['embedded', 'kafka', 'peer'] });
    const skipped = kafkaPlan(dflt, undefined);
    expect(skipped.only).toEqual(['embedded', 'peer']);
    expect(skipped.note).toMatch(/Kafka mode: NOT RUN \(CRAWL_KAFKA_BROKERS is not set\).*stack\/stack\.sh env/);
    expect(() => kafkaPlan(parseBenchArgs(['--only', 'kafka,peer']), undefined)).toThrow(/--only kafka: CRAWL_KAFKA_BROKERS is not set/);
    expect(kafkaPlan(parseBenchArgs(['--only', 'embedded']), undefined)).toEqual({ only: ['embedded'] });
  });

  it('takes extra Node flags for the crawler processes, and nothing that is not a flag', () => {
    expect(parseBenchArgs([]).nodeFlags).toEqual([]);
    expect(parseBenchArgs(['--node-flags', ' --v8-pool-size=1  --no-parallel-scavenge ']).nodeFlags).toEqual(['--v8-pool-size=1', '--no-parallel-scavenge']);
    expect(() => parseBenchArgs(['--node-flags', '--v8-pool-size=1 rm'])).toThrow(/--node-flags rm/);
  });

  it('takes a folder for the embedded runs\' stdout (--trace-gc lines), and refuses a missing one', () => {
    expect(parseBenchArgs([]).crawlerStdout).toBeUndefined();
    expect(parseBenchArgs(['--crawler-stdout', '/tmp/gc', '--secs', '5'])).toMatchObject({ crawlerStdout: '/tmp/gc', secs: 5 });
    expect(() => parseBenchArgs(['--crawler-stdout'])).toThrow(/--crawler-stdout: expected a folder/);
    expect(() => parseBenchArgs(['--crawler-stdout', '--secs', '5'])).toThrow(/--crawler-stdout: expected a folder/);
  });
});

describe('crawler node flags', () => {
  const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');
  it('reads the flags of the sh launcher line, and none from a plain node script', () => {
    const dir = mkdtempSync(join(tmpdir(), 'launcher-'));
    writeFileSync(join(dir, 'a.js'), `#!/bin/sh\n':' //; exec node --max-semi-space-size=64 --stack-size=2000 "$0" "$@"\n1;\n`);
    writeFileSync(join(dir, 'b.js'), '#!/usr/bin/env node\n1;\n');
    expect(launcherNodeFlags(join(dir, 'a.js'))).toEqual(['--max-semi-space-size=64', '--stack-size=2000']);
    expect(launcherNodeFlags(join(dir, 'b.js'))).toEqual([]);
    // Flags made by the shell before them, as sh would give them to node.
    writeFileSync(join(dir, 'c.js'), `#!/bin/sh\n':' //; n=3; [ "$n" -le 2 ] || n=2; exec node --a=$((n - 1)) --b="x y" "$0" "$@"\n1;\n`);
    expect(launcherNodeFlags(join(dir, 'c.js'))).toEqual(['--a=1', '--b=x y']);
    writeFileSync(join(dir, 'd.js'), `#!/bin/sh\n':' //; exit 3; exec node --a "$0" "$@"\n1;\n`);
    expect(() => launcherNodeFlags(join(dir, 'd.js'))).toThrow(/launcher line failed in sh \(3\)/);
  });
  it('reads the variables the launcher line exports, as this environment makes them (a default the caller overrides)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'launcher-'));
    writeFileSync(join(dir, 'e.js'), `#!/bin/sh\n':' //; n=2; export LAUNCH_TEST_A="\${LAUNCH_TEST_A:-2}"; export LAUNCH_TEST_B=x$n; exec node --a "$0" "$@"\n1;\n`);
    writeFileSync(join(dir, 'f.js'), `#!/bin/sh\n':' //; exec node --a "$0" "$@"\n1;\n`);
    expect(launcherEnv(join(dir, 'e.js'))).toEqual({ LAUNCH_TEST_A: '2', LAUNCH_TEST_B: 'x2' });
    expect(launcherEnv(join(dir, 'f.js'))).toEqual({});
    expect(launcherEnv(join(dir, 'e.js'), { ...process.env, LAUNCH_TEST_A: '7' })).toEqual({ LAUNCH_TEST_A: '7', LAUNCH_TEST_B: 'x2' });
  });
  it('bin/crawl.js caps glibc malloc at two arenas and maps blocks of 1 MiB and more on their own, unless the environment says otherwise', () => {
    const env = { ...process.env };
    delete env.MALLOC_ARENA_MAX;
    delete env.MALLOC_MMAP_THRESHOLD_;
    delete env.LD_PRELOAD;
    delete env.CRAWL_MALLOC;
    // jemalloc is preloaded where the machine has it (bin/crawl.js), and not with CRAWL_MALLOC=glibc.
    expect(launcherEnv(CLI, env)).toEqual({ MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '1048576', ...(JEMALLOC ? { LD_PRELOAD: JEMALLOC } : {}) });
    expect(launcherEnv(CLI, { ...env, CRAWL_MALLOC: 'glibc', MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '131072' })).toEqual({ MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '131072' });
  });
  it('bin/crawl.js runs with a 32 MiB young generation and one V8 helper fewer than the cores (at most 4), and node accepts its flags', () => {
    const flags = launcherNodeFlags(CLI);
    const helpers = Math.min(4, Math.max(1, availableParallelism() - 1));
    expect(flags).toEqual(['--max-semi-space-size=32', '--heap-growing-percent=50', `--v8-pool-size=${helpers}`]);
    const r = spawnSync(process.execPath, [...flags, '-e', 'process.stdout.write(String(process.execArgv))'], { encoding: 'utf8' });
    expect(r.status).toBe(0);
    expect(r.stdout).toBe(`--max-semi-space-size=32,--heap-growing-percent=50,--v8-pool-size=${helpers},-e,process.stdout.write(String(process.execArgv))`);
  });
});

describe('report', () => {
  it('takes the smaller of the CPU and politeness limits', () => {
    expect(throughputLimit(2, 2, 5000, 1000)).toBe(1000); // CPU: 2 cores / 2 ms
    expect(throughputLimit(0.1, 2, 100, 1000)).toBe(100); // politeness: 100 hosts / 1 s
    expect(kcrawlHostPeriodMs(0)).toBe(1000);
    expect(kcrawlHostPeriodMs(200)).toBe(2200); // 10x the response time beats the 1 s minimum
  });

  it('prints ratios against the peer at the same latency', () => {
    const base: RunResult = {
      contender: 'peer', latencyMs: 0, hosts: 10, pages: 100, handedOff: 100, windowSecs: 10, cpuMs: 1000, serviceCpuMs: 0, peakRssBytes: 0,
      gapViolations: 0, concurrencyViolations: 0, minGapMs: 1000, limitPagesPerSec: null,
    };
    const ours: RunResult = { ...base, contender: 'embedded', pages: 400, handedOff: 400, cpuMs: 800 };
    const table = markdownTable([ours, base]);
    const row = table.split('\n').find((l) => l.startsWith('| kcrawl embedded'))!;
    expect(row).toContain('| 400 | 400 | 400 | 40.0 | 4.00× | 2.00 | – | 5.00× | – |');
  });

  it('judges pages/s against what the machine can do when the web server shares its cores', () => {
    const r: RunResult = {
      contender: 'embedded', latencyMs: 0, hosts: 10, pages: 400, handedOff: 400, windowSecs: 1, cpuMs: 1200, serviceCpuMs: 0, peakRssBytes: 0,
      gapViolations: 0, concurrencyViolations: 0, minGapMs: 1000, limitPagesPerSec: null, webCpuMs: 400,
    };
    // 3 ms crawler + 1 ms server a page: 2 cores make 500 pages/s at most; 400 is 80% of that.
    expect(webCpuMsPerPage(r)).toBe(1);
    expect(machineShare(r, 2)).toBeCloseTo(0.8);
    expect(machineShare({ ...r, webCpuMs: undefined }, 2)).toBeNull();
    expect(markdownTable([r], 2).split('\n')[2]).toMatch(/\| 3\.00 \| – \|  \| 1\.00 \| .* \| 80% \| – \|$/);
  });

  it('judges a slow-response run against the same contender at 0 ms', () => {
    const zero: RunResult = {
      contender: 'kafka', latencyMs: 0, hosts: 10, pages: 400, handedOff: 400, windowSecs: 1, cpuMs: 1200, serviceCpuMs: 0, peakRssBytes: 0,
      gapViolations: 0, concurrencyViolations: 0, minGapMs: 1000, limitPagesPerSec: null, note: 'services 1.0 s CPU',
    };
    const slow: RunResult = { ...zero, latencyMs: 200, pages: 380, note: 'services 2.0 s CPU' };
    const other: RunResult = { ...zero, contender: 'embedded', latencyMs: 200, pages: 100 };
    expect(shareOfOwnZeroLatency(slow, [zero, slow, other])).toBeCloseTo(0.95);
    expect(shareOfOwnZeroLatency(zero, [zero, slow])).toBeNull();
    // No embedded run at 0 ms: nothing to compare with (the Kafka one is another contender).
    expect(shareOfOwnZeroLatency(other, [zero, slow, other])).toBeNull();
    const rows = markdownTable([zero, slow, other]).split('\n');
    expect(rows[2]).toMatch(/\| – \|$/);
    expect(rows[3]).toMatch(/\| 95% \|$/);
    expect(rows[4]).toMatch(/\| – \|$/);
  });

  it('counts CPU per page and pages/s over the pages parse finished, when it finished fewer than were fetched', () => {
    const r: RunResult = {
      contender: 'kafka', latencyMs: 0, hosts: 10, pages: 400, parsed: 200, handedOff: 150, windowSecs: 10, cpuMs: 800, serviceCpuMs: 0, peakRssBytes: 0,
      gapViolations: 0, concurrencyViolations: 0, minGapMs: 1000, limitPagesPerSec: null,
    };
    expect(cpuMsPerPage(r)).toBe(4);
    expect(cpuMsPerPage({ ...r, parsed: 500 })).toBe(2);
    // Throughput too counts the pages parse finished: 200 in 10 s.
    expect(markdownTable([r]).split('\n')[2]).toContain('| 400 | 200 | 150 | 20.0 |');
    // What parse only finished while the crawl stopped counts in CPU per page, not in pages/s.
    expect(markdownTable([{ ...r, parsedInWindow: 120 }]).split('\n')[2]).toContain('| 400 | 200 (120 by stop) | 150 | 12.0 |');
  });

  it('states CPU per page as a multiple of the parser floor measured in the same run', () => {
    const r: RunResult = {
      contender: 'embedded', latencyMs: 0, hosts: 10, pages: 400, parsed: 200, handedOff: 150, windowSecs: 10, cpuMs: 800, serviceCpuMs: 0, peakRssBytes: 0,
      gapViolations: 0, concurrencyViolations: 0, minGapMs: 1000, limitPagesPerSec: null, parserFloorMs: 1.6,
    };
    // 800 ms over the 200 pages parsed: 4 ms a page, 2.5 times a 1.6 ms floor.
    expect(floorMultiple(r)).toBeCloseTo(2.5);
    expect(floorMultiple({ ...r, parserFloorMs: undefined })).toBeNull();
    expect(floorMultiple({ ...r, parsed: 0 })).toBeNull();
    const head = markdownTable([r]).split('\n')[0]!.split('|').map((c) => c.trim());
    const row = markdownTable([r]).split('\n')[2]!.split('|').map((c) => c.trim());
    expect(row[head.indexOf('CPU ms/page')]).toBe('4.00');
    expect(row[head.indexOf('× parser floor')]).toBe('2.50×');
  });
});

describe('parser floor', () => {
  const page = pageHtml(0, 1, 100, 8080, fillerHtml(PAGE_BYTES));

  it('parses the whole page, every tag of it', () => {
    const tags = (page.match(/<[a-z]/g) ?? []).length + (page.match(/<\//g) ?? []).length;
    expect(tags).toBeGreaterThan(2 * LINKS_PER_PAGE);
    expect(barePass(page)).toBe(tags);
    expect(barePass(page + page)).toBe(2 * tags);
  });

  it('gives a time per pass (not judged: the machine is not)', () => {
    const ms = parserFloorMs(page, { warmup: 2, rounds: 3, perRound: 2 });
    expect(Number.isFinite(ms)).toBe(true);
    expect(ms).toBeGreaterThan(0);
  });

  it('reads its clock around each round and takes the median time per pass', () => {
    // A clock that moves 10, 30, 20, 90 and 40 ms over five rounds of 4 passes each.
    const steps = [10, 30, 20, 90, 40];
    let now = 0;
    let reads = 0;
    const clock = (): number => {
      reads++;
      if (reads % 2 === 0) now += steps[reads / 2 - 1]!;
      return now;
    };
    expect(parserFloorMs('<p>x</p>', { warmup: 0, rounds: 5, perRound: 4, clock })).toBe(30 / 4);
    expect(reads).toBe(10);
  });

  it('counts this process\'s CPU time by default, which only grows', () => {
    const a = processCpuMs();
    for (let i = 0; i < 5; i++) barePass(page);
    expect(processCpuMs()).toBeGreaterThan(a);
  });

  it('median takes the middle value and refuses an empty list', () => {
    expect(median([5, 1, 3])).toBe(3);
    expect(() => median([])).toThrow();
  });
});

describe('produce chunking', () => {
  const rec = (bytes: number): RawRecord => ({ topic: 't', partition: 0, key: 'k', value: Buffer.alloc(bytes) });
  it('keeps order and cuts before a chunk would pass the byte budget; a big record goes alone', () => {
    const recs = [rec(400), rec(400), rec(400), rec(5000), rec(10)];
    const chunks = chunkByBytes(recs, 1000);
    expect(chunks.map((c) => c.length)).toEqual([2, 1, 1, 1]);
    expect(chunks.flat()).toEqual(recs);
    expect(chunkByBytes([])).toEqual([]);
  });
});
