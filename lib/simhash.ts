/**
 * 64-bit SimHash (Charikar 2002) of a page's text, for near-duplicate detection: similar texts
 * get fingerprints that differ in few bits. This is version 2 (SIMHASH_VERSION), the one parse
 * writes since #35; version 1 (MD5 of 4-character shingles, lib/simhash-v1.ts) is kept only to
 * recompute old values. docs/simhash.md says what consumers see and how the two compare.
 *
 * Features, in one pass over the text's UTF-16 code units, whatever its script:
 *   - Scripts written with spaces between words: word 2-shingles. A word is a maximal run of
 *     letters, digits, combining marks and '_' (Unicode \p{L}\p{N}\p{M}); each pair of
 *     consecutive words is one feature.
 *   - Scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Khmer, Myanmar, by
 *     Unicode script extension): character 2-shingles within each run of such characters.
 *   - Characters are folded first (NFKC, then lower case): `Ａ`, `A` and `a` are one character.
 *   - Every occurrence votes (weight 1): bit i of the fingerprint is 1 when at least half of the
 *     features have bit i set.
 * Measured on the 41 corpus pages with more than 2,000 characters of text (docs/simhash.md):
 * distinct pages lie 17-46 bits apart, 30.7 on average (version 1: 13-42, 25.6), and replacing
 * 0.1% or 0.3% of a page's words stays within 3 bits on 39 of 41 pages (version 1: 41 of 41):
 * fewer pages are ever called copies of others, and a few more small edits reach the indexer.
 *
 * Feature hashes are tabulation hashes: each folded character has a random 64-bit value (the
 * XXH64 of its UTF-8 bytes, from @node-rs/xxhash, computed once per thread), a word's hash
 * is the XOR of its characters' values, each rotated by its distance from the word's end, and
 * a shingle's hash is the XOR of its first member's hash rotated and its second's. Why not a
 * library call per feature: measured over the words of a real page (bench/simhash-bench.ts
 * prints it), the cheapest library call (xxhash-wasm h32, js-xxhash on bytes, @node-rs/xxhash)
 * costs 75-250 ns a word, while the whole fingerprint has about 5 ns a character, 25 ns a word,
 * to stay within a tenth of the page's extraction (#35's target). So the library supplies the
 * randomness, and the per-character work is two table reads, two rotations and two XORs.
 */
import { xxh64 } from '@node-rs/xxhash';

/** The fingerprint algorithm parse writes (the `simhash_version` fields of the schemas). */
export const SIMHASH_VERSION = 2;
/**
 * Text beyond this many bytes of UTF-8 does not change the fingerprint (a character cut there is
 * left out): the first 256 KiB describe a page well enough, and a huge page must not stall parse.
 */
export const MAX_SIMHASH_BYTES = 256 * 1024;

/** Character classes: what a code unit is to the feature scheme. */
const SEPARATOR = 0;
const WORD = 1;
const UNSPACED = 2;

interface Tables {
  cls: Uint8Array;
  lo: Int32Array;
  hi: Int32Array;
}
let tables: Tables | null = null;
/** The tables' slot for a character past U+FFFF (astral()). */
const ASTRAL = 0x10000;

/**
 * A character past U+FFFF (cp - 0x10000 given) into the tables' ASTRAL slot: its class is its
 * high surrogate's, its value rotl(value(high), 1) XOR value(low). Returns the slot.
 */
function astral(t: Tables, cp: number): number {
  const high = 0xd800 | (cp >>> 10);
  const low = 0xdc00 | (cp & 0x3ff);
  t.cls[ASTRAL] = t.cls[high];
  t.lo[ASTRAL] = ((t.lo[high] << 1) | (t.lo[high] >>> 31)) ^ t.lo[low];
  t.hi[ASTRAL] = ((t.hi[high] << 1) | (t.hi[high] >>> 31)) ^ t.hi[low];
  return ASTRAL;
}

const WORD_CHAR = /^[\p{L}\p{N}\p{M}_]/u;
const UNSPACED_SCRIPT = /^[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]/u;

/**
 * The class of every BMP character and its folded form's 64-bit hash, built on first use (about
 * 60 ms a thread). A character past U+FFFF is classed by its high surrogate: those of planes 2
 * and 3 (CJK Extensions B-H) are unspaced characters, the others (emoji, historic scripts,
 * mathematical letters) separators; its value is rotl(value(high), 1) XOR value(low), where a
 * surrogate's value is the XXH64 of its two bytes (big-endian), seed 1.
 */
function buildTables(): Tables {
  // One more entry than the BMP: ASTRAL, the slot of the last character past U+FFFF read.
  const cls = new Uint8Array(ASTRAL + 1);
  const lo = new Int32Array(ASTRAL + 1);
  const hi = new Int32Array(ASTRAL + 1);
  const unit = Buffer.alloc(2);
  for (let c = 0; c < 65536; c++) {
    let h: bigint;
    if (c >= 0xd800 && c <= 0xdfff) {
      cls[c] = c >= 0xd840 && c <= 0xd87f ? UNSPACED : SEPARATOR;
      unit.writeUInt16BE(c);
      h = xxh64(unit, 1n);
    } else {
      const folded = String.fromCharCode(c).normalize('NFKC').toLowerCase();
      cls[c] = !WORD_CHAR.test(folded) ? SEPARATOR : UNSPACED_SCRIPT.test(folded) ? UNSPACED : WORD;
      if (cls[c] === SEPARATOR) continue;
      h = xxh64(folded, 0n);
    }
    lo[c] = Number(h & 0xffffffffn) | 0;
    hi[c] = Number(h >> 32n) | 0;
  }
  return { cls, lo, hi };
}

/** The features of the text being fingerprinted, two int32 halves each (lo, hi); grown as needed. */
let featureBuf = new Int32Array(1 << 14);
/** Votes: how many features have each bit set (bits 0-31 of the lo halves, then of the hi halves). */
const wide = new Int32Array(64);
const M = 0x11111111;

/** A fingerprint's two halves as its 16 lower-case hex digits (the `simhash64` fields). */
export function hex64(hi: number, lo: number): string {
  return (hi >>> 0).toString(16).padStart(8, '0') + (lo >>> 0).toString(16).padStart(8, '0');
}

/**
 * The features of a text's first `n` UTF-8 bytes into featureBuf; returns how many ints were
 * written (two a feature). Tokens are words (runs of word characters) and single unspaced
 * characters, in order; each token makes one feature with the token before it (none before the
 * first): rotl(previous, 5) XOR this one. The vote is a separate loop (votesOf): one loop doing
 * both was a third slower.
 */
function collectFeatures(utf8: Uint8Array, n: number, t: Tables): number {
  if (featureBuf.length < n + 4) featureBuf = new Int32Array(n + 4);
  const buf = featureBuf;
  const cls = t.cls;
  const tl = t.lo;
  const th = t.hi;
  let out = 0;
  let inWord = false;
  /** The open word's hash so far. */
  let rl = 0;
  let rh = 0;
  /** The last token's hash. */
  let pl = 0;
  let ph = 0;
  for (let i = 0; i < n; i++) {
    let c = utf8[i];
    if (c >= 0x80) {
      // Decoded here, not in a helper: so the loop compiled to the fastest code measured.
      if (c < 0xe0) {
        if (i + 1 >= n) break;
        c = ((c & 0x1f) << 6) | (utf8[++i] & 0x3f);
      } else if (c < 0xf0) {
        if (i + 2 >= n) break;
        c = ((c & 0x0f) << 12) | ((utf8[i + 1] & 0x3f) << 6) | (utf8[i + 2] & 0x3f);
        i += 2;
      } else {
        if (i + 3 >= n) break;
        c = astral(t, (((c & 0x07) << 18) | ((utf8[i + 1] & 0x3f) << 12) | ((utf8[i + 2] & 0x3f) << 6) | (utf8[i + 3] & 0x3f)) - 0x10000);
        i += 3;
      }
    }
    const k = cls[c];
    if (k === WORD) {
      if (inWord) {
        rl = ((rl << 1) | (rl >>> 31)) ^ tl[c];
        rh = ((rh << 1) | (rh >>> 31)) ^ th[c];
      } else {
        rl = tl[c];
        rh = th[c];
        inWord = true;
      }
      continue;
    }
    if (inWord) {
      buf[out++] = ((pl << 5) | (pl >>> 27)) ^ rl;
      buf[out++] = ((ph << 5) | (ph >>> 27)) ^ rh;
      pl = rl;
      ph = rh;
      inWord = false;
    }
    if (k === UNSPACED) {
      const cl = tl[c];
      const ch = th[c];
      buf[out++] = ((pl << 5) | (pl >>> 27)) ^ cl;
      buf[out++] = ((ph << 5) | (ph >>> 27)) ^ ch;
      pl = cl;
      ph = ch;
    }
  }
  if (inWord) {
    buf[out++] = ((pl << 5) | (pl >>> 27)) ^ rl;
    buf[out++] = ((ph << 5) | (ph >>> 27)) ^ rh;
  }
  return out;
}

/**
 * The fingerprint of the features in featureBuf[0, ints): bit i is 1 when at least half of the
 * features have bit i set. Counted 8 bits at a time: nibble counters for bits k, k+4, k+8, ...
 * (k = 0..3) of each half, emptied into `wide` every 15 features, before a nibble can overflow
 * (24 operations a feature instead of 64 additions).
 */
function votesOf(ints: number): string {
  const buf = featureBuf;
  wide.fill(0);
  for (let j = 0; j < ints; ) {
    let a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0, b2 = 0, b3 = 0;
    for (const end = Math.min(ints, j + 30); j < end; j += 2) {
      const fl = buf[j];
      const fh = buf[j + 1];
      a0 += fl & M;
      a1 += (fl >>> 1) & M;
      a2 += (fl >>> 2) & M;
      a3 += (fl >>> 3) & M;
      b0 += fh & M;
      b1 += (fh >>> 1) & M;
      b2 += (fh >>> 2) & M;
      b3 += (fh >>> 3) & M;
    }
    for (let q = 0; q < 32; q += 4) {
      wide[q] += (a0 >>> q) & 15;
      wide[q + 1] += (a1 >>> q) & 15;
      wide[q + 2] += (a2 >>> q) & 15;
      wide[q + 3] += (a3 >>> q) & 15;
      wide[32 + q] += (b0 >>> q) & 15;
      wide[33 + q] += (b1 >>> q) & 15;
      wide[34 + q] += (b2 >>> q) & 15;
      wide[35 + q] += (b3 >>> q) & 15;
    }
  }
  const features = ints >> 1;
  let lo = 0;
  let hi = 0;
  for (let j = 0; j < 32; j++) {
    if (2 * wide[j] >= features) lo |= 1 << j;
    if (2 * wide[32 + j] >= features) hi |= 1 << j;
  }
  return hex64(hi, lo);
}

/**
 * Version 2 SimHash of a text and how many features voted. The text may be given as its UTF-8
 * bytes (the parse worker has them: the text record's block), which is what the features are
 * read from: a typed array reads at a third of charCodeAt's cost. A text without a word or an
 * unspaced character gets all ones, as a tie would.
 */
export function simhashWithCount(text: string | Uint8Array): { simhash: string; shingles: number } {
  const utf8 = typeof text === 'string' ? Buffer.from(text.length > MAX_SIMHASH_BYTES ? text.slice(0, MAX_SIMHASH_BYTES) : text, 'utf8') : text;
  const ints = collectFeatures(utf8, Math.min(utf8.length, MAX_SIMHASH_BYTES), (tables ??= buildTables()));
  return { simhash: votesOf(ints), shingles: ints >> 1 };
}

/** Version 2 SimHash of a text (or its UTF-8 bytes) as 16 hex digits. */
export function simhash64(text: string | Uint8Array): string {
  return simhashWithCount(text).simhash;
}

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Bits that differ between two 16-hex-digit fingerprints (of the same version: see docs/simhash.md). */
export function hammingDistance(a: string, b: string): number {
  const hi = parseInt(a.slice(0, 8), 16) ^ parseInt(b.slice(0, 8), 16);
  const lo = parseInt(a.slice(8, 16), 16) ^ parseInt(b.slice(8, 16), 16);
  return popcount32(hi) + popcount32(lo);
}

/**
 * The four 16-bit blocks of a fingerprint, most significant first. Two fingerprints within 3
 * bits share at least one block exactly (4 blocks, at most 3 touched), so tables keyed by
 * block find every candidate without comparing against every page.
 */
export function blocks16(h: string): [number, number, number, number] {
  return [0, 4, 8, 12].map((i) => parseInt(h.slice(i, i + 4), 16)) as [number, number, number, number];
}

/** The fingerprint as an unsigned 64-bit integer (for comparing with published decimal values). */
export function simhashToBigInt(h: string): bigint {
  return BigInt(`0x${h}`);
}
