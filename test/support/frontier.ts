/**
 * FrontierState on real stores (LevelDB in a temporary folder, one partition unless asked),
 * for unit tests: `await testFrontier(policy, ids)` is a frontier with empty stores, and
 * `await restartedFrontier(policy, ids, rows, now)` one whose stores were rebuilt from `rows` as
 * its changelog, as a restarted frontier's are. Every store is closed and removed after each test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { restoreStores } from '../../processors/frontier-restore';
import { FrontierState, TUNING_DEFAULTS, type FrontierPolicy, type FrontierTuning } from '../../processors/frontier-state';
import { HostPolicyTable } from '../../lib/host-policy';
import type { OptOutRegistry } from '../../lib/optout-registry';
import type { UrlStateMsg } from '../../lib/messages';
import { MemoryChangelog } from './memory-changelog';

const open: Array<{ fs: FrontierState; dir: string }> = [];

afterEach(async () => {
  for (const { fs, dir } of open.splice(0)) {
    for (const s of (await fs.detach(() => false)).values()) await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

export interface TestFrontierOptions {
  table?: HostPolicyTable;
  optout?: OptOutRegistry;
  partitions?: number;
  /** The changelog to restore from (empty: fresh stores). */
  changelog?: MemoryChangelog;
  now?: number;
  dir?: string;
}

export async function testFrontier(
  policy: FrontierPolicy & Partial<FrontierTuning>, ids: () => string, o: TestFrontierOptions = {},
): Promise<FrontierState> {
  const partitions = o.partitions ?? 1;
  const fs = new FrontierState(policy, ids, o.table ?? new HostPolicyTable(), o.optout, { partitions });
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'frontier-'));
  const restored = await restoreStores(Array.from({ length: partitions }, (_, p) => p), o.changelog ?? new MemoryChangelog(partitions), {
    dirOf: (p) => join(dir, `urls-${p}`), levelOf: fs.levelOf, levels: policy.priorityLevels ?? TUNING_DEFAULTS.priorityLevels, log: pino({ level: 'silent' }),
  });
  for (const r of restored) await fs.attach(r.partition, r.store, o.now ?? 0);
  if (!o.dir) open.push({ fs, dir });
  else open.push({ fs, dir: mkdtempSync(join(tmpdir(), 'frontier-unused-')) });
  return fs;
}

/** A frontier restarted at `now` on a changelog holding `rows` (in this order). */
export async function restartedFrontier(
  policy: FrontierPolicy & Partial<FrontierTuning>, ids: () => string, rows: readonly UrlStateMsg[], now: number, o: Omit<TestFrontierOptions, 'changelog' | 'now'> = {},
): Promise<FrontierState> {
  const log = new MemoryChangelog(o.partitions ?? 1);
  for (const r of rows) log.append(r.url, r.host, r);
  return testFrontier(policy, ids, { ...o, changelog: log, now });
}
