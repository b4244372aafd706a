/**
 * EmbeddedRunner.stop() over a real FileLog, with a stage shaped like fetch and parse: its
 * handler works a while, adds its record to a buffer and returns `{ pending }`, which resolves
 * once close() stores the buffer. A stop stores the buffer only after the handlers running have
 * added to it, lets go of what it could not finish (a late result is never appended or
 * committed, so the next reader of the group handles that record once), and does not wait on a
 * record that failed while stopping.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { partitionForHost } from '../../lib/partitioner';
import type { CandidateMsg, LinkMsg } from '../../lib/messages';
import { EmbeddedRunner } from '../../runtime/embedded-runner';
import { FileLog } from '../../runtime/file-log';
import type { InRecord, OutRecord, Stage } from '../../runtime/stage';
import { until } from '../support/until';

const P = 4;
const HOST = 'a.test';
const silent = pino({ level: 'silent' });

function linkRec(path: string): OutRecord {
  const value: LinkMsg = { url: `http://${HOST}${path}`, source_url: null, depth: 0, discovered_at: 1, is_seed: true };
  return { topic: 'links', key: HOST, host: HOST, value };
}

function candidate(url: string): OutRecord {
  const value: CandidateMsg = { url, host: HOST, depth: 0, discovered_at: 1, source_url: null };
  return { topic: 'frontier', key: HOST, host: HOST, value };
}

/** What a buffered file does for fetch and parse: appends wait until the buffer is stored. */
class Buffered {
  private waiting: Array<{ resolve(): void; reject(err: Error): void }> = [];
  failWith: Error | null = null;

  add(): Promise<void> {
    return new Promise((resolve, reject) => this.waiting.push({ resolve, reject }));
  }

  get size(): number {
    return this.waiting.length;
  }

  async flush(): Promise<void> {
    for (const w of this.waiting.splice(0)) {
      if (this.failWith) w.reject(this.failWith);
      else w.resolve();
    }
  }
}

/** links -> frontier: works `workMs` (or until `hold` says go), adds to the buffer, emits once it is stored. */
function bufferedStage(buffer: Buffered, opts: { workMs?: number; hold?: Map<string, Promise<void>>; started?: string[] } = {}): Stage {
  return {
    id: 'buffered',
    inputs: ['links'],
    outputs: ['frontier'],
    concurrency: 8,
    async handle(rec: InRecord) {
      const url = (rec.value as LinkMsg).url;
      opts.started?.push(url);
      await (opts.hold?.get(url) ?? new Promise((r) => setTimeout(r, opts.workMs ?? 0)));
      const stored = buffer.add();
      return { pending: stored.then(() => [candidate(url)]) };
    },
    close: () => buffer.flush(),
  };
}


describe('EmbeddedRunner.stop()', () => {
  let dir: string;
  let log: FileLog;
  /** Every crawl.frontier record appended, in order (the log keeps no topic nobody reads in memory). */
  let appended: string[];
  const candidates = (): string[] => [...appended];
  const p = partitionForHost(HOST, P);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-stop-'));
    log = new FileLog({ dir, partitions: P });
    appended = [];
    log.on('append', (recs: InRecord[]) => {
      for (const r of recs) if (r.topic === 'frontier') appended.push((r.value as CandidateMsg).url);
    });
  });
  afterEach(() => {
    log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores the buffer once the handlers running have added to it: their results are appended and committed, promptly', async () => {
    const buffer = new Buffered();
    const started: string[] = [];
    const runner = new EmbeddedRunner(log, [bufferedStage(buffer, { workMs: 300, started })], silent, { stopWaitMs: 10_000 });
    await runner.start();
    log.append([linkRec('/1'), linkRec('/2'), linkRec('/3')]);
    await until(() => started.length === 3);
    const t0 = Date.now();
    // Each handler is still working: it adds to the buffer only after close() would have stored it.
    await runner.stop();
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(buffer.size).toBe(0);
    expect(candidates().sort()).toEqual(['/1', '/2', '/3'].map((x) => `http://${HOST}${x}`));
    expect(log.committed('crawl.buffered').links![p]).toBe(3);
  });

  it('lets go of a record it could not finish: its late result is dropped and the next reader handles it once', async () => {
    const buffer = new Buffered();
    let release!: () => void;
    const hold = new Map([[`http://${HOST}/2`, new Promise<void>((r) => (release = r))]]);
    const started: string[] = [];
    const first = new EmbeddedRunner(log, [bufferedStage(buffer, { hold, started })], silent, { stopWaitMs: 200 });
    await first.start();
    log.append([linkRec('/1'), linkRec('/2')]);
    await until(() => started.length === 2);
    await first.stop();
    // /1 was stored and committed; /2 was still working at the deadline.
    expect(candidates()).toEqual([`http://${HOST}/1`]);
    expect(log.committed('crawl.buffered').links![p]).toBe(1);

    // The next reader of the group (the drain after a stop) takes /2 up while the first run's
    // handler of it is still out; that one then finishes, and the buffer is stored again.
    const secondBuffer = new Buffered();
    const second = new EmbeddedRunner(log, [bufferedStage(secondBuffer)], silent);
    await second.start();
    await until(() => secondBuffer.size === 1);
    release();
    await until(() => buffer.size === 1);
    await buffer.flush();
    await second.stop();
    await new Promise((r) => setTimeout(r, 50));
    expect(candidates()).toEqual([`http://${HOST}/1`, `http://${HOST}/2`]);
    expect(log.committed('crawl.buffered').links![p]).toBe(2);
  });

  it('does not retry or wait for a record that fails while stopping: it stays uncommitted for the next run', async () => {
    const buffer = new Buffered();
    buffer.failWith = new Error('store failed');
    const started: string[] = [];
    const runner = new EmbeddedRunner(log, [bufferedStage(buffer, { started })], silent, { stopWaitMs: 10_000 });
    await runner.start();
    log.append([linkRec('/1')]);
    await until(() => started.length === 1 && buffer.size === 1);
    const t0 = Date.now();
    await runner.stop();
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(candidates()).toEqual([]);
    expect(log.committed('crawl.buffered').links![p]).toBe(0);
  });

  it('says when all it waits for is a buffer to be stored (stalled), and is idle once it is', async () => {
    const buffer = new Buffered();
    const runner = new EmbeddedRunner(log, [bufferedStage(buffer)], silent);
    await runner.start();
    log.append([linkRec('/1'), linkRec('/2')]);
    await until(() => buffer.size === 2);
    await until(() => runner.stalled());
    expect(runner.idle()).toBe(false);
    await buffer.flush();
    await until(() => runner.idle());
    expect(candidates()).toHaveLength(2);
    await runner.stop();
  });
});

describe('EmbeddedRunner.start()', () => {
  it('starts ticks only once every stage is restored: a record a tick appends while a later stage restores is read', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'runner-start-'));
    const log = new FileLog({ dir, partitions: P });
    try {
      const order: string[] = [];
      // Shaped like the frontier (a tick emits a lease), fetch (reads it) and parse (restores its stores asynchronously).
      let ticked = false;
      const ticker: Stage = {
        id: 'ticker', inputs: [], outputs: ['frontier'], tickMs: 5,
        tick: () => {
          if (ticked) return [];
          ticked = true;
          order.push('tick');
          return [candidate(`http://${HOST}/leased`)];
        },
        handle: () => [],
      };
      const read: string[] = [];
      const reader: Stage = { id: 'reader', inputs: ['frontier'], outputs: [], handle: (rec) => (read.push((rec.value as CandidateMsg).url), []) };
      const slow: Stage = {
        id: 'slow', inputs: [], outputs: [], changelog: 'content',
        restoreChangelog: async () => {
          await new Promise((r) => setTimeout(r, 200));
          order.push('restored');
        },
        handle: () => [],
      };
      const runner = new EmbeddedRunner(log, [ticker, reader, slow], silent);
      await runner.start();
      await until(() => read.length === 1);
      expect(order).toEqual(['restored', 'tick']);
      expect(read).toEqual([`http://${HOST}/leased`]);
      await runner.stop();
    } finally {
      log.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
