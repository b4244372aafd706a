/**
 * How far each process is behind the opt-out registry, from the crawl.optout-applied reports
 * (runtime/registry-report.ts), pure. A process on version A is behind since the earliest
 * change with a higher version took effect (OptOutRegistry.behindSince); the alarm is raised
 * while a reporting process is more than `alarmMs` behind (the design: five minutes).
 *
 * A process that stops reporting (stopped, killed, or hung) is shown as silent once its last
 * report is three report intervals old, and is no longer listed an hour after it; a silent one
 * does not raise the alarm, since a stopped process applies nothing.
 */
import type { OptOutAppliedMsg } from '../lib/messages';
import type { OptOutRegistry } from '../lib/optout-registry';

/** A silent process is dropped from the view this long after its last report. */
export const SILENT_FORGET_MS = 3600_000;

export interface ProcessLag {
  stage: string;
  /** machine:pid */
  instance: string;
  reporter: string;
  applied_version: number;
  reported_at: number;
  /** Seconds behind the registry (0: up to date). */
  behind_s: number;
  silent: boolean;
  alarm: boolean;
}

export interface RegistryLag {
  /** The registry version as crawl serve has read it. */
  version: number;
  alarm: boolean;
  alarm_after_s: number;
  processes: ProcessLag[];
}

export class AppliedReports {
  private readonly reports = new Map<string, OptOutAppliedMsg>();

  apply(key: string, value: OptOutAppliedMsg | null): void {
    if (value === null) this.reports.delete(key);
    else this.reports.set(key, value);
  }

  view(now: number, registry: OptOutRegistry, o: { alarmMs: number; reportMs: number }): RegistryLag {
    const processes: ProcessLag[] = [];
    for (const [key, r] of this.reports) {
      const age = now - r.reported_at;
      if (age > SILENT_FORGET_MS) {
        this.reports.delete(key);
        continue;
      }
      const since = registry.behindSince(r.applied_version);
      const behindMs = since === null ? 0 : Math.max(0, now - since);
      const silent = age > 3 * o.reportMs;
      processes.push({
        stage: r.stage, instance: `${r.machine}:${r.pid}`, reporter: r.reporter, applied_version: r.applied_version, reported_at: r.reported_at,
        behind_s: Math.round(behindMs / 1000), silent, alarm: !silent && behindMs > o.alarmMs,
      });
    }
    processes.sort((a, b) => b.behind_s - a.behind_s || a.stage.localeCompare(b.stage) || a.instance.localeCompare(b.instance));
    return { version: registry.version, alarm: processes.some((p) => p.alarm), alarm_after_s: Math.round(o.alarmMs / 1000), processes };
  }
}
