/**
 * The opt-out registry (crawl.optout) as every processor sees it: one record per subject (a
 * host or a registered domain) with a decision per purpose (crawl, search_index, ai_training),
 * its scope, source, whether the owner was verified, and when it took effect
 * (schemas/crawl.OptOut.v2.avsc). `version` is the highest registry_version applied: handoff
 * events carry it as usage_registry_version and every process reports it (runtime/registry-report.ts).
 *
 * A host is denied a purpose when its own record denies it or its registered domain's record
 * (scope registered_domain) does: an opt-out anywhere above a host holds for it.
 *
 * Rows written before version 2 (key `subject|purpose`, one decision each) are read on: each
 * is one purpose's decision for its subject, applying to the registered domain's hosts when the
 * subject is one. Within a subject the latest change (by registry_version) of each purpose wins,
 * so a version 2 record written after a version 1 row replaces it; writers also send the old
 * keys' tombstones (optOutWrite).
 */
import type { OptOutDecision, OptOutMsg, OptOutPurpose, OptOutPurposes, OptOutScope } from './messages';
import { registeredDomain } from './url-normalize';

export const PURPOSES: readonly OptOutPurpose[] = ['crawl', 'search_index', 'ai_training'];
export const ALL_ALLOWED: Readonly<OptOutPurposes> = { crawl: 'allow', search_index: 'allow', ai_training: 'allow' };

/** Key of a version 1 row (`subject|purpose`); version 2 records are keyed by the subject alone. */
export function optOutKey(subject: string, purpose: OptOutPurpose): string {
  return `${subject}|${purpose}`;
}

/** A subject's registry entry in the design's shape. */
export interface OptOutRecord {
  subject: string;
  scope: OptOutScope;
  purposes: OptOutPurposes;
  source: string;
  verified: boolean;
  effective_at: number;
  registry_version: number;
}

interface Decided {
  decision: OptOutDecision;
  version: number;
}

interface SubjectEntry {
  /** The version 2 record, if any. */
  record: OptOutMsg | null;
  /** Version 1 rows by purpose. */
  legacy: Map<OptOutPurpose, OptOutMsg>;
}

/** The scope a version 1 row had: its registered domain's hosts when the subject is one. */
function legacyScope(subject: string): OptOutScope {
  return isRegisteredDomain(subject) ? 'registered_domain' : 'host';
}

/** Changes kept for lag measurement (behindSince): the most recent ones are all it needs. */
const RECENT_CHANGES = 4096;

export class OptOutRegistry {
  private readonly subjects = new Map<string, SubjectEntry>();
  /** (registry_version, effective time) of recent changes, for behindSince. */
  private readonly recent: Array<{ version: number; at: number }> = [];
  version = 0;

  /** Apply one row of crawl.optout (value null = tombstone of that key). */
  apply(key: string, value: OptOutMsg | null): void {
    const bar = key.indexOf('|');
    const subject = bar < 0 ? key : key.slice(0, bar);
    const purpose = bar < 0 ? null : (key.slice(bar + 1) as OptOutPurpose);
    let e = this.subjects.get(subject);
    if (value === null) {
      if (!e) return;
      if (purpose === null) e.record = null;
      else e.legacy.delete(purpose);
      if (!e.record && e.legacy.size === 0) this.subjects.delete(subject);
      return;
    }
    if (!e) this.subjects.set(subject, (e = { record: null, legacy: new Map() }));
    if (purpose !== null || value.purposes == null) {
      const p = value.purpose ?? purpose;
      if (p) e.legacy.set(p, value);
    } else e.record = value;
    this.version = Math.max(this.version, value.registry_version);
    this.recent.push({ version: value.registry_version, at: value.effective_at ?? value.updated_at });
    if (this.recent.length > RECENT_CHANGES) this.recent.splice(0, this.recent.length - RECENT_CHANGES / 2);
  }

  /** A subject's own entry in the design's shape (version 1 rows folded in), or undefined. */
  record(subject: string): OptOutRecord | undefined {
    const e = this.subjects.get(subject);
    if (!e) return undefined;
    const r = e.record;
    const purposes = { ...(r?.purposes ?? ALL_ALLOWED) };
    let latest: OptOutMsg = r ?? [...e.legacy.values()][0]!;
    for (const p of PURPOSES) {
      const d = this.decided(e, p);
      if (d) purposes[p] = d.decision;
    }
    for (const row of e.legacy.values()) if (row.registry_version > latest.registry_version) latest = row;
    return {
      subject,
      scope: r?.scope ?? legacyScope(subject),
      purposes,
      source: latest.source ?? 'registry_v1',
      verified: latest.verified ?? false,
      effective_at: latest.effective_at ?? latest.updated_at,
      registry_version: latest.registry_version,
    };
  }

  /** Every subject's entry (for `crawl optout list` and the API). */
  records(): OptOutRecord[] {
    return [...this.subjects.keys()].map((s) => this.record(s)!);
  }

  /** The version 1 keys a subject still has (a version 2 write tombstones them). */
  legacyKeys(subject: string): string[] {
    return [...(this.subjects.get(subject)?.legacy.keys() ?? [])].map((p) => optOutKey(subject, p));
  }

  allows(host: string, purpose: OptOutPurpose): boolean {
    return this.decisionFor(host, purpose) === 'allow';
  }

  /** The decision for a host: deny if its own entry or its registered domain's (scope registered_domain) denies. */
  decisionFor(host: string, purpose: OptOutPurpose): OptOutDecision {
    // Asked for every lease and fetch: an empty registry needs no registered-domain lookup.
    if (this.subjects.size === 0) return 'allow';
    const own = this.subjects.get(host);
    if (own && this.decided(own, purpose)?.decision === 'deny') return 'deny';
    const domain = registeredDomain(host);
    if (!domain || domain === host) return 'allow';
    const byDomain = this.subjects.get(domain);
    if (!byDomain || this.scopeOf(domain, byDomain) !== 'registered_domain') return 'allow';
    return this.decided(byDomain, purpose)?.decision ?? 'allow';
  }

  /** The entries that decide for a host: its own and its registered domain's, when it applies. */
  entriesFor(host: string): OptOutRecord[] {
    const out: OptOutRecord[] = [];
    const own = this.record(host);
    if (own) out.push(own);
    const domain = registeredDomain(host);
    const byDomain = domain && domain !== host ? this.record(domain) : undefined;
    if (byDomain && byDomain.scope === 'registered_domain') out.push(byDomain);
    return out;
  }

  /**
   * When the registry first moved past `applied` (the effective time of the earliest change
   * with a higher version), or null when nothing is newer: a process on `applied` has been
   * behind since then. Beyond the changes kept, the oldest kept one's time (a lower bound).
   */
  behindSince(applied: number): number | null {
    if (applied >= this.version) return null;
    let at: number | null = null;
    for (const c of this.recent) if (c.version > applied && (at === null || c.at < at)) at = c.at;
    return at;
  }

  /** The next version a writer should use. */
  nextVersion(): number {
    return this.version + 1;
  }

  private scopeOf(subject: string, e: SubjectEntry): OptOutScope {
    return e.record?.scope ?? legacyScope(subject);
  }

  /** The latest decision of one purpose in a subject's entry (version 2 record or version 1 row). */
  private decided(e: SubjectEntry, purpose: OptOutPurpose): Decided | null {
    let best: Decided | null = e.record?.purposes ? { decision: e.record.purposes[purpose], version: e.record.registry_version } : null;
    const row = e.legacy.get(purpose);
    if (row && (!best || row.registry_version > best.version)) best = { decision: row.allowed === false ? 'deny' : 'allow', version: row.registry_version };
    return best;
  }
}

export interface OptOutChange {
  subject: string;
  /** Absent: the subject's scope so far, else registered_domain for a registered domain, host otherwise. */
  scope?: OptOutScope;
  /** The purposes to set; the others keep the subject's current decisions (allow when it has none). */
  purposes: Partial<OptOutPurposes>;
  source: string;
  verified: boolean;
}

/**
 * The rows one change writes (as `{key, value}`; value null = tombstone): the subject's new
 * version 2 record and tombstones for its version 1 rows. `version` is the registry version to
 * write (the caller's own counter may be ahead of what the registry has read back).
 */
export function optOutWrite(registry: OptOutRegistry, c: OptOutChange, version: number, now: number): Array<{ key: string; value: OptOutMsg | null }> {
  const current = registry.record(c.subject);
  const value: OptOutMsg = {
    subject: c.subject, purpose: null, allowed: null, registry_version: version, updated_at: now,
    scope: c.scope ?? current?.scope ?? legacyScope(c.subject),
    purposes: { ...(current?.purposes ?? ALL_ALLOWED), ...c.purposes },
    source: c.source, verified: c.verified, effective_at: now,
  };
  return [{ key: c.subject, value }, ...registry.legacyKeys(c.subject).map((key) => ({ key, value: null }))];
}

/** Whether a subject may carry scope registered_domain (it must be one). */
export function isRegisteredDomain(subject: string): boolean {
  return registeredDomain(subject) === subject;
}
