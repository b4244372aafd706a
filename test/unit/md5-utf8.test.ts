/**
 * md5Utf8 against node:crypto's MD5 of the same string: every length around the 64-byte block
 * and padding boundaries, ASCII and not, astral characters and lone surrogates (which both
 * encode as U+FFFD), and long strings that grow the message buffer; md5Bytes of a range of a
 * buffer against the same.
 */
import { hash } from 'node:crypto';
import { md5Bytes, md5Utf8 } from '../../lib/md5-utf8';

function expectSame(s: string): void {
  const out = new Uint32Array(4);
  md5Utf8(s, out);
  const d = hash('md5', s, 'buffer') as unknown as Buffer;
  expect([...out]).toEqual([0, 4, 8, 12].map((i) => d.readUInt32LE(i)));
}

/** Deterministic pseudo-random strings drawn from `alphabet` (no Math.random: failures replay). */
function strings(alphabet: string[], count: number, maxLen: number): string[] {
  let x = 7;
  const next = (): number => (x = (Math.imul(x, 1103515245) + 12345) >>> 0);
  return Array.from({ length: count }, () => {
    const n = next() % (maxLen + 1);
    let s = '';
    for (let i = 0; i < n; i++) s += alphabet[next() % alphabet.length];
    return s;
  });
}

describe('md5Utf8', () => {
  test('RFC 1321 test suite', () => {
    const out = new Uint32Array(4);
    const hex = (s: string): string => {
      md5Utf8(s, out);
      return Buffer.from(out.buffer.slice(0)).toString('hex');
    };
    expect(hex('')).toBe('d41d8cd98f00b204e9800998ecf8427e');
    expect(hex('abc')).toBe('900150983cd24fb0d6963f7d28e17f72');
    expect(hex('12345678901234567890123456789012345678901234567890123456789012345678901234567890')).toBe('57edf4a22be3c955ac49da2e2107b67a');
  });

  test('every length from 0 to 200 bytes, across block and padding boundaries', () => {
    for (let n = 0; n <= 200; n++) expectSame('h'.repeat(n));
    for (let n = 0; n <= 200; n++) expectSame(`http://127.1.0.1:40123/p/${'9'.repeat(n)}`);
  });

  test('URLs, non-ASCII text, astral characters and lone surrogates', () => {
    const alphabet = ['a', 'Z', '/', '%', ':', '?', 'é', 'ß', 'ü', '€', '中', '😀', '\ud800', '\udfff', '\u0000', '\u007f', '\u0080', '\u07ff', '\u0800', '\uffff'];
    for (const s of strings(alphabet, 2000, 90)) expectSame(s);
    for (const s of strings(['x', 'é', '😀'], 20, 3000)) expectSame(s);
  });

  test('a long string grows the buffer; shorter ones after it are still right', () => {
    expectSame('a'.repeat(100_000) + '€');
    expectSame('b');
    expectSame('c'.repeat(63));
  });
});

describe('md5Bytes', () => {
  test('a range of bytes hashes as node:crypto hashes those bytes, and as md5Utf8 hashes the string they encode', () => {
    const out = new Uint32Array(4);
    const viaString = new Uint32Array(4);
    for (const s of [...strings(['a', '/', 'é', '😀', '%'], 300, 150), 'x'.repeat(5000)]) {
      const b = Buffer.from(s, 'utf8');
      // Inside a larger buffer, at an odd offset, as a key lies in a segment's read window.
      const host = Buffer.concat([Buffer.from([1, 2, 3]), b, Buffer.from([9])]);
      md5Bytes(host, 3, 3 + b.length, out);
      const d = hash('md5', b, 'buffer') as unknown as Buffer;
      expect([...out]).toEqual([0, 4, 8, 12].map((i) => d.readUInt32LE(i)));
      md5Utf8(s, viaString);
      expect([...out]).toEqual([...viaString]);
    }
  });
});
