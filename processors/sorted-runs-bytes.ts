/**
 * Keys sorted by their bytes (unsigned, a shorter key before every key it is a prefix of: the
 * order LevelDB and latin1 string comparison give), stably, without a string or a comparator
 * call a key: a multikey radix sort over 4-byte windows. Each group of keys is first skipped past
 * the bytes all its keys share, then every key's next four bytes, how many of them it has (0-4,
 * or 5: more follow) and its place in the group are packed into one 64-bit word and the group's
 * words sorted natively (BigUint64Array.prototype.sort); keys equal in a word form the next
 * groups, one four bytes deeper. Small groups are sorted by insertion, comparing bytes.
 *
 * Used by processors/sorted-runs.ts's sortRunBuffer for runs keyed in byte order (a rebuild's
 * row and index runs), where comparing latin1 strings was about half the sort thread's CPU.
 */

/** Groups up to this size are sorted by insertion (a native sort's call costs more). */
const SMALL = 12;
/** A group's place of a key fits in the word's low 24 bits. */
export const MAX_BYTE_SORT_KEYS = 1 << 24;

export interface ByteSorted {
  /** Record numbers in key order (equal keys in the order added). */
  order: Int32Array;
  /** Per record: 1 if it is the last added of its key (the one a run keeps), else 0. */
  last: Uint8Array;
}

/**
 * Sort records `0..n-1` by key, record i's key being `bufs[src[i]]` bytes `starts[i]` to
 * `ends[i]`. Equal keys keep their record order; `last` marks the last of each key.
 */
export function sortByKeyBytes(bufs: readonly Uint8Array[], src: ArrayLike<number>, starts: ArrayLike<number>, ends: ArrayLike<number>): ByteSorted {
  const n = src.length;
  if (n >= MAX_BYTE_SORT_KEYS) throw new Error(`sortByKeyBytes: ${n} keys, at most ${MAX_BYTE_SORT_KEYS - 1}`);
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  const last = new Uint8Array(n).fill(1);
  const words = new BigUint64Array(Math.max(n, 1));
  const w8 = new Uint8Array(words.buffer);
  const w32 = new Uint32Array(words.buffer);
  const tmp = new Int32Array(Math.max(n, 1));

  /** Keys a and b compared from byte `d` on (both known equal before it). */
  const compareFrom = (a: number, b: number, d: number): number => {
    const ba = bufs[src[a]];
    const bb = bufs[src[b]];
    const sa = starts[a];
    const sb = starts[b];
    const la = ends[a] - sa;
    const lb = ends[b] - sb;
    const m = la < lb ? la : lb;
    for (let x = d; x < m; x++) {
      const ca = ba[sa + x];
      const cb = bb[sb + x];
      if (ca !== cb) return ca - cb;
    }
    return la - lb;
  };

  // Groups to sort: [lo, hi, depth] (every key of order[lo..hi) shares its first `depth` bytes).
  const stack: number[] = [0, n, 0];
  while (stack.length) {
    const d0 = stack.pop()!;
    const hi = stack.pop()!;
    const lo = stack.pop()!;
    const g = hi - lo;
    if (g < 2) continue;
    if (g <= SMALL) {
      // Insertion sort (stable: a key moves only past greater ones).
      for (let j = lo + 1; j < hi; j++) {
        const r = order[j];
        let k = j - 1;
        while (k >= lo && compareFrom(order[k], r, d0) > 0) {
          order[k + 1] = order[k];
          k--;
        }
        order[k + 1] = r;
      }
      for (let j = lo; j + 1 < hi; j++) if (compareFrom(order[j], order[j + 1], d0) === 0) last[order[j]] = 0;
      continue;
    }
    // The bytes all keys of the group share, from d0 on.
    const f = order[lo];
    const fb = bufs[src[f]];
    const fs = starts[f];
    let d = ends[f] - fs;
    for (let j = lo + 1; j < hi && d > d0; j++) {
      const r = order[j];
      const b = bufs[src[r]];
      const s = starts[r];
      const len = ends[r] - s;
      const m = len < d ? len : d;
      let x = d0;
      while (x < m && b[s + x] === fb[fs + x]) x++;
      d = x;
    }
    // One word a key (little-endian: byte 7 the most significant): its bytes d..d+3 (0 past its
    // end), how many it has there (5: more follow), its place in the group.
    for (let j = 0; j < g; j++) {
      const r = order[lo + j];
      const b = bufs[src[r]];
      const s = starts[r] + d;
      const rem = ends[r] - s;
      const o = j * 8;
      w8[o + 7] = rem > 0 ? b[s] : 0;
      w8[o + 6] = rem > 1 ? b[s + 1] : 0;
      w8[o + 5] = rem > 2 ? b[s + 2] : 0;
      w8[o + 4] = rem > 3 ? b[s + 3] : 0;
      w8[o + 3] = rem > 4 ? 5 : rem;
      w8[o + 2] = j >>> 16;
      w8[o + 1] = (j >>> 8) & 255;
      w8[o] = j & 255;
    }
    words.subarray(0, g).sort();
    for (let j = 0; j < g; j++) tmp[j] = order[lo + (w32[2 * j] & 0xffffff)];
    order.set(tmp.subarray(0, g), lo);
    // Keys equal in their word: the same key if it ended there, else a group four bytes deeper.
    let j = 0;
    while (j < g) {
      const top = w32[2 * j + 1];
      const count = w32[2 * j] >>> 24;
      let k = j + 1;
      while (k < g && w32[2 * k + 1] === top && w32[2 * k] >>> 24 === count) k++;
      if (k - j > 1) {
        if (count < 5) for (let t = j; t < k - 1; t++) last[order[lo + t]] = 0;
        else stack.push(lo + j, lo + k, d + 4);
      }
      j = k;
    }
  }
  return { order, last };
}
