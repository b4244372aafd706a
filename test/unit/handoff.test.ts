/**
 * handoff against the opt-out registry: usage flags and usage_registry_version follow the
 * crawl.optout rows the stage is fed (pure, no services).
 */
import pino from 'pino';
import { avroType } from '../../lib/avro';
import type { HandoffEvent, OptOutMsg, OptOutPurpose, ParsedPageMsg } from '../../lib/messages';
import { optOutKey } from '../../lib/optout-registry';
import { handoffStage, toHandoff, ALLOW_ALL_USAGE } from '../../processors/handoff';
import type { InRecord, OutRecord, StageContext } from '../../runtime/stage';

const ctx: StageContext = { now: () => 0, log: pino({ level: 'silent' }) };

function parsed(url: string, fields: Partial<ParsedPageMsg> = {}): ParsedPageMsg {
  return {
    url, canonical_url: null, host: new URL(url).hostname, fetched_at: 1_700_000_000_000, change: 'NEW', sha256: 's', simhash64: null,
    language: 'en', title: 'T', text_length: 10, outlinks: 0, noindex: false, warc: { uri: 'file:///w.warc.gz', offset: 1, length: 2 },
    text: { uri: 'file:///t.warc.gz', offset: 3, length: 4 }, near_duplicate_of: null, ...fields,
  };
}

function optout(subject: string, purpose: OptOutPurpose, allowed: boolean, version: number): { key: string; value: OptOutMsg } {
  return { key: optOutKey(subject, purpose), value: { subject, purpose, allowed, registry_version: version, updated_at: 5 } };
}

function events(stage: ReturnType<typeof handoffStage>, p: ParsedPageMsg): HandoffEvent[] {
  const rec: InRecord = { topic: 'parsed', partition: 0, offset: 0, key: p.host, value: p, timestamp: 0 };
  return (stage.handle(rec, ctx) as OutRecord[]).map((o) => o.value as HandoffEvent);
}

describe('handoff with the opt-out registry', () => {
  it('follows crawl.optout as a global table', () => {
    expect(handoffStage().globalTables).toEqual(['optout']);
    expect(handoffStage(ALLOW_ALL_USAGE).globalTables).toBeUndefined();
  });

  it('an empty registry allows everything at version 0', () => {
    const [ev] = events(handoffStage(), parsed('http://a.example/'));
    expect(ev).toMatchObject({ usage: { search_index: true, ai_training: true }, usage_registry_version: 0 });
  });

  it('a domain opt-out flags every host of the domain with the new version; other domains keep their flags', () => {
    const stage = handoffStage();
    const o = optout('example.com', 'ai_training', false, 4);
    stage.onGlobal!({ partition: 0, key: o.key, value: o.value }, 'optout');
    const [www] = events(stage, parsed('http://www.example.com/a'));
    const [bare] = events(stage, parsed('http://example.com/b'));
    const [other] = events(stage, parsed('http://other.org/c'));
    expect(www).toMatchObject({ usage: { search_index: true, ai_training: false }, usage_registry_version: 4 });
    expect(bare).toMatchObject({ usage: { search_index: true, ai_training: false }, usage_registry_version: 4 });
    expect(other).toMatchObject({ usage: { search_index: true, ai_training: true }, usage_registry_version: 4 });
    expect(avroType('crawl.handoff.v3').isValid(www)).toBe(true);
  });

  it("a domain's opt-out holds for its hosts even where a host's own row allows; a tombstone restores the default", () => {
    const stage = handoffStage();
    for (const o of [optout('example.com', 'search_index', false, 1), optout('docs.example.com', 'search_index', true, 2), optout('docs.example.com', 'ai_training', false, 2)]) {
      stage.onGlobal!({ partition: 0, key: o.key, value: o.value }, 'optout');
    }
    // Most restrictive wins: the registered domain's owner opted the whole domain out.
    expect(events(stage, parsed('http://docs.example.com/'))[0].usage).toEqual({ search_index: false, ai_training: false });
    expect(events(stage, parsed('http://www.example.com/'))[0].usage).toEqual({ search_index: false, ai_training: true });
    stage.onGlobal!({ partition: 0, key: optOutKey('example.com', 'search_index'), value: null }, 'optout');
    const [ev] = events(stage, parsed('http://www.example.com/'));
    expect(ev.usage.search_index).toBe(true);
    expect(ev.usage_registry_version).toBe(2);
  });

  it.each<[string, Partial<ParsedPageMsg>]>([
    ['UNCHANGED', { change: 'UNCHANGED' }],
    ['noindex', { noindex: true }],
    ['a duplicate of another URL', { near_duplicate_of: 'http://a.example/other' }],
  ])('%s pages produce no event', (_n, f) => {
    expect(toHandoff(parsed('http://a.example/', f), ALLOW_ALL_USAGE)).toBeNull();
    expect(events(handoffStage(), parsed('http://a.example/', f))).toEqual([]);
  });

  it('carries the text pointer parse wrote', () => {
    expect(events(handoffStage(), parsed('http://a.example/'))[0].text).toEqual({ uri: 'file:///t.warc.gz', offset: 3, length: 4 });
  });
});
