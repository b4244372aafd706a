/**
 * FrontierOp (processors/frontier-op.ts): an operation that fails after staging changes closes
 * its batches (discard) and leaves the stores as they were; the next operation writes as usual.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { UrlStateMsg } from '../../lib/messages';
import { FrontierOp } from '../../processors/frontier-op';
import { priorityLevel } from '../../processors/frontier-schedule';
import { UrlStore } from '../../processors/frontier-store';

const levelOf = (r: UrlStateMsg): number => priorityLevel(r.fetched_at === null ? r.priority : undefined, r.depth, 4);

function row(url: string, host: string): UrlStateMsg {
  return {
    url, host, state: 'QUEUED', depth: 1, discovered_at: 1_700_000_000_000, updated_at: 1_700_000_000_000, lease_id: null, lease_expires_at: null,
    attempts: 0, next_due_at: null, fetched_at: null, http_status: null, sha256: null, etag: null, last_modified: null,
    warc_uri: null, warc_offset: null, warc_length: null, reason: null,
  };
}

describe('FrontierOp.discard', () => {
  it('closes the batches of every store it staged into, writes nothing, and the next operation writes as usual', async () => {
    const dirs = [mkdtempSync(join(tmpdir(), 'frontier-op-a-')), mkdtempSync(join(tmpdir(), 'frontier-op-b-'))];
    const stores = await Promise.all(dirs.map((d) => UrlStore.open(d, levelOf)));
    const storeFor = (host: string): UrlStore => stores[host.startsWith('a.') ? 0 : 1];
    try {
      const failed = new FrontierOp(storeFor);
      const rows = [row('http://a.test/1', 'a.test'), row('http://b.test/1', 'b.test')];
      for (const r of rows) failed.set(r);
      const batches = stores.map((s) => failed.batch(s));
      expect(batches.map((b) => [b.size > 0, b.closed])).toEqual([[true, false], [true, false]]);
      await failed.discard();
      expect(batches.map((b) => b.closed)).toEqual([true, true]);
      await failed.write(); // nothing left to write
      expect(await Promise.all(rows.map((r) => storeFor(r.host).rows([r.url])))).toEqual([[undefined], [undefined]]);
      expect(stores.map((s) => s.size)).toEqual([0, 0]);

      const next = new FrontierOp(storeFor);
      for (const r of rows) next.set(r);
      await next.write();
      const got = await Promise.all(rows.map((r) => storeFor(r.host).rows([r.url])));
      expect(got.map(([r]) => r?.url)).toEqual(rows.map((r) => r.url));
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });
});
