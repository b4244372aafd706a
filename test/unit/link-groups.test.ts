import * as avro from 'avsc';
import { avroReader, avroType, loadSchema, schemaBefore } from '../../lib/avro';
import { expandCandidate, expandLink, groupCandidates, groupLinks, urlsOf } from '../../lib/link-groups';
import type { CandidateMsg, LinkMsg } from '../../lib/messages';

const link = (url: string, extra: Partial<LinkMsg> = {}): LinkMsg => ({ url, source_url: 'http://src.test/', depth: 2, discovered_at: 7, is_seed: false, priority: 0.5, ...extra });
const hostOf = (url: string): string | null => {
  try {
    return new URL(url).hostname;
  } catch {
    return null;
  }
};

describe('link groups', () => {
  it('puts the links of one host and the same fields in one record, in order, and expands back to the same links', () => {
    const links = [link('http://a.test/1'), link('http://b.test/1'), link('http://a.test/2'), link('http://a.test/3'), link('not a url')];
    const groups = groupLinks(links, hostOf);
    expect(groups.map((g) => [g.host, urlsOf(g.link)])).toEqual([
      ['a.test', ['http://a.test/1', 'http://a.test/2', 'http://a.test/3']],
      ['b.test', ['http://b.test/1']],
    ]);
    const back = groups.flatMap((g) => expandLink(g.link));
    expect(back).toEqual(links.slice(0, 4).sort((x, y) => (hostOf(x.url)! < hostOf(y.url)! ? -1 : 1)).map((l) => ({ ...l, more_urls: [] })));
    // The input is left as it was.
    expect(links[0]).not.toHaveProperty('more_urls');
  });

  it('keeps links apart that differ in anything but the URL', () => {
    const links = [
      link('http://a.test/1'),
      link('http://a.test/2', { priority: 0.25 }),
      link('http://a.test/3', { lastmod: 5 }),
      link('http://a.test/4', { redirects: 1 }),
      link('http://a.test/5', { is_seed: true }),
      link('http://a.test/6', { depth: 3 }),
      link('http://a.test/7', { source_url: null }),
      link('http://a.test/8'),
    ];
    const groups = groupLinks(links, hostOf);
    // Each differs from the one before; the last matches the first, but only a host's newest group is open.
    expect(groups).toHaveLength(8);
    expect(groups.flatMap((g) => expandLink(g.link)).map((l) => l.url).sort()).toEqual(links.map((l) => l.url).sort());
    for (const g of groups) for (const l of expandLink(g.link)) expect(l).toEqual({ ...links.find((x) => x.url === l.url)!, more_urls: [] });
  });

  it('groups candidates by host and shared fields; a record without more_urls is a group of one', () => {
    const c = (url: string, host: string, extra: Partial<CandidateMsg> = {}): CandidateMsg => ({ url, host, depth: 1, discovered_at: 3, source_url: null, priority: null, ...extra });
    const groups = groupCandidates([c('http://a.test/1', 'a.test'), c('http://b.test/1', 'b.test'), c('http://a.test/2', 'a.test'), c('http://a.test/3', 'a.test', { priority: 0.9 })]);
    expect(groups.map((g) => [g.host, urlsOf(g)])).toEqual([
      ['a.test', ['http://a.test/1', 'http://a.test/2']],
      ['b.test', ['http://b.test/1']],
      ['a.test', ['http://a.test/3']],
    ]);
    expect(expandCandidate(groups[0]!)).toEqual([{ ...c('http://a.test/1', 'a.test'), more_urls: [] }, { ...c('http://a.test/2', 'a.test'), more_urls: [] }]);
    const old = c('http://a.test/9', 'a.test');
    expect(expandCandidate(old)).toEqual([old]);
    expect(urlsOf(old)).toEqual(['http://a.test/9']);
  });
});

describe('reading values written before a field was added', () => {
  it.each(['crawl.Link.v1', 'crawl.Candidate.v1'])('%s: bytes of the first version read with more_urls = [], of the second with priority_class = null; current bytes as written', (name) => {
    const before = avro.Type.forSchema(schemaBefore(loadSchema(name), 2) as avro.Schema);
    const second = avro.Type.forSchema(schemaBefore(loadSchema(name), 3) as avro.Schema);
    const names = (t: avro.Type): string[] => (t as unknown as { fields: Array<{ name: string }> }).fields.map((f) => f.name);
    expect(names(before)).not.toContain('more_urls');
    expect(names(second)).toContain('more_urls');
    expect(names(second)).not.toContain('priority_class');
    const value = name === 'crawl.Link.v1'
      ? { url: 'http://a.test/', source_url: null, depth: 1, discovered_at: 2, is_seed: false, redirects: 0, priority: 0.5, lastmod: null }
      : { url: 'http://a.test/', host: 'a.test', depth: 1, discovered_at: 2, source_url: null, redirects: 0, priority: null };
    const read = avroReader(name);
    expect(read(before.toBuffer(value))).toEqual({ ...value, more_urls: [], priority_class: null });
    expect(read(second.toBuffer({ ...value, more_urls: ['http://a.test/3'] }))).toEqual({ ...value, more_urls: ['http://a.test/3'], priority_class: null });
    const current = { ...value, more_urls: ['http://a.test/2'], priority_class: 1 };
    expect(read(avroType(name).toBuffer(current))).toEqual(current);
    // Bytes of neither version are still an error.
    expect(() => read(Buffer.from([0x99, 0x01]))).toThrow();
  });
});
