import { createHash } from 'node:crypto';
import { bitOffsets, hashUrl, shardOf } from '../../lib/bloom/hash';
import { generationsToAdd, generationsToCheck, mergeSeen, planShards } from '../../lib/bloom/generations';
import { MemoryBloom } from '../../lib/bloom/memory';
import { bloomParams, BloomSizeError, estimatedFpRate, fillRatio, MAX_SHARD_BYTES, totalBits } from '../../lib/bloom/sizing';

const urls = (tag: string, n: number): string[] => Array.from({ length: n }, (_, i) => `https://h${i % 97}.example/${tag}/${i}?q=${i * 7}`);

describe('bloomParams: m = −n·ln p/(ln 2)², k = (m/n)·ln 2', () => {
  it.each<[number, number, number, number]>([
    // n, p, bits per URL, k   (1%: 9.59 bits and 7 hashes; 0.5%: 11.03 bits and 8 hashes, as in the design notes)
    [1_000_000, 0.01, 9.585, 7],
    [1_000_000, 0.005, 11.03, 8],
    [10_000_000, 0.001, 14.38, 10],
  ])('n=%d p=%d: %d bits per URL, k=%d', (n, p, bitsPerUrl, k) => {
    const b = bloomParams(n, p);
    expect(totalBits(b) / n).toBeCloseTo(bitsPerUrl, 1);
    expect(b.k).toBe(k);
    expect(b.shards).toBe(1);
  });

  it('splits into equal shards of at most the cap (16 B URLs at 1%: 17.9 GiB)', () => {
    const b = bloomParams(16e9, 0.01);
    expect(b.shardBits / 8).toBeLessThanOrEqual(MAX_SHARD_BYTES);
    expect(totalBits(b) / 8 / 2 ** 30).toBeCloseTo(17.86, 1);
    expect(b.shards).toBe(Math.ceil((-16e9 * Math.log(0.01)) / Math.LN2 ** 2 / (MAX_SHARD_BYTES * 8)));
    const small = bloomParams(1_000_000, 0.01, 100_000);
    expect(small.shards).toBe(12);
    expect(small.shardBits).toBeLessThanOrEqual(800_000);
  });

  it.each<[number, number, number | undefined]>([
    [0, 0.01, undefined],
    [1000, 0, undefined],
    [1000, 1, undefined],
    [1000, 0.01, MAX_SHARD_BYTES + 1],
  ])('rejects n=%d p=%d shard=%s naming the setting', (n, p, shard) => {
    expect(() => bloomParams(n, p, shard)).toThrow(BloomSizeError);
    expect(() => bloomParams(n, p, shard)).toThrow(/CRAWL_BLOOM_/);
  });

  it('estimates the false-positive rate and fill from the count', () => {
    const b = bloomParams(1_000_000, 0.01);
    expect(estimatedFpRate(b, 0)).toBe(0);
    expect(estimatedFpRate(b, 1_000_000)).toBeCloseTo(0.01, 3);
    expect(estimatedFpRate(b, 3_000_000)).toBeGreaterThan(0.2);
    expect(fillRatio(b, 800_000)).toBe(0.8);
  });
});

describe('hash and offsets', () => {
  it('gives the MD5 words of the URL, whether hashed afresh or kept from a recent call', () => {
    const md5Words = (u: string): { w0: number; h1: number; h2: number } => {
      const d = createHash('md5').update(u, 'utf8').digest();
      return { w0: d.readUInt32LE(0), h1: d.readUInt32LE(4), h2: d.readUInt32LE(8) };
    };
    // More URLs than the recent-hash memory holds, asked twice (the second pass partly after it was emptied).
    const all = [...urls('recent', 40_000), 'http://ü.example/ä?q=€'];
    for (const pass of [all, [...all].reverse()]) expect(pass.map((u) => hashUrl(u))).toEqual(pass.map(md5Words));
  });

  it('is deterministic, within the shard, and spreads over shards', () => {
    const b = bloomParams(1_000_000, 0.01, 100_000);
    const h = hashUrl('https://a.example/x');
    expect(hashUrl('https://a.example/x')).toEqual(h);
    const offs = bitOffsets(h, b);
    expect(offs).toHaveLength(b.k);
    expect(new Set(offs).size).toBe(b.k);
    for (const o of offs) expect(o >= 0 && o < b.shardBits && Number.isInteger(o)).toBe(true);
    const counts = new Array<number>(b.shards).fill(0);
    for (const u of urls('spread', 12_000)) counts[shardOf(hashUrl(u), b)]++;
    for (const c of counts) expect(c).toBeGreaterThan(800);
  });

  it('plans one call per shard touched, with k offsets per URL, and merges answers by URL', () => {
    const b = bloomParams(1_000, 0.01, 100);
    const batch = urls('plan', 50);
    const calls = planShards(batch, b);
    expect(calls.reduce((n, c) => n + c.urls.length, 0)).toBe(50);
    for (const c of calls) {
      expect(c.offsets).toHaveLength(c.urls.length * b.k);
      for (const i of c.urls) expect(shardOf(hashUrl(batch[i]), b)).toBe(c.shard);
    }
    const seen = new Array<boolean>(50).fill(false);
    mergeSeen(seen, calls[0], calls[0].urls.map(() => 1));
    expect(seen.filter(Boolean)).toHaveLength(calls[0].urls.length);
  });
});

describe('generations', () => {
  it.each([
    [{ current: '3', previous: null, building: null }, ['3'], ['3']],
    [{ current: '3', previous: null, building: '4' }, ['3'], ['3', '4']],
    [{ current: '4', previous: '3', building: null }, ['4', '3'], ['4']],
    [{ current: null, previous: null, building: null }, [], []],
  ])('%j checks %j and adds to %j', (p, check, add) => {
    expect(generationsToCheck(p)).toEqual(check);
    expect(generationsToAdd(p)).toEqual(add);
  });
});

describe('MemoryBloom', () => {
  it('never forgets an added URL, and false positives stay near p', async () => {
    const b = new MemoryBloom(bloomParams(50_000, 0.01, 20_000));
    expect(b.params.shards).toBeGreaterThan(1);
    const added = urls('in', 50_000);
    expect(await b.check(added.slice(0, 10))).toEqual(new Array(10).fill(false));
    await b.add(added);
    expect((await b.check(added)).every(Boolean)).toBe(true);
    const others = await b.check(urls('out', 50_000));
    const fp = others.filter(Boolean).length / others.length;
    expect(fp).toBeGreaterThan(0.006);
    expect(fp).toBeLessThan(0.014);
    const s = b.stats();
    expect(s.added).toBeGreaterThan(49_000);
    expect(s.fillRatio).toBeCloseTo(1, 1);
    expect(s.estimatedFpRate).toBeCloseTo(0.01, 2);
  });

  it('counts a URL once however often it is added', () => {
    const b = new MemoryBloom(bloomParams(1000, 0.01));
    expect(b.put('https://a.example/')).toBe(true);
    expect(b.put('https://a.example/')).toBe(false);
    expect(b.stats().added).toBe(1);
  });
});
