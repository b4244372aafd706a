/**
 * The opt-out registry in the design's shape (crawl.OptOut.v2): records per subject with scope,
 * purposes, source, verified, effective_at and registry_version; rows of the first version read
 * on; the most restrictive of a host's and its registered domain's decisions; writes that
 * tombstone first-version rows; the lag of a process behind the registry. Pure, no services.
 */
import * as avro from 'avsc';
import { AppliedReports } from '../../api/registry-lag';
import { avroType, loadSchema } from '../../lib/avro';
import type { OptOutMsg, OptOutPurposes } from '../../lib/messages';
import { optOutKey, OptOutRegistry, optOutWrite } from '../../lib/optout-registry';
import { RegistryReporter } from '../../runtime/registry-report';

const ALLOW: OptOutPurposes = { crawl: 'allow', search_index: 'allow', ai_training: 'allow' };

function v2(subject: string, purposes: Partial<OptOutPurposes>, version: number, fields: Partial<OptOutMsg> = {}): OptOutMsg {
  return {
    subject, purpose: null, allowed: null, registry_version: version, updated_at: version * 1000, scope: 'host', purposes: { ...ALLOW, ...purposes },
    source: 'operator_api', verified: false, effective_at: version * 1000, ...fields,
  };
}

function v1(subject: string, purpose: OptOutMsg['purpose'] & string, allowed: boolean, version: number): [string, OptOutMsg] {
  return [optOutKey(subject, purpose), { subject, purpose, allowed, registry_version: version, updated_at: version * 1000 }];
}

describe('crawl.OptOut.v2', () => {
  it('reads a row written under crawl.OptOut.v1 (Avro schema resolution) with its purpose and decision', () => {
    const writer = avro.Type.forSchema(loadSchema('crawl.OptOut.v1') as avro.Schema);
    const reader = avroType('crawl.OptOut.v2');
    const bytes = writer.toBuffer({ subject: 'example.org', purpose: 'ai_training', allowed: false, registry_version: 7, updated_at: 99 });
    const row = reader.fromBuffer(bytes, reader.createResolver(writer)) as OptOutMsg;
    expect(row).toMatchObject({ subject: 'example.org', purpose: 'ai_training', allowed: false, registry_version: 7, purposes: null, scope: null, verified: false });
    const reg = new OptOutRegistry();
    reg.apply(optOutKey('example.org', 'ai_training'), row);
    expect(reg.record('example.org')).toEqual({
      subject: 'example.org', scope: 'registered_domain', purposes: { ...ALLOW, ai_training: 'deny' }, source: 'registry_v1', verified: false, effective_at: 99, registry_version: 7,
    });
    expect(reg.allows('news.example.org', 'ai_training')).toBe(false);
  });

  it('encodes a record of the design shape', () => {
    const rec = v2('example.org', { ai_training: 'deny' }, 48211, { scope: 'registered_domain', source: 'webmaster_console', verified: true });
    expect(avroType('crawl.OptOut.v2').isValid(rec)).toBe(true);
    expect(avroType('crawl.OptOut.v2').isValid({ ...rec, purposes: { ...rec.purposes, crawl: 'maybe' } })).toBe(false);
  });
});

describe('OptOutRegistry', () => {
  it('a domain record of scope registered_domain holds for its hosts; scope host only for the subject', () => {
    const reg = new OptOutRegistry();
    reg.apply('example.org', v2('example.org', { crawl: 'deny' }, 1, { scope: 'registered_domain' }));
    reg.apply('example.com', v2('example.com', { crawl: 'deny' }, 2, { scope: 'host' }));
    expect(reg.allows('www.example.org', 'crawl')).toBe(false);
    expect(reg.allows('example.org', 'crawl')).toBe(false);
    expect(reg.allows('example.com', 'crawl')).toBe(false);
    expect(reg.allows('www.example.com', 'crawl')).toBe(true);
    expect(reg.allows('www.example.org', 'search_index')).toBe(true);
    expect(reg.version).toBe(2);
  });

  it("the most restrictive decision wins: a host's allow does not lift its domain's deny, its own deny holds alone", () => {
    const reg = new OptOutRegistry();
    reg.apply('example.org', v2('example.org', { search_index: 'deny' }, 1, { scope: 'registered_domain' }));
    reg.apply('shop.example.org', v2('shop.example.org', { ai_training: 'deny' }, 2));
    expect(reg.decisionFor('shop.example.org', 'search_index')).toBe('deny');
    expect(reg.decisionFor('shop.example.org', 'ai_training')).toBe('deny');
    expect(reg.decisionFor('www.example.org', 'ai_training')).toBe('allow');
    expect(reg.entriesFor('shop.example.org').map((r) => r.subject)).toEqual(['shop.example.org', 'example.org']);
  });

  it('within a subject, the latest change of each purpose wins between a first-version row and a record', () => {
    const reg = new OptOutRegistry();
    reg.apply(...v1('a.example', 'crawl', false, 1));
    reg.apply('a.example', v2('a.example', { ai_training: 'deny' }, 2));
    // The record (v2) decides crawl too, as it is later: allow.
    expect(reg.allows('a.example', 'crawl')).toBe(true);
    reg.apply(...v1('a.example', 'crawl', false, 3));
    expect(reg.allows('a.example', 'crawl')).toBe(false);
    expect(reg.allows('a.example', 'ai_training')).toBe(false);
    // Tombstones: of the record, then of the first-version row.
    reg.apply('a.example', null);
    expect(reg.allows('a.example', 'ai_training')).toBe(true);
    reg.apply(optOutKey('a.example', 'crawl'), null);
    expect(reg.record('a.example')).toBeUndefined();
  });

  it("optOutWrite keeps the subject's other decisions, tombstones its first-version rows and carries the given version", () => {
    const reg = new OptOutRegistry();
    reg.apply(...v1('example.org', 'crawl', false, 4));
    const rows = optOutWrite(reg, { subject: 'example.org', purposes: { ai_training: 'deny' }, source: 'webmaster_console', verified: true }, 9, 5000);
    expect(rows).toEqual([
      {
        key: 'example.org',
        value: {
          subject: 'example.org', purpose: null, allowed: null, registry_version: 9, updated_at: 5000, scope: 'registered_domain',
          purposes: { crawl: 'deny', search_index: 'allow', ai_training: 'deny' }, source: 'webmaster_console', verified: true, effective_at: 5000,
        },
      },
      { key: 'example.org|crawl', value: null },
    ]);
    expect(avroType('crawl.OptOut.v2').isValid(rows[0].value)).toBe(true);
    for (const r of rows) reg.apply(r.key, r.value);
    expect(reg.record('example.org')).toMatchObject({ purposes: { crawl: 'deny', search_index: 'allow', ai_training: 'deny' }, verified: true, registry_version: 9 });
    expect(reg.legacyKeys('example.org')).toEqual([]);
  });

  it('behindSince: the effective time of the earliest change past a version', () => {
    const reg = new OptOutRegistry();
    expect(reg.behindSince(0)).toBeNull();
    for (let v = 1; v <= 3; v++) reg.apply(`h${v}.example`, v2(`h${v}.example`, { crawl: 'deny' }, v));
    expect(reg.behindSince(3)).toBeNull();
    expect(reg.behindSince(1)).toBe(2000);
    expect(reg.behindSince(0)).toBe(1000);
  });
});

describe('registry lag (crawl serve)', () => {
  const opts = { alarmMs: 300_000, reportMs: 30_000 };

  it('a reporting process more than five minutes behind raises the alarm; an up-to-date one does not; a quiet one is silent', () => {
    const reg = new OptOutRegistry();
    reg.apply('a.example', v2('a.example', { crawl: 'deny' }, 1, { effective_at: 10_000 }));
    const reports = new AppliedReports();
    const now = 10_000 + 301_000;
    const row = (reporter: string, applied: number, at: number): void =>
      reports.apply(reporter, { reporter, stage: 'frontier', machine: 'm', pid: 1, applied_version: applied, started_at: 0, reported_at: at });
    row('late', 0, now - 1000);
    row('fresh', 1, now - 1000);
    row('quiet', 0, now - 100_000);
    const view = reports.view(now, reg, opts);
    expect(view.alarm).toBe(true);
    const by = Object.fromEntries(view.processes.map((p) => [p.reporter, p]));
    expect(by.late).toMatchObject({ behind_s: 301, alarm: true, silent: false });
    expect(by.fresh).toMatchObject({ behind_s: 0, alarm: false });
    expect(by.quiet).toMatchObject({ silent: true, alarm: false });
    // 4 minutes behind: shown, no alarm.
    expect(reports.view(10_000 + 240_000, reg, opts).alarm).toBe(false);
    // Gone from the view an hour after its last report.
    expect(reports.view(now + 3_700_000, reg, opts).processes.map((p) => p.reporter)).not.toContain('quiet');
  });

  it('a process reports its version on change (at most once a second) and at least every interval', () => {
    const reg = { version: 0 };
    const r = new RegistryReporter('handoff', reg, 30_000, 0);
    expect(r.due(1000)).toHaveLength(1);
    expect(r.due(1500)).toHaveLength(0);
    reg.version = 5;
    expect(r.due(1800)).toHaveLength(0);
    const [row] = r.due(2000);
    expect(row).toMatchObject({ topic: 'optoutApplied', key: r.reporter, value: { stage: 'handoff', applied_version: 5, reported_at: 2000 } });
    expect(avroType('crawl.OptOutApplied.v1').isValid(row.value)).toBe(true);
    expect(r.due(31_999)).toHaveLength(0);
    expect(r.due(32_000)).toHaveLength(1);
  });
});
