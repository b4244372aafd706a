import { UrlTable } from '../../processors/frontier-urls';
import type { UrlStateMsg } from '../../lib/messages';

function row(url: string, fields: Partial<UrlStateMsg> = {}): UrlStateMsg {
  return {
    url, host: new URL(url).hostname, state: 'QUEUED', depth: 2, discovered_at: 1_700_000_000_123, updated_at: 1_700_000_000_456,
    lease_id: null, lease_expires_at: null, attempts: 0, next_due_at: null, fetched_at: null, http_status: null, sha256: null,
    etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null, ...fields,
  };
}

describe('UrlTable: rows read back exactly as written', () => {
  const cases: Array<[string, UrlStateMsg]> = [
    ['a plain queued row', row('http://a.test/1')],
    ['with a priority', row('http://a.test/2', { priority: 0.25 })],
    ['with priority null (as a restored row has it)', row('http://a.test/3', { priority: null })],
    ['a redirect target', row('http://a.test/4', { redirects: 2, priority: 1 })],
    ['times far from now', row('http://a.test/5', { discovered_at: 0, updated_at: 4_102_444_800_000 })],
    ['leased', row('http://a.test/6', { state: 'LEASED', lease_id: 'L1', lease_expires_at: 5 })],
    ['queued again after a failure', row('http://a.test/7', { attempts: 1, reason: 'lease-expired' })],
    ['queued for a recrawl', row('http://a.test/8', { fetched_at: 9, sha256: 'ab'.repeat(32), warc_uri: 'file:///w', warc_offset: 0, warc_length: 10 })],
    ['fetched', row('http://a.test/9', { state: 'FETCHED', fetched_at: 9, http_status: 200, next_due_at: 99 })],
    ['a fractional time', row('http://a.test/10', { updated_at: 1.5 })],
    ['with a priority class', row('http://a.test/11', { priority: 0.3, priority_class: 2 })],
    ['class 3 with a redirect and no priority', row('http://a.test/12', { redirects: 1, priority_class: 3 })],
    ['class 1 leased', row('http://a.test/13', { state: 'LEASED', lease_id: 'L2', lease_expires_at: 5, priority_class: 1 })],
  ];
  it.each(cases)('%s', (_label, r) => {
    const t = new UrlTable();
    t.set(r);
    const back = t.get(r.url)!;
    expect(back).toStrictEqual(r);
    expect(Object.keys(back).sort()).toEqual(Object.keys(r).sort());
    expect(t.host(r.url)).toBe(r.host);
  });

  it('a compact row is a copy: changing what get() returned leaves the table as it was', () => {
    const t = new UrlTable();
    t.set(row('http://a.test/1'));
    t.get('http://a.test/1')!.state = 'DEAD';
    expect(t.get('http://a.test/1')!.state).toBe('QUEUED');
  });

  it('a row with a key it does not know is kept whole', () => {
    const t = new UrlTable();
    const odd = { ...row('http://a.test/x'), extra: 1 } as UrlStateMsg;
    t.set(odd);
    expect(t.get(odd.url)).toBe(odd);
  });

  it('replaces, deletes, counts and lists URLs with their hosts', () => {
    const t = new UrlTable();
    t.set(row('http://a.test/1'));
    t.set(row('http://b.test/1'));
    t.set(row('http://a.test/1', { state: 'LEASED', lease_id: 'L', lease_expires_at: 1 }));
    expect(t.size).toBe(2);
    expect(t.get('http://a.test/1')!.state).toBe('LEASED');
    expect([...t.hosts()]).toEqual([['http://a.test/1', 'a.test'], ['http://b.test/1', 'b.test']]);
    t.delete('http://a.test/1');
    expect(t.has('http://a.test/1')).toBe(false);
    expect(t.get('http://a.test/1')).toBeUndefined();
    expect(t.size).toBe(1);
  });

  it('keeps thousands of compact rows exact across growth, and reuses the ids of deleted ones', () => {
    const t = new UrlTable();
    const written = new Map<string, UrlStateMsg>();
    const put = (r: UrlStateMsg): void => {
      t.set(r);
      written.set(r.url, r);
    };
    for (let i = 0; i < 5000; i++) {
      const extra: Partial<UrlStateMsg> = i % 3 === 0 ? { priority: i / 7 } : i % 3 === 1 ? { priority: null, redirects: i % 4 } : {};
      put(row(`http://h${i % 17}.test/${i}`, { depth: i % 5, discovered_at: 1_700_000_000_000 + i, updated_at: 1_700_000_000_000.5 + i, ...extra }));
    }
    // Rows leave the compact form and come back, and some are deleted: their ids are reused.
    for (let i = 0; i < 5000; i += 7) put(row(`http://h${i % 17}.test/${i}`, { state: 'LEASED', lease_id: `L${i}`, lease_expires_at: i }));
    for (let i = 0; i < 5000; i += 14) put(row(`http://h${i % 17}.test/${i}`, { attempts: 0, priority: -i }));
    for (let i = 3; i < 5000; i += 11) {
      t.delete(`http://h${i % 17}.test/${i}`);
      written.delete(`http://h${i % 17}.test/${i}`);
    }
    for (let i = 0; i < 600; i++) put(row(`http://new.test/${i}`, { depth: 9, priority: 0.5 }));
    expect(t.size).toBe(written.size);
    for (const [url, r] of written) {
      expect(t.get(url)).toStrictEqual(r);
      expect(t.host(url)).toBe(r.host);
    }
    expect(t.get('http://h3.test/3')).toBeUndefined();
  });

  it('a queued row with a priority class stays compact (not the object written)', () => {
    const t = new UrlTable();
    const r = row('http://a.test/c', { priority: 0.5, priority_class: 1 });
    t.set(r);
    expect(t.get(r.url)).not.toBe(r);
    expect(t.get(r.url)).toStrictEqual(r);
    const odd = row('http://a.test/d', { priority_class: 4 });
    t.set(odd);
    expect(t.get(odd.url)).toBe(odd);
  });

  it('a row with priority undefined (the key there, no value) is kept whole, so its keys stay', () => {
    const t = new UrlTable();
    const r = { ...row('http://a.test/u'), priority: undefined } as UrlStateMsg;
    t.set(r);
    expect(Object.keys(t.get(r.url)!).sort()).toEqual(Object.keys(r).sort());
  });
});
