/**
 * SimHash version 1 (lib/simhash-v1.ts, kept to recompute old values) against published
 * reference vectors.
 *
 * Reference: the Python `simhash` package (PyPI `simhash`), github.com/1e0ng/simhash,
 * tests/test_simhash.py:
 *   - current test_value: Simhash(['aaa', 'bbb']).value == 8637903533912358349 (features given
 *     directly: checks the MD5 low-64-bit hash, the bit order and the tie rule);
 *   - the 2013-era test_value (when its shingle width was 2):
 *     Simhash('How are you? I AM fine. Thanks. And you?', f=64).value == 6560575042654586091,
 *     with f=32 == 3954722027 (the low 32 votes of the same scheme);
 *     distance to 'How old are you ? :-) i am fine. Thanks. And you?' == 7 (f=64), 3 (f=32);
 *   - test_chinese: '你好　世界！　　呼噜。' vs '你好，世界　呼噜' == 0, and the "blar" texts
 *     within 3 bits of each other (sh4/sh6, sh5/sh6 < 3).
 */
import { hammingDistance, simhashToBigInt } from '../../lib/simhash';
import { shinglesV1 as shingles, simhash64V1 as simhash64, simhashOfFeaturesV1 as simhashOfFeatures } from '../../lib/simhash-v1';

const HOW = 'How are you? I AM fine. Thanks. And you?';
const HOW_OLD = 'How old are you ? :-) i am fine. Thanks. And you?';

describe('simhash64 reference vectors (1e0ng/simhash tests/test_simhash.py)', () => {
  it('gives the published value for unweighted features', () => {
    expect(simhashToBigInt(simhashOfFeatures([['aaa', 1], ['bbb', 1]]))).toBe(8637903533912358349n);
  });

  it('gives the published 64-bit value of a text (shingle width 2, as the vector was made)', () => {
    expect(simhashToBigInt(simhash64(HOW, 2))).toBe(6560575042654586091n);
  });

  it('its low 32 bits are the published 32-bit value', () => {
    expect(simhashToBigInt(simhash64(HOW, 2)) & 0xffffffffn).toBe(3954722027n);
  });

  it('gives the published distances', () => {
    const a = simhash64(HOW, 2);
    const b = simhash64(HOW_OLD, 2);
    expect(hammingDistance(a, b)).toBe(7);
    const low = (h: string): string => '00000000' + h.slice(8);
    expect(hammingDistance(low(a), low(b))).toBe(3);
    expect(hammingDistance(a, simhash64(HOW, 2))).toBe(0);
    expect(hammingDistance(simhash64('1'), simhash64('2'))).not.toBe(0);
  });

  it('ignores punctuation and spacing in CJK text', () => {
    expect(hammingDistance(simhash64('你好　世界！　　呼噜。'), simhash64('你好，世界　呼噜'))).toBe(0);
  });

  it('keeps the published near texts within 3 bits', () => {
    const sh4 = simhash64('How are you? I Am fine. ablar ablar xyz blar blar blar blar blar blar blar Thanks.');
    const sh5 = simhash64('How are you i am fine.ablar ablar xyz blar blar blar blar blar blar blar than');
    const sh6 = simhash64('How are you i am fine.ablar ablar xyz blar blar blar blar blar blar blar thank');
    expect(hammingDistance(sh4, sh6)).toBeLessThan(3);
    expect(hammingDistance(sh5, sh6)).toBeLessThan(3);
  });

  it('gives distinct values for the published short texts', () => {
    const shs = ['aa', 'aaa', 'aaaa', 'aaaab', 'aaaaabb', 'aaaaabbb'].map((s) => simhash64(s));
    expect(new Set(shs).size).toBe(shs.length);
  });
});

describe('simhash64V1 helpers', () => {
  it('shingles code points, not UTF-16 units (astral letters count once)', () => {
    expect([...shingles('a\u{1D49C}bcd').keys()]).toEqual(['a\u{1D49C}bc', '\u{1D49C}bcd']);
  });

  it('counts repeated shingles as weight', () => {
    expect(shingles('abcdabcd').get('abcd')).toBe(2);
    expect([...shingles('ab')]).toEqual([['ab', 1]]);
  });

  it('a tie gives 1: opposite votes cancel to all ones', () => {
    expect(simhashOfFeatures([['abcd', 1], ['abcd', -1]])).toBe('ffffffffffffffff');
    expect(simhashOfFeatures([['abcd', 1]])).not.toBe('ffffffffffffffff');
  });
});
