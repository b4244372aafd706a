/**
 * SimHash version 1: the fingerprint kcrawl wrote before version 2 (lib/simhash.ts), kept so an
 * old value can still be recomputed from its text (docs/simhash.md) and checked against the
 * published vectors it was built on. Parse no longer calls it.
 *
 * The feature scheme of the Python `simhash` package (1e0ng/simhash):
 *   - lower-case the text, keep only word characters (letters, digits, '_', CJK), joined;
 *   - features are the overlapping 4-character shingles, weighted by how often they occur;
 *   - each feature's hash is the low 64 bits of its MD5 (the digest's last 8 bytes, big-endian);
 *   - bit i of the fingerprint is 1 when the weighted votes for bit i are >= 0.
 * This is the plain string way (a string and a Map entry per shingle, an MD5 per distinct one):
 * correct for every text, and slow, which is why version 2 exists.
 */
import * as crypto from 'node:crypto';
import { hex64 } from './simhash';

/** Text beyond this many UTF-16 units did not change a version 1 fingerprint. */
const MAX_SIMHASH_CHARS = 200_000;

export const SHINGLE_WIDTH_V1 = 4;
/** Word characters as Python 3's `\w` (plus the CJK range the reference adds). */
const WORD = /[\p{L}\p{N}_\u4e00-\u9fcc]+/gu;

/** The reference's features: `width`-character shingles of the word characters, with counts. */
export function shinglesV1(text: string, width = SHINGLE_WIDTH_V1): Map<string, number> {
  const words = (text.length > MAX_SIMHASH_CHARS ? text.slice(0, MAX_SIMHASH_CHARS) : text).toLowerCase().match(WORD)?.join('') ?? '';
  // Shingles are of code points, as in the reference.
  const chars = Array.from(words);
  const counts = new Map<string, number>();
  const n = Math.max(chars.length - width + 1, 1);
  for (let i = 0; i < n; i++) {
    const f = chars.slice(i, i + width).join('');
    counts.set(f, (counts.get(f) ?? 0) + 1);
  }
  return counts;
}

/** Version 1's SimHash of weighted features, as 16 hex digits (a tie gives 1). */
export function simhashOfFeaturesV1(features: Iterable<[string, number]>): string {
  const votes = new Float64Array(64);
  for (const [f, w] of features) {
    const d = crypto.createHash('md5').update(f, 'utf8').digest();
    const hi = d.readUInt32BE(8);
    const lo = d.readUInt32BE(12);
    for (let i = 0; i < 32; i++) {
      votes[i] += (lo >>> i) & 1 ? w : -w;
      votes[i + 32] += (hi >>> i) & 1 ? w : -w;
    }
  }
  let hi = 0;
  let lo = 0;
  for (let i = 0; i < 32; i++) {
    if (votes[i] >= 0) lo |= 1 << i;
    if (votes[i + 32] >= 0) hi |= 1 << i;
  }
  return hex64(hi, lo);
}

/** Version 1's fingerprint of a text (simhash_version 1 in crawl.content and the handoff events). */
export function simhash64V1(text: string, width = SHINGLE_WIDTH_V1): string {
  return simhashOfFeaturesV1(shinglesV1(text, width));
}
