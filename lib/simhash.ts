/**
 * 64-bit SimHash (Charikar 2002) of a text, for near-duplicate detection: similar texts get
 * fingerprints that differ in few bits. simhash-js only gives 32 bits, too few to tell pages
 * apart at crawl scale with a 3-bit threshold, so the 64-bit scheme lives here.
 *
 * The feature scheme is the one of the widely used Python `simhash` package (1e0ng/simhash),
 * so its published test vectors check ours (test/unit/simhash.test.ts):
 *   - lower-case the text, keep only word characters (letters, digits, '_', CJK), joined;
 *   - features are the overlapping 4-character shingles (the package's width; its 2013 releases
 *     used 2, which the oldest published vector needs), weighted by how often they occur;
 *   - each feature's hash is the low 64 bits of its MD5 (the digest's last 8 bytes, big-endian);
 *   - bit i of the fingerprint is 1 when the weighted votes for bit i are >= 0 (a tie gives 1,
 *     as the package's `Simhash(['aaa', 'bbb'])` vector requires).
 * Fingerprints travel as 16 lower-case hex digits (the `simhash64` fields of the schemas).
 */
import * as crypto from 'node:crypto';
import { md5Low64Latin1 } from './md5-short';

/** One-shot MD5: crypto.hash (Node >= 20.12) is about twice as fast as createHash for short inputs. */
const oneShot = (crypto as unknown as { hash?: (alg: string, data: string, enc: 'buffer') => Buffer }).hash;
const md5 = (s: string): Buffer => (oneShot ? oneShot('md5', s, 'buffer') : crypto.createHash('md5').update(s, 'utf8').digest());

const BITS = 64;
export const SHINGLE_WIDTH = 4;
/** Word characters as Python 3's `\w` (plus the CJK range the reference adds). */
const WORD = /[\p{L}\p{N}_\u4e00-\u9fcc]+/gu;
/**
 * Text beyond this many characters does not change the fingerprint: the first 200 000
 * characters describe a page well enough, and a huge page must not stall parse.
 */
export const MAX_SIMHASH_CHARS = 200_000;

/** The reference's features: 4-character shingles of the word characters, with counts. */
export function shingles(text: string, width = SHINGLE_WIDTH): Map<string, number> {
  const words = (text.length > MAX_SIMHASH_CHARS ? text.slice(0, MAX_SIMHASH_CHARS) : text).toLowerCase().match(WORD)?.join('') ?? '';
  // Shingles are of characters (code points), as in the reference; only astral characters
  // (surrogate pairs) need the slower code-point array.
  const chars: string | string[] = /[\uD800-\uDFFF]/.test(words) ? Array.from(words) : words;
  const counts = new Map<string, number>();
  const n = Math.max(chars.length - width + 1, 1);
  for (let i = 0; i < n; i++) {
    const f = typeof chars === 'string' ? chars.slice(i, i + width) : chars.slice(i, i + width).join('');
    counts.set(f, (counts.get(f) ?? 0) + 1);
  }
  return counts;
}

/** SimHash of weighted features, as 16 hex digits. */
export function simhashOfFeatures(features: Iterable<[string, number]>): string {
  const votes = new Float64Array(BITS);
  for (const [f, w] of features) {
    const slot = stringHashSlot(f);
    addVotes(votes, stringHashes[2 * slot], stringHashes[2 * slot + 1], w);
  }
  return fingerprintOf(votes);
}

/**
 * SimHash of a text and how many shingles it has (the sum of the feature weights), equal to
 * simhashOfFeatures(shingles(text, width)) but without a string and a Map entry per shingle:
 * a text of Latin-1 characters only (U+0000-U+00FF, the common case) is shingled from its UTF-8
 * bytes as packed integers with cached feature hashes; any other text takes the string way, with
 * cached hashes too. `utf8`, when the caller has it, is the text's UTF-8 encoding (the parse
 * worker encodes the text anyway); otherwise the text is encoded here.
 */
export function simhashWithCount(text: string, width = SHINGLE_WIDTH, utf8?: Uint8Array): { simhash: string; shingles: number } {
  if (width >= 1 && width <= 4) {
    const bytes = utf8 ?? Buffer.from(text.length > MAX_SIMHASH_CHARS ? text.slice(0, MAX_SIMHASH_CHARS) : text, 'utf8');
    const fast = latin1Simhash(bytes, width);
    if (fast) return fast;
  }
  const features = shingles(text, width);
  let n = 0;
  for (const w of features.values()) n += w;
  return { simhash: simhashOfFeatures(features), shingles: n };
}

export function simhash64(text: string, width = SHINGLE_WIDTH): string {
  return simhashWithCount(text, width).simhash;
}

/** Bit i of the vote counts the digest's low 64 bits (hi: bytes 8..11, lo: 12..15, big-endian). */
function addVotes(votes: Float64Array, hi: number, lo: number, w: number): void {
  // Branch-free (w times +1 or -1, exact): hash bits are coin flips, so a branch per bit
  // mispredicts half the time, and this loop runs 32 times per distinct shingle.
  for (let i = 0; i < 32; i++) {
    votes[i] += w * ((((lo >>> i) & 1) << 1) - 1);
    votes[i + 32] += w * ((((hi >>> i) & 1) << 1) - 1);
  }
}

/** A fingerprint's two halves as its 16 lower-case hex digits (the `simhash64` fields). */
function hex64(hi: number, lo: number): string {
  return (hi >>> 0).toString(16).padStart(8, '0') + (lo >>> 0).toString(16).padStart(8, '0');
}

function fingerprintOf(votes: Float64Array): string {
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < 32; i++) {
    if (votes[i] >= 0) lo |= 1 << i;
    if (votes[i + 32] >= 0) hi |= 1 << i;
  }
  return hex64(hi, lo);
}

/*
 * Feature hashes are cached: pages of a site (and of a language) share most of their shingles,
 * and an MD5 costs far more than a table probe. Both caches are bounded and simply emptied when
 * full, so memory stays a few MiB whatever the crawl sees.
 */
const STRING_CACHE_MAX = 1 << 16;
const stringSlots = new Map<string, number>();
const stringHashes = new Int32Array(2 * STRING_CACHE_MAX);

function stringHashSlot(f: string): number {
  let slot = stringSlots.get(f);
  if (slot === undefined) {
    if (stringSlots.size >= STRING_CACHE_MAX) stringSlots.clear();
    slot = stringSlots.size;
    const d = md5(f);
    stringHashes[2 * slot] = d.readInt32BE(8);
    stringHashes[2 * slot + 1] = d.readInt32BE(12);
    stringSlots.set(f, slot);
  }
  return slot;
}

/**
 * What each Latin-1 code unit becomes in the reference's `words`: its lower case when that is a
 * word character, 0 when WORD drops it, -1 when the fast path cannot follow (none today: every
 * Latin-1 character lower-cases to one Latin-1 character, and toLowerCase is context-free outside
 * the Greek sigma). Built from toLowerCase and WORD themselves so the two paths cannot disagree.
 */
const LATIN1_WORD = new Int16Array(256);
for (let c = 0; c < 256; c++) {
  const lc = String.fromCharCode(c).toLowerCase();
  LATIN1_WORD[c] = lc.length !== 1 || lc.charCodeAt(0) > 0xff ? -1 : /^[\p{L}\p{N}_\u4e00-\u9fcc]$/u.test(lc) ? lc.charCodeAt(0) : 0;
}

/**
 * Open-addressing table from a packed shingle (up to 4 Latin-1 characters, 8 bits each, in an
 * int32) to the two halves of its feature hash, side by side: [key, hi, lo] per slot, so a probe
 * touches one cache line rather than one in each of three arrays. 0 marks an empty slot: no
 * shingle packs to 0, since NUL is no word character.
 */
class HashCache {
  /** 3 int32s a slot: key, hash bytes 8..11, hash bytes 12..15. */
  readonly slots: Int32Array;
  size = 0;
  private readonly mask: number;
  private readonly shift: number;
  constructor(readonly bits: number) {
    this.slots = new Int32Array(3 << bits);
    this.mask = (1 << bits) - 1;
    this.shift = 32 - bits;
  }
  /** Where key's [key, hi, lo] start in `slots`, after hashing and storing it if it was not there. */
  at(key: number, width: number): number {
    const slots = this.slots;
    let i = Math.imul(key, 0x9e3779b1) >>> this.shift;
    let k: number;
    while ((k = slots[3 * i]) !== key && k !== 0) i = (i + 1) & this.mask;
    if (k === 0) {
      // Emptied at half load: probes stay short, and memory is fixed (12 bytes a slot).
      if (this.size >= this.mask >> 1) {
        slots.fill(0);
        this.size = 0;
        return this.at(key, width);
      }
      md5Low64Latin1(key, width, digest);
      slots[3 * i] = key;
      slots[3 * i + 1] = digest[0];
      slots[3 * i + 2] = digest[1];
      this.size++;
    }
    return 3 * i;
  }
}

/** 2^18 slots: 3 MiB, about 130,000 distinct shingles before the cache starts afresh. */
const HASH_CACHE_BITS = 18;
const digest = new Int32Array(2);
const hashCaches: HashCache[] = [];
/**
 * Per-call counting table, reused: [key, count] pairs side by side (one cache line per probe).
 * `used` lists the slots taken, to iterate them and to reset only those. Each call starts with
 * 2^12 slots (32 KiB, within L1/L2): a page has far fewer distinct shingles than characters, and
 * a table sized by its length was mostly cache misses. At half load it grows to twice its size,
 * or at once to the size the last page needed if that is more: pages of prose (8,000-10,000
 * distinct shingles) then rehash their keys once, not in three doublings. (The start stays a
 * constant: starting from the last page's size made the scan itself slower, 168 -> 202 us a page
 * of the benchmark's web.)
 */
const START_BITS = 12;
/** Distinct shingles of the last page counted: the size a growing table jumps to. */
let lastDistinct = 0;
let counts = new Int32Array(2 << START_BITS);
let used = new Int32Array(1 << START_BITS);

/** Table bits for `distinct` keys at most half load, at least START_BITS. */
function bitsFor(distinct: number): number {
  return Math.max(START_BITS, 32 - Math.clz32(2 * distinct));
}

/** Grow the live table (2^bits slots) holding `distinct` keys listed in `used` (see above); returns the new bits. */
function growCounts(bits: number, distinct: number): number {
  const keys = new Int32Array(distinct);
  const n = new Int32Array(distinct);
  for (let j = 0; j < distinct; j++) {
    const s = used[j];
    keys[j] = counts[2 * s];
    n[j] = counts[2 * s + 1];
    counts[2 * s] = 0;
  }
  const nb = Math.max(bits + 1, bitsFor(lastDistinct));
  if (counts.length < 2 << nb) counts = new Int32Array(2 << nb);
  if (used.length < 1 << nb) used = new Int32Array(1 << nb);
  const mask = (1 << nb) - 1;
  const shift = 32 - nb;
  for (let j = 0; j < distinct; j++) {
    let s = Math.imul(keys[j], 0x9e3779b1) >>> shift;
    while (counts[2 * s] !== 0) s = (s + 1) & mask;
    counts[2 * s] = keys[j];
    counts[2 * s + 1] = n[j];
    used[j] = s;
  }
  return nb;
}

/**
 * The votes of the fast path, by nibble: nibbles[16 * p + v] is the weight of the features whose
 * hash has value v in its nibble p (p 0-7: bits 0-31, the digest's bytes 12..15; 8-15: bits
 * 32-63, bytes 8..11). 16 additions a distinct shingle instead of 64; the 64 bit sums come out
 * of the 256 cells at the end (fingerprintOfNibbles). Reused, zeroed after each call.
 */
const nibbles = new Int32Array(256);

function addNibbles(hi: number, lo: number, w: number): void {
  for (let p = 0; p < 8; p++) {
    nibbles[(p << 4) | ((lo >>> (4 * p)) & 15)] += w;
    nibbles[128 | (p << 4) | ((hi >>> (4 * p)) & 15)] += w;
  }
}

/**
 * The fingerprint from the nibble votes and the total weight: bit i is 1 when the weight of the
 * features with bit i set is at least the weight of those without (votes >= 0, as addVotes).
 */
function fingerprintOfNibbles(total: number): string {
  let hi = 0;
  let lo = 0;
  for (let p = 0; p < 16; p++) {
    let b0 = 0;
    let b1 = 0;
    let b2 = 0;
    let b3 = 0;
    for (let v = 1; v < 16; v++) {
      const n = nibbles[(p << 4) | v];
      if ((v & 1) !== 0) b0 += n;
      if ((v & 2) !== 0) b1 += n;
      if ((v & 4) !== 0) b2 += n;
      if ((v & 8) !== 0) b3 += n;
    }
    const bits = (2 * b0 >= total ? 1 : 0) | (2 * b1 >= total ? 2 : 0) | (2 * b2 >= total ? 4 : 0) | (2 * b3 >= total ? 8 : 0);
    if (p < 8) lo |= bits << (4 * p);
    else hi |= bits << (4 * (p - 8));
  }
  nibbles.fill(0);
  return hex64(hi, lo);
}

/**
 * The fast path over the text's UTF-8 bytes: null when the text has a character above U+00FF
 * (the string way handles every case) or is shorter than one shingle. A Latin-1 character is one
 * byte (ASCII) or two (lead byte 0xC2/0xC3); MAX_SIMHASH_CHARS counts characters, as the string
 * way counts UTF-16 units (the same thing for Latin-1).
 */
function latin1Simhash(utf8: Uint8Array, width: number): { simhash: string; shingles: number } | null {
  const len = utf8.length;
  let bits = START_BITS;
  let table = counts;
  let slotMask = (1 << bits) - 1;
  let pairMask = (slotMask << 1) | 1;
  let shift = 32 - bits;
  const keyMask = width === 4 ? -1 : (1 << (8 * width)) - 1;
  let key = 0;
  let seen = 0;
  let distinct = 0;
  let chars = 0;
  // A local: compiled to CommonJS, the exported constant is a property load of `exports` on
  // every character (a tenth of this function's profile ticks, the parse worker's profile).
  const maxChars = MAX_SIMHASH_CHARS;
  let fallBack = false;
  // One pass: decode, lower-case, keep word characters, count shingles.
  for (let i = 0; i < len && chars < maxChars; i++, chars++) {
    let u = utf8[i];
    if (u >= 0x80) {
      // 0xC2 0x80..0xBF and 0xC3 0x80..0xBF are U+0080..U+00FF; anything else goes the string way.
      const next = i + 1 < len ? utf8[i + 1] : 0;
      if ((u !== 0xc2 && u !== 0xc3) || (next & 0xc0) !== 0x80) {
        fallBack = true;
        break;
      }
      u = ((u & 0x1f) << 6) | (next & 0x3f);
      i++;
    }
    const c = LATIN1_WORD[u];
    if (c <= 0) {
      if (c === 0) continue;
      fallBack = true;
      break;
    }
    key = ((key << 8) | c) & keyMask;
    if (++seen < width) continue;
    // Index of the slot's key (2 x slot); its count sits right after it.
    let at = (Math.imul(key, 0x9e3779b1) >>> shift) << 1;
    let k: number;
    while ((k = table[at]) !== key && k !== 0) at = (at + 2) & pairMask;
    if (k === key) {
      table[at + 1]++;
      continue;
    }
    table[at] = key;
    table[at + 1] = 1;
    used[distinct++] = at >> 1;
    if (distinct > slotMask >> 1) {
      bits = growCounts(bits, distinct);
      table = counts;
      slotMask = (1 << bits) - 1;
      pairMask = (slotMask << 1) | 1;
      shift = 32 - bits;
    }
  }
  lastDistinct = distinct;
  // A text shorter than one shingle is one short feature in the reference: the string way too.
  if (fallBack || seen < width) {
    for (let j = 0; j < distinct; j++) table[2 * used[j]] = 0;
    return null;
  }
  const cache = (hashCaches[width] ??= new HashCache(HASH_CACHE_BITS));
  const slots = cache.slots;
  for (let j = 0; j < distinct; j++) {
    const s = used[j];
    const k = table[2 * s];
    table[2 * s] = 0;
    const h = cache.at(k, width);
    addNibbles(slots[h + 1], slots[h + 2], table[2 * s + 1]);
  }
  const total = seen - width + 1;
  return { simhash: fingerprintOfNibbles(total), shingles: total };
}

function popcount32(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Bits that differ between two 16-hex-digit fingerprints. */
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
