/**
 * 64-bit SimHash (Charikar 2002) of a page's text, for near-duplicate detection: similar texts
 * get fingerprints that differ in few bits. This is version 2 (SIMHASH_VERSION), the one parse
 * writes since #35; version 1 (MD5 of 4-character shingles, lib/simhash-v1.ts) is kept only to
 * recompute old values. docs/simhash.md says what consumers see and how the two compare.
 *
 * Features, in one pass over the text's UTF-8 bytes, whatever its script:
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
 * randomness, and the per-character work is table reads, rotations and XORs.
 *
 * That per-character loop and the vote run as WebAssembly (lib/simhash-wasm/src/lib.rs, built
 * into lib/simhash-wasm.ts), with SIMD: ASCII text in blocks of 32 bytes without a branch a byte,
 * two bytes a table read. The same loop in JavaScript took two to four times the CPU of the
 * module's first version, which in turn took 2.5-6 times that of this one; each time the pages
 * whose text is most of their bytes had gone over a tenth of extraction's CPU (docs/simhash.md).
 * This file builds the tables into the module's memory and copies the text in.
 */
import { xxh64 } from '@node-rs/xxhash';
import { SIMHASH_WASM_BASE64 } from './simhash-wasm';

/** The fingerprint algorithm parse writes (the `simhash_version` fields of the schemas). */
export const SIMHASH_VERSION = 2;
/**
 * Text beyond this many bytes of UTF-8 does not change the fingerprint (a character cut there is
 * left out): the first 256 KiB describe a page well enough, and a huge page must not stall parse.
 */
export const MAX_SIMHASH_BYTES = 256 * 1024;

/** Character classes: what a code unit is to the feature scheme (lib/simhash-wasm/src/lib.rs too). */
const SEPARATOR = 0;
const WORD = 1;
const UNSPACED = 2;

/** Node's WebAssembly API, what this file uses of it (tsconfig's libraries do not declare it). */
declare const WebAssembly: {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: object };
};

/** The WebAssembly module's instance, one a thread: its tables, text buffer and result. */
interface Features {
  /** Writes the fingerprint of text[0, n) into result; returns how many features voted. */
  fingerprint(n: number): number;
  /** MAX_SIMHASH_BYTES long: the text's UTF-8 bytes go here. */
  text: Uint8Array;
  /** The fingerprint's two halves: lo, hi. */
  result: Uint32Array;
}
let features: Features | null = null;

const WORD_CHAR = /^[\p{L}\p{N}\p{M}_]/u;
const UNSPACED_SCRIPT = /^[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]/u;

/**
 * The 16 bits of x spread over the even bits of 32 (bit b to bit 2b). A character's value goes
 * to the module with its two 32-bit halves interleaved bit by bit (the low half's bit b at bit
 * 2b, the high half's at 2b + 1), so that the module rotates both halves by k with one 64-bit
 * rotation by 2k.
 */
function spread16(x: number): number {
  x = (x | (x << 8)) & 0x00ff00ff;
  x = (x | (x << 4)) & 0x0f0f0f0f;
  x = (x | (x << 2)) & 0x33333333;
  return (x | (x << 1)) & 0x55555555;
}

/**
 * The module, with the class of every BMP character and its folded form's 64-bit hash in its
 * tables, built on first use (about 60 ms a thread). A character past U+FFFF is classed by its
 * high surrogate: those of planes 2 and 3 (CJK Extensions B-H) are unspaced characters, the
 * others (emoji, historic scripts, mathematical letters) separators; its value is
 * rotl(value(high), 1) XOR value(low), where a surrogate's value is the XXH64 of its two bytes
 * (big-endian), seed 1 (the module combines them).
 */
function instantiate(): Features {
  const exports = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(SIMHASH_WASM_BASE64, 'base64'))).exports as {
    memory: { buffer: ArrayBuffer };
    fingerprint(n: number): number;
    init(): void;
    cls_ptr(): number;
    v_ptr(): number;
    text_ptr(): number;
    result_ptr(): number;
  };
  // The module allocates nothing, so its memory never grows and these views stay valid.
  const memory = exports.memory.buffer;
  const cls = new Uint8Array(memory, exports.cls_ptr(), 65536);
  // Each value as two 32-bit words (little-endian), its halves bit-interleaved (see spread16).
  const v = new Int32Array(memory, exports.v_ptr(), 2 * 65536);
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
    const lo = Number(h & 0xffffffffn);
    const hi = Number(h >> 32n);
    v[2 * c] = spread16(lo & 0xffff) | (spread16(hi & 0xffff) << 1);
    v[2 * c + 1] = spread16(lo >>> 16) | (spread16(hi >>> 16) << 1);
  }
  // The module derives its own tables from these (two ASCII bytes' values at once, ...).
  exports.init();
  return {
    fingerprint: exports.fingerprint,
    text: new Uint8Array(memory, exports.text_ptr(), MAX_SIMHASH_BYTES),
    result: new Uint32Array(memory, exports.result_ptr(), 2),
  };
}

const utf8Encoder = new TextEncoder();

/** Every byte's two lower-case hex digits. */
const HEX = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));

/**
 * A fingerprint's two halves as its 16 lower-case hex digits (the `simhash64` fields). By bytes
 * from a table: toString(16) and padStart took 0.35 us a call, most of a small page's SimHash.
 */
export function hex64(hi: number, lo: number): string {
  return (
    HEX[hi >>> 24] + HEX[(hi >>> 16) & 255] + HEX[(hi >>> 8) & 255] + HEX[hi & 255] +
    HEX[lo >>> 24] + HEX[(lo >>> 16) & 255] + HEX[(lo >>> 8) & 255] + HEX[lo & 255]
  );
}

/**
 * Version 2 SimHash of a text and how many features voted. The text may be given as its UTF-8
 * bytes (the parse worker has them: the text record's block), which is what the features are
 * read from; a string is encoded straight into the module's buffer. A text without a word or
 * an unspaced character gets all ones, as a tie would.
 */
export function simhashWithCount(text: string | Uint8Array): { simhash: string; shingles: number } {
  const f = (features ??= instantiate());
  let n: number;
  if (typeof text === 'string') {
    // Stops before a character that does not fit whole: the cut character is left out.
    n = utf8Encoder.encodeInto(text.length > MAX_SIMHASH_BYTES ? text.slice(0, MAX_SIMHASH_BYTES) : text, f.text).written;
  } else {
    n = Math.min(text.length, MAX_SIMHASH_BYTES);
    f.text.set(n === text.length ? text : text.subarray(0, n));
  }
  const shingles = f.fingerprint(n);
  return { simhash: hex64(f.result[1], f.result[0]), shingles };
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
