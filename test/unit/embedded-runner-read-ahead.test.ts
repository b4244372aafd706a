/**
 * The embedded runner's read-ahead is per input topic: a stage reading two topics (the
 * frontier: candidates and fetchers' answers) takes up the second while records of the first
 * fill their read-ahead and wait, and stops reading a topic whose read-ahead is full.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { EmbeddedRunner } from '../../runtime/embedded-runner';
import { FileLog } from '../../runtime/file-log';
import type { CandidateMsg, FetchStatusMsg } from '../../lib/messages';
import type { InRecord, OutRecord, Stage } from '../../runtime/stage';
import { until } from '../support/until';

const silent = pino({ level: 'silent' });
const HOST = 'a.test';

function rec(topic: 'frontier' | 'fetchStatus', n: number): OutRecord {
  const url = `http://${HOST}/${n}`;
  if (topic === 'frontier') {
    const value: CandidateMsg = { url, host: HOST, depth: 0, discovered_at: 1, source_url: null };
    return { topic, key: HOST, host: HOST, value };
  }
  const value: FetchStatusMsg = {
    url, host: HOST, lease_id: `L${n}`, stored: false, outcome: 'FETCHED', http_status: 200, reason: null, started_at: 1, finished_at: 1,
    response_ms: 0, crawl_delay_ms: 0, retry_after_ms: null, sha256: null, etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null,
  };
  return { topic, key: HOST, host: HOST, value };
}

describe('EmbeddedRunner: read-ahead per input topic', () => {
  let dir: string;
  let log: FileLog;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'runner-read-ahead-'));
    log = new FileLog({ dir, partitions: 1 });
  });
  afterEach(() => {
    log.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers are read and handled while a backlog of candidates fills its own read-ahead and waits', async () => {
    let release!: () => void;
    const stuck = new Promise<void>((r) => (release = r));
    const started: Record<string, number> = { frontier: 0, fetchStatus: 0 };
    const stage: Stage = {
      id: 'two-inputs',
      inputs: ['frontier', 'fetchStatus'],
      outputs: [],
      handle: () => [],
      async handleBatch(recs: readonly InRecord[]) {
        started[recs[0].topic] += recs.length;
        if (recs[0].topic === 'frontier') await stuck; // candidates wait (a slow intake)
        return [];
      },
    };
    const runner = new EmbeddedRunner(log, [stage], silent, { readAhead: 4 });
    await runner.start();
    try {
      log.append(Array.from({ length: 10 }, (_, i) => rec('frontier', i)));
      await until(() => started.frontier === 4);
      log.append([rec('fetchStatus', 0), rec('fetchStatus', 1)]);
      await until(() => started.fetchStatus === 2, 2000);
      // The answers were handled and committed; the candidates' read-ahead stayed full at 4.
      await until(() => log.committed('crawl.two-inputs').fetchStatus?.[0] === 2);
      expect(started.frontier).toBe(4);
      release();
      await until(() => started.frontier === 10);
      await until(() => log.committed('crawl.two-inputs').frontier?.[0] === 10);
    } finally {
      release();
      await runner.stop();
    }
  });
});
