/**
 * Seed lists (lib/seed-source.ts): lines streamed from a file or stdin, parsed one by one with
 * https:// for a URL typed without a scheme, batched lazily, and tallied by outcome.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { argLines, feedSeeds, parseSeed, seedBatches, seedLines, SeedTally, type Seed, type SeedLine } from '../../lib/seed-source';

describe('parseSeed', () => {
  test.each([
    ['https://example.org/', 'https://example.org/', false],
    ['HTTP://Example.ORG/a', 'http://example.org/a', false],
    ['example.org', 'https://example.org/', true],
    ['example.org/a?b=1', 'https://example.org/a?b=1', true],
    ['example.org:8443/x', 'https://example.org:8443/x', true],
    ['//example.org/x', 'https://example.org/x', true],
    ['  www.example.org.  ', 'https://www.example.org/', true],
  ])('%s -> %s', (input, url, schemeAdded) => {
    const s = parseSeed(input);
    expect(s).toMatchObject({ ok: true, url, schemeAdded });
  });

  test.each([
    ['ftp://example.org/', 'unsupported-scheme'],
    ['mailto:someone@example.org', 'unsupported-scheme'],
    ['ht!tp://example.org/', 'invalid-url'], // a broken scheme is not read as a host name
    ['not a url', 'invalid-url'],
    ['https://user:pw@example.org/', 'credentials'],
    [`https://example.org/${'a'.repeat(3000)}`, 'too-long'],
  ].map(([input, reason]) => ({ label: input.length > 60 ? `${input.slice(0, 40)}… (${input.length} chars)` : input, input, reason })))('$label is refused: $reason', ({ input, reason }) => {
    expect(parseSeed(input, 7)).toMatchObject({ ok: false, reason, line: 7, input });
  });
});

describe('seedLines', () => {
  test('skips blank lines and # comments, trims, keeps line numbers, reads CRLF', async () => {
    const text = '# seeds\r\nhttps://a.example/\r\n\r\n  b.example  \n#c.example\nhttps://d.example/';
    const got: SeedLine[] = [];
    for await (const l of seedLines(Readable.from([text]))) got.push(l);
    expect(got).toEqual([
      { line: 2, text: 'https://a.example/' },
      { line: 4, text: 'b.example' },
      { line: 6, text: 'https://d.example/' },
    ]);
  });

  test('reads a file by path, and fails clearly on a missing one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'seeds-'));
    try {
      writeFileSync(join(dir, 's.txt'), 'a.example\nb.example\n');
      const got: string[] = [];
      for await (const l of seedLines(join(dir, 's.txt'))) got.push(l.text);
      expect(got).toEqual(['a.example', 'b.example']);
      await expect((async () => {
        for await (const l of seedLines(join(dir, 'missing.txt'))) void l;
      })()).rejects.toThrow(/ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('seedBatches', () => {
  test('batches of at most `size`, the last one short', async () => {
    const sizes: number[] = [];
    for await (const b of seedBatches(argLines(Array.from({ length: 2500 }, (_, i) => `https://h${i}.example/`)), 1000)) sizes.push(b.length);
    expect(sizes).toEqual([1000, 1000, 500]);
  });

  test('reads no further than the batch it hands over (the caller sets the pace)', async () => {
    let pulled = 0;
    async function* source(): AsyncGenerator<SeedLine> {
      for (let i = 1; i <= 1_000_000; i++) {
        pulled++;
        yield { line: i, text: `https://h${i}.example/` };
      }
    }
    const it = seedBatches(source(), 100);
    await it.next();
    expect(pulled).toBe(100);
    await it.next();
    expect(pulled).toBe(200);
    await it.return(undefined);
  });
});

describe('a slow source (a pipe, a terminal)', () => {
  test('hands over the seeds that have come when the next line is late, and stops reading on abort', async () => {
    const input = new PassThrough();
    const ac = new AbortController();
    const it = seedBatches(seedLines(input, ac.signal), 1000, 20);
    input.write('https://a.example/\nhttps://b.example/\n');
    const inputs = (r: IteratorResult<Seed[], void>): string[] => (r.done ? [] : r.value.map((s) => s.input));
    expect(inputs(await it.next())).toEqual(['https://a.example/', 'https://b.example/']);
    input.write('https://c.example/\n');
    expect(inputs(await it.next())).toEqual(['https://c.example/']);
    // Nothing more comes: an abort ends the lines while a read waits.
    const next = it.next();
    ac.abort();
    expect(await next).toEqual({ done: true, value: undefined });
    expect(input.destroyed).toBe(true);
  });
});

describe('SeedTally', () => {
  test('counts accepted, refused by reason and https:// added; tells the first few of each', () => {
    const notices: string[] = [];
    const t = new SeedTally((l) => notices.push(l), 2);
    const inputs = ['https://a.example/', 'b.example', 'c.example', 'd.example', 'ftp://x/', 'not a url', 'also bad', 'more bad'];
    inputs.forEach((u, i) => t.add(parseSeed(u, i + 1)));
    expect(t.accepted).toBe(4);
    expect(t.schemeAdded).toBe(3);
    expect(t.refusedCount).toBe(4);
    expect(t.summary()).toBe('4 accepted, 4 refused (invalid-url 3, unsupported-scheme 1); 3 without a scheme taken as https://');
    expect(notices).toEqual([
      'line 2: no scheme in "b.example": taken as https://b.example/',
      'line 3: no scheme in "c.example": taken as https://c.example/',
      'line 5: refused "ftp://x/": unsupported-scheme (ftp)',
      'line 6: refused "not a url": invalid-url (cannot parse "https://not a url")',
    ]);
  });

  test('arguments have no line to name', () => {
    const notices: string[] = [];
    const t = new SeedTally((l) => notices.push(l));
    for (const l of argLines(['example.org'])) t.add(parseSeed(l.text, l.line));
    expect(notices).toEqual(['no scheme in "example.org": taken as https://example.org/']);
  });
});

describe('feedSeeds (--feed)', () => {
  it('gives each valid feed URL as a seed link of priority class 1 with its host, and counts every one in the tally', () => {
    const tally = new SeedTally();
    const seeds = feedSeeds(['https://news.example.org/feed.xml', 'example.net/atom', 'ftp://x.example/feed'], tally, 7);
    expect(seeds).toEqual([
      { host: 'news.example.org', link: { url: 'https://news.example.org/feed.xml', source_url: null, depth: 0, discovered_at: 7, is_seed: true, priority_class: 1 } },
      { host: 'example.net', link: { url: 'https://example.net/atom', source_url: null, depth: 0, discovered_at: 7, is_seed: true, priority_class: 1 } },
    ]);
    expect(tally.accepted).toBe(2);
    expect(tally.refusedCount).toBe(1);
    expect(tally.schemeAdded).toBe(1);
  });
});
