/**
 * Every process that follows the opt-out registry says which version it has applied: as a
 * metric (crawl_optout_registry_version_applied{stage}) and as a row of crawl.optout-applied,
 * written when the version changes (at most once a second) and at least every
 * CRAWL_OPTOUT_REPORT_MS. crawl serve reads those rows, shows each process's lag and raises the
 * alarm when one is more than CRAWL_OPTOUT_LAG_ALARM_MS behind (api/registry-lag.ts).
 *
 * The report rides on the stage's tick, so it is written through the same log as the stage's
 * other output, in both runtimes.
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { trackRegistryVersion } from '../lib/metrics';
import type { OptOutAppliedMsg } from '../lib/messages';
import type { OptOutRegistry } from '../lib/optout-registry';
import type { OutRecord, Stage } from './stage';

/** A stage that follows crawl.optout into this registry. */
export interface FollowsOptOuts {
  readonly optoutRegistry: OptOutRegistry;
}

/** Least time between two reports of a changing version. */
const MIN_REPORT_GAP_MS = 1000;
/** How often the report is looked at when the stage has no tick of its own. */
const REPORT_TICK_MS = 500;

export class RegistryReporter {
  readonly reporter: string;
  private lastAt = -Infinity;
  private lastVersion = -1;

  constructor(
    private readonly stage: string,
    private readonly registry: { readonly version: number },
    private readonly everyMs: number,
    private readonly startedAt: number,
  ) {
    this.reporter = `${hostname()}:${process.pid}:${stage}:${randomBytes(3).toString('hex')}`;
  }

  /** The report row to write now, if one is due. */
  due(now: number): OutRecord[] {
    const v = this.registry.version;
    const changed = v !== this.lastVersion && now - this.lastAt >= MIN_REPORT_GAP_MS;
    if (!changed && now - this.lastAt < this.everyMs) return [];
    this.lastAt = now;
    this.lastVersion = v;
    const value: OptOutAppliedMsg = {
      reporter: this.reporter, stage: this.stage, machine: hostname(), pid: process.pid, applied_version: v, started_at: this.startedAt, reported_at: now,
    };
    return [{ topic: 'optoutApplied', key: this.reporter, host: this.reporter, value }];
  }
}

/** The stage with its applied registry version reported (rows and metric) on its tick. */
export function withRegistryReport(stage: Stage & FollowsOptOuts, everyMs: number, now: () => number = Date.now): Stage & FollowsOptOuts {
  const reporter = new RegistryReporter(stage.id, stage.optoutRegistry, everyMs, now());
  trackRegistryVersion(stage.id, () => stage.optoutRegistry.version);
  const own = stage.tick?.bind(stage);
  return {
    ...stage,
    outputs: [...stage.outputs, 'optoutApplied'],
    tickMs: stage.tickMs ?? REPORT_TICK_MS,
    async tick(ctx): Promise<OutRecord[]> {
      const outs = own ? await own(ctx) : [];
      const report = reporter.due(now());
      return report.length ? [...outs, ...report] : outs;
    },
  };
}

/** Whether a stage follows the opt-out registry (and so reports its version). */
export function followsOptOuts(stage: Stage): stage is Stage & FollowsOptOuts {
  return (stage as Partial<FollowsOptOuts>).optoutRegistry !== undefined && (stage.globalTables ?? []).includes('optout');
}
