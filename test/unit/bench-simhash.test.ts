/**
 * The fast SimHash path (packed Latin-1 shingles, cached feature hashes) against the reference
 * path it replaces: shingles() + simhashOfFeatures() must give the same fingerprint and count
 * for every text and width, including texts that fall back to strings (non-Latin-1, astral,
 * characters whose lower case is longer) and a text with more distinct shingles than the caches
 * hold (they empty mid-page). And the one-block MD5 those shingles are hashed with against
 * node:crypto.
 */
import { createHash } from 'node:crypto';
import { md5Low64Latin1 } from '../../lib/md5-short';
import { MAX_SIMHASH_CHARS, shingles, simhash64, simhashOfFeatures, simhashWithCount } from '../../lib/simhash';
import { rng } from '../support/rng';

function reference(text: string, width: number): { simhash: string; shingles: number } {
  const f = shingles(text, width);
  let n = 0;
  for (const w of f.values()) n += w;
  return { simhash: simhashOfFeatures(f), shingles: n };
}

const LATIN1 = 'abcdeFGHIJ xyz 0123 _ .,;!?-\t\nµßÿÀÉÖØàéöø²¼ª\u00a0\u00ad×÷';
const OTHER = ['İ', '你好', '\u{1D49C}', 'Ω', 'ﬁ', '\u4e00'];

function randomText(r: () => number, len: number, alphabet: string, extras: string[] = []): string {
  let s = '';
  for (let i = 0; i < len; i++) s += extras.length && r() < 0.02 ? extras[Math.floor(r() * extras.length)] : alphabet[Math.floor(r() * alphabet.length)];
  return s;
}

describe('simhashWithCount equals the reference shingling', () => {
  it('on random Latin-1 texts of every length, for widths 1 to 5', () => {
    const r = rng(8);
    for (let t = 0; t < 300; t++) {
      const text = randomText(r, Math.floor(r() * 400), LATIN1);
      for (const width of [1, 2, 3, 4, 5]) expect(simhashWithCount(text, width)).toEqual(reference(text, width));
    }
  });

  it('on texts that need the string path', () => {
    const r = rng(9);
    for (let t = 0; t < 100; t++) {
      const text = randomText(r, 50 + Math.floor(r() * 300), LATIN1, OTHER);
      for (const width of [2, 4]) expect(simhashWithCount(text, width)).toEqual(reference(text, width));
    }
  });

  it('on short and empty texts', () => {
    for (const text of ['', 'a', 'ab', 'abc', 'abcd', '  a b c ', '!!!', 'ÀB', 'İ']) {
      for (const width of [1, 2, 4]) expect(simhashWithCount(text, width)).toEqual(reference(text, width));
    }
  });

  it('when a page has more distinct shingles than the hash cache holds', () => {
    const text = randomText(rng(10), MAX_SIMHASH_CHARS + 1000, 'abcdefghijklmnopqrstuvwxyz0123456789');
    const fast = simhashWithCount(text);
    expect(fast).toEqual(reference(text, 4));
    expect(fast.shingles).toBe(MAX_SIMHASH_CHARS - 3);
    // Again with the caches now partly filled by that page.
    expect(simhash64(text)).toBe(fast.simhash);
  });

  it('from the text\'s UTF-8 bytes as from the string, whichever path the text takes', () => {
    const r = rng(11);
    for (let t = 0; t < 200; t++) {
      const text = randomText(r, Math.floor(r() * 300), LATIN1, t % 2 ? OTHER : []);
      for (const width of [1, 3, 4]) expect(simhashWithCount(text, width, Buffer.from(text, 'utf8'))).toEqual(reference(text, width));
    }
  });

  it('counts the limit in characters when Latin-1 letters take two UTF-8 bytes', () => {
    // 'é' and 'ß' are two bytes each: a cut by bytes would stop at about half the characters.
    const text = randomText(rng(12), MAX_SIMHASH_CHARS + 500, 'éßàöx ');
    const expected = reference(text, 4);
    expect(simhashWithCount(text)).toEqual(expected);
    expect(simhashWithCount(text, 4, Buffer.from(text, 'utf8'))).toEqual(expected);
  });

  it('repeated calls agree (the caches do not change results)', () => {
    const text = 'the quick brown fox jumps over the lazy dog '.repeat(30);
    const first = simhash64(text);
    for (let i = 0; i < 3; i++) expect(simhash64(text)).toBe(first);
    expect(first).toBe(reference(text, 4).simhash);
  });
});

describe('md5Low64Latin1 (one-block MD5 of a packed shingle)', () => {
  it('equals the last 8 bytes of node:crypto md5 of the same string', () => {
    const out = new Int32Array(2);
    const r = rng(11);
    const chars = 'az09_AZµßÿàéöø²¼ª\u0080\u00ff';
    for (let t = 0; t < 2000; t++) {
      const width = 1 + Math.floor(r() * 4);
      let key = 0;
      let s = '';
      for (let j = 0; j < width; j++) {
        const c = t < 1000 ? chars.charCodeAt(Math.floor(r() * chars.length)) : 1 + Math.floor(r() * 255);
        key = (key << 8) | c;
        s += String.fromCharCode(c);
      }
      md5Low64Latin1(key, width, out);
      const d = createHash('md5').update(s, 'utf8').digest();
      expect([out[0], out[1]]).toEqual([d.readInt32BE(8), d.readInt32BE(12)]);
    }
  });
});
