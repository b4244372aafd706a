/**
 * The host-policy table (lib/host-policy.ts) as every stage reads it: rows by host and field,
 * tombstones, robots.txt bodies left out. Pure.
 */
import { HostPolicyTable } from '../../lib/host-policy';
import type { HostPolicyMsg } from '../../lib/messages';

const row = (host: string, field: string, more: Partial<HostPolicyMsg> = {}): HostPolicyMsg => ({
  host, field, updated_at: 1, blocked_until: null, reason: null, min_delay_ms: null, ...more,
});

describe('HostPolicyTable', () => {
  it('keeps each host field by field, in the order first written; a rewrite replaces in place', () => {
    const t = new HostPolicyTable();
    t.apply('a.test|backoff', row('a.test', 'backoff', { blocked_until: 5 }));
    t.apply('a.test|block', row('a.test', 'block', { blocked_until: 100, reason: 'complaint' }));
    t.apply('b.test|crawl-rate', row('b.test', 'crawl-rate', { min_delay_ms: 4000 }));
    t.apply('a.test|backoff', row('a.test', 'backoff', { blocked_until: 9 }));
    expect(t.fields('a.test').map((r) => [r.field, r.blocked_until])).toEqual([['backoff', 9], ['block', 100]]);
    expect(t.block('a.test', 50)).toEqual({ until: 100, reason: 'complaint' });
    expect(t.backoffUntil('a.test', 5)).toBe(9);
    expect(t.minDelayMs('b.test')).toBe(4000);
    expect(t.get('b.test', 'block')).toBeUndefined();
    expect([...t.hosts()]).toEqual(['a.test', 'b.test']);
  });

  it('a tombstone removes that field only; a host with none left is gone', () => {
    const t = new HostPolicyTable();
    t.apply('a.test|backoff', row('a.test', 'backoff'));
    t.apply('a.test|block', row('a.test', 'block', { blocked_until: 100 }));
    t.apply('a.test|block', null);
    t.apply('a.test|never-written', null);
    expect(t.fields('a.test').map((r) => r.field)).toEqual(['backoff']);
    t.apply('a.test|backoff', null);
    expect(t.fields('a.test')).toEqual([]);
    expect([...t.hosts()]).toEqual([]);
  });

  it('leaves robots.txt bodies out, and files a row under the field its key names', () => {
    const t = new HostPolicyTable();
    t.apply('a.test|robots', row('a.test', 'robots', { robots_body: Buffer.from('User-agent: *\n') }));
    expect(t.get('a.test', 'robots')?.robots_body).toBeNull();
    t.apply('a.test|block', row('a.test', 'not-block', { blocked_until: 100 }));
    expect(t.get('a.test', 'block')).toMatchObject({ field: 'block', blocked_until: 100 });
    expect(t.get('a.test', 'not-block')).toBeUndefined();
  });

  it('applies a row handed to it again (crawl run: one shared table, one call a stage) once, and a later row for the key again', () => {
    const t = new HostPolicyTable();
    const robots = row('a.test', 'robots', { robots_body: Buffer.from('User-agent: *\n') });
    t.apply('a.test|robots', robots);
    const kept = t.get('a.test', 'robots');
    t.apply('a.test|robots', robots);
    t.apply('a.test|robots', robots);
    expect(t.get('a.test', 'robots')).toBe(kept);
    const block = row('a.test', 'block', { blocked_until: 100 });
    t.apply('a.test|block', block);
    t.apply('a.test|block', null);
    t.apply('a.test|block', block);
    expect(t.block('a.test', 50)).toEqual({ until: 100, reason: null });
    const later = row('a.test', 'robots', { updated_at: 2 });
    t.apply('a.test|robots', later);
    t.apply('a.test|robots', robots);
    expect(t.get('a.test', 'robots')).not.toBe(kept);
    expect(t.get('a.test', 'robots')?.updated_at).toBe(1);
  });
});
