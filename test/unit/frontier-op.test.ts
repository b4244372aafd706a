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

describe('FrontierOp.slots', () => {
  it('gives a URL named twice one slot, reads rows into slots (pending first), and setSlot writes what set writes', async () => {
    const dirs = [mkdtempSync(join(tmpdir(), 'frontier-op-s1-')), mkdtempSync(join(tmpdir(), 'frontier-op-s2-'))];
    const stores = await Promise.all(dirs.map((d) => UrlStore.open(d, levelOf)));
    try {
      const stored = row('http://a.test/known', 'a.test');
      const seed = new FrontierOp(() => stores[0]);
      seed.set(stored);
      await seed.write();
      const pendingRow = { ...row('http://a.test/pending', 'a.test'), state: 'FETCHED' as const };
      const pending = new Map([[pendingRow.url, { row: pendingRow }]]);
      const op = new FrontierOp(() => stores[0], pending);
      const items = [
        { url: 'http://a.test/new', host: 'a.test' }, { url: stored.url, host: 'a.test' }, { url: 'http://a.test/new', host: 'a.test' },
        { url: pendingRow.url, host: 'a.test' },
      ];
      const slots = await op.slots(items);
      expect(slots[0]).toBe(slots[2]);
      expect(slots.map((s) => s.row?.url ?? null)).toEqual([null, stored.url, null, pendingRow.url]);
      expect(slots[3].row).toBe(pendingRow);
      expect(op.known(stored.url)).toBe(true);
      expect(op.known('http://a.test/new')).toBe(false);
      // A second read of the same URLs reads nothing again: the same slots.
      expect(await op.slots(items.slice(0, 2))).toEqual([slots[0], slots[1]]);

      const fresh = row('http://a.test/new', 'a.test');
      op.setSlot(slots[0], fresh);
      op.setSlot(slots[0], { ...fresh, updated_at: fresh.updated_at + 1 }); // staged twice: one row, one queue entry
      expect(op.staged().map((s) => [s.url, s.row?.updated_at])).toEqual([[fresh.url, fresh.updated_at + 1]]);
      await op.write();

      // The same changes through set() into a second store: the same keys and values.
      const ref = new FrontierOp(() => stores[1]);
      ref.set(stored);
      ref.set(fresh);
      ref.set({ ...fresh, updated_at: fresh.updated_at + 1 });
      await ref.write();
      const dump = async (s: UrlStore): Promise<unknown> => ({ rows: await s.rows([stored.url, fresh.url]), queue: await s.queue('a.test'), counts: s.counts });
      expect(await dump(stores[0])).toEqual(await dump(stores[1]));
      expect(await stores[0].queue('a.test')).toEqual([stored.url, fresh.url]);
    } finally {
      await Promise.all(stores.map((s) => s.close()));
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    }
  });
});
