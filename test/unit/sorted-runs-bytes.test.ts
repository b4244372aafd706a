import { sortByKeyBytes } from '../../processors/sorted-runs-bytes';

/** A small deterministic generator (tests need the same keys every run). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** Keys laid out in chunks as sortRunBuffer sees them: a chunk per `per` keys, each key after a gap of junk bytes. */
function layout(keys: Buffer[], per: number): { bufs: Buffer[]; src: number[]; starts: number[]; ends: number[] } {
  const bufs: Buffer[] = [];
  const src: number[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  for (let c = 0; c * per < keys.length; c++) {
    const parts: Buffer[] = [];
    let at = 0;
    for (const k of keys.slice(c * per, (c + 1) * per)) {
      parts.push(Buffer.from([0xff, 0x00, 0x7f]), k);
      at += 3;
      src.push(c);
      starts.push(at);
      ends.push(at + k.length);
      at += k.length;
    }
    bufs.push(Buffer.concat(parts));
  }
  return { bufs, src, starts, ends };
}

/** The reference: a stable comparator sort of Buffer.compare, the last of each key marked. */
function reference(keys: Buffer[]): { order: number[]; last: number[] } {
  const order = keys.map((_, i) => i).sort((a, b) => Buffer.compare(keys[a], keys[b]) || a - b);
  const last = keys.map(() => 1);
  for (let j = 0; j + 1 < order.length; j++) if (keys[order[j]].equals(keys[order[j + 1]])) last[order[j]] = 0;
  return { order, last };
}

describe('sortByKeyBytes', () => {
  it.each([
    ['bytes of every value, short keys, many equal', 1, 5000, (r: () => number) => Buffer.from(Array.from({ length: Math.floor(r() * 4) }, () => Math.floor(r() * 4) * 85))],
    ['zero bytes and keys that are prefixes of others', 2, 5000, (r: () => number) => Buffer.concat([Buffer.from('ab'), Buffer.alloc(Math.floor(r() * 9)), Buffer.from(r() < 0.5 ? '' : '\u0000\u0001')])],
    ['URLs sharing long prefixes (hosts of many URLs), some added twice', 3, 30000, (r: () => number) => Buffer.from(`https://www.host-${Math.floor(r() * r() * 40)}-site.com/${'path/'.repeat(Math.floor(r() * 3))}${Math.floor(r() * 2000).toString(36)}${r() < 0.3 ? '\u00e9\u{1F600}' : ''}`)],
    ['a single key, and groups of every small size', 4, 1, () => Buffer.from('only')],
  ])('orders as Buffer.compare with ties in the order added, the last of each key marked: %s', (_name, seed, n, make) => {
    const r = rng(seed as number);
    const keys = Array.from({ length: n as number }, () => (make as (r: () => number) => Buffer)(r));
    const { bufs, src, starts, ends } = layout(keys, 777);
    const got = sortByKeyBytes(bufs, src, starts, ends);
    const want = reference(keys);
    expect(Array.from(got.order)).toEqual(want.order);
    expect(Array.from(got.last)).toEqual(want.last);
  });

  it('no keys', () => {
    const got = sortByKeyBytes([], [], [], []);
    expect(got.order.length).toBe(0);
    expect(got.last.length).toBe(0);
  });
});
