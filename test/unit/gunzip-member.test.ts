/**
 * gunzipMember against zlib.gunzipSync: the same bytes for every member, the same failures
 * (a bad CRC, a cut member, not gzip at all, a size cap), members the reused stream hands to
 * gunzipSync (two members, trailing bytes), and the stream still right after each failure.
 */
import { randomBytes } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import { gunzipMember, libdeflateGunzipInUse, reusedGunzipInUse } from '../../lib/warc/gunzip-member';

const html = Buffer.from('<html><body>' + '<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n'.repeat(800) + '</body></html>');
const noise = randomBytes(300 * 1024);
const MAX = 256 * 1024 * 1024;

/** What gunzipSync gives: the bytes, or its error's message. */
function reference(gz: Buffer, max = MAX): Buffer | string {
  try {
    return gunzipSync(gz, { maxOutputLength: max });
  } catch (err) {
    return (err as Error).message;
  }
}

function ours(gz: Buffer, max = MAX): Buffer | string {
  try {
    return gunzipMember(gz, max);
  } catch (err) {
    return (err as Error).message;
  }
}

test('the reused stream is in use on this Node (else every member takes gunzipSync)', () => {
  expect(reusedGunzipInUse()).toBe(true);
});

test('libdeflate inflates first on this machine (Debian libdeflate0 and koffi); the cases below go through it', () => {
  expect(libdeflateGunzipInUse()).toBe(true);
});

test.each([
  ['empty', Buffer.alloc(0)],
  ['one byte', Buffer.from('x')],
  ['50 KiB html', html],
  ['300 KiB noise', noise],
])('%s: the bytes gunzipSync gives, member after member from one stream', (_name, input) => {
  for (const level of [1, 3, 9]) {
    const gz = gzipSync(input, { level });
    for (let i = 0; i < 3; i++) expect(gunzipMember(gz, MAX).equals(input)).toBe(true);
  }
});

test('a member whose trailer understates its size: the output grows past it, then zlib fails the length check as in gunzipSync', () => {
  const gz = Buffer.from(gzipSync(noise));
  gz.writeUInt32LE(10, gz.length - 4);
  expect(ours(gz)).toEqual(reference(gz));
  expect(typeof ours(gz)).toBe('string');
});

test('failures are gunzipSync failures, and the stream is right again after each', () => {
  const gz = gzipSync(html);
  const badCrc = Buffer.from(gz);
  badCrc[badCrc.length - 8] ^= 0xff;
  const flipped = Buffer.from(gz);
  flipped[30] ^= 0x55;
  const cases: Array<[string, Buffer, number?]> = [
    ['a bad CRC', badCrc],
    ['a cut member', gz.subarray(0, gz.length - 20)],
    ['only the header', gz.subarray(0, 10)],
    ['a damaged block', flipped],
    ['not gzip', html.subarray(0, 200)],
    ['over the size cap', gz, 1000],
  ];
  for (const [name, bad, max] of cases) {
    const want = reference(bad, max);
    expect({ name, got: ours(bad, max) }).toEqual({ name, got: want });
    expect({ name, failed: typeof want }).toEqual({ name, failed: 'string' });
    expect(gunzipMember(gz, MAX).equals(html)).toBe(true);
  }
});

test('two members, or bytes after the member, give what gunzipSync gives', () => {
  const two = Buffer.concat([gzipSync(html), gzipSync(Buffer.from('tail'))]);
  expect(gunzipMember(two, MAX).equals(Buffer.concat([html, Buffer.from('tail')]))).toBe(true);
  const trailing = Buffer.concat([gzipSync(html), Buffer.from([0, 0, 0, 0])]);
  expect(ours(trailing)).toEqual(reference(trailing));
  expect(gunzipMember(gzipSync(html), MAX).equals(html)).toBe(true);
});

test('reuseOutput: the same bytes, inflated into one buffer call after call; a larger member grows it; failures unchanged', () => {
  const small = gzipSync(html);
  const big = gzipSync(noise);
  const a = gunzipMember(small, MAX, true);
  expect(a.equals(html)).toBe(true);
  const b = gunzipMember(big, MAX, true); // larger than the buffer kept: a new one, kept from now on
  expect(b.equals(noise)).toBe(true);
  const c = gunzipMember(small, MAX, true);
  expect(c.equals(html)).toBe(true);
  expect(c.buffer).toBe(b.buffer); // inflated into the kept buffer: `b` is overwritten, as documented
  const d = gunzipMember(small, MAX, true);
  expect(d.buffer).toBe(c.buffer);
  expect(d.equals(html)).toBe(true);
  // Without it every result has a buffer of its own.
  expect(gunzipMember(small, MAX).buffer).not.toBe(gunzipMember(small, MAX).buffer);
  // A failure is still gunzipSync's, and the next call is right again.
  const bad = Buffer.from(small);
  bad[bad.length - 8] ^= 0xff; // the CRC
  expect(() => gunzipMember(bad, MAX, true)).toThrow(reference(bad) as string);
  expect(gunzipMember(small, MAX, true).equals(html)).toBe(true);
});
