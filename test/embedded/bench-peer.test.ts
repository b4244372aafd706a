/**
 * The benchmark's peer (bench/peer-crawlee.ts, Crawlee's CheerioCrawler) on the benchmark's own
 * synthetic web with slow responses: it must be crawling within seconds, and still read each
 * host's robots.txt. Handing it the seeds through crawler.run(seeds) made it fetch every seed
 * host's robots.txt one after another before its first page: 100 hosts answering in 200 ms are
 * 20 s of that, and with the benchmark's 5,000 hosts it fetched no page at all in a 60 s run.
 * Built code (dist/), like the other suites of this project.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exited, seedsFile, startWeb, type Web } from '../../bench/web-process';

const DIST = join(__dirname, '../../dist/bench');
const HOSTS = 100;
const LATENCY_MS = 200;
const PEER_SECS = 8;

describe('benchmark peer', () => {
  let web: Web | undefined;
  let dir = '';

  afterEach(async () => {
    if (web && web.child.exitCode === null) {
      web.child.kill();
      await exited(web.child);
    }
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('crawls a slow web within seconds and still reads robots.txt before a host\'s pages', async () => {
    dir = mkdtempSync(join(tmpdir(), 'bench-peer-'));
    // The lorem-ipsum web: this test is about the peer's politeness, not page content, and the
    // real-page web needs the shared corpus, which a fresh clone has not.
    web = await startWeb(HOSTS, LATENCY_MS, join(DIST, 'web-server.js'), 'lorem');
    const seeds = seedsFile(dir, HOSTS, web.port, true);

    const peer = fork(join(DIST, 'peer-crawlee.js'), [seeds, '256', String(PEER_SECS), '1000000000'], { stdio: ['ignore', 'pipe', 'pipe', 'ipc'] });
    let out = '';
    peer.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const killer = setTimeout(() => peer.kill('SIGKILL'), (PEER_SECS + 30) * 1000);
    await exited(peer);
    clearTimeout(killer);
    const reported = JSON.parse(out.trim().split('\n').pop()!) as { pages: number };

    const s = (await web.stats()).peer;
    // Sequential robots.txt checks of 100 seeds would take 20 s, past the 8 s run.
    expect(reported.pages).toBeGreaterThan(0);
    expect(s?.pages).toBe(reported.pages);
    // Every host it took a page from had its robots.txt read (requests beyond pages are robots.txt).
    expect(s!.requests - s!.pages).toBeGreaterThanOrEqual(s!.hosts);
  }, 60_000);
});
