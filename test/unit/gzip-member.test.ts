/**
 * gzipMemberZlib against zlib.gzipSync: the same bytes for the same input and level, however the
 * input is split into parts, across the scratch buffer's growth and across many members made
 * by the same reused stream. gzipMember (libdeflate where it loads): one standard member that
 * gunzipSync reads back, the same bytes however the input is split, no larger than zlib's on
 * real pages.
 */
import { randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { GZIP_MEM_LEVEL, grownScratchSize, gzipEngine, gzipMember, gzipMemberZlib, reusedGzipInUse } from '../../lib/warc/gzip-member';

/** Deterministic pseudo-random splits (no Math.random: a failure must replay). */
function splits(buf: Buffer, seed: number): Buffer[] {
  const parts: Buffer[] = [];
  let x = seed || 1;
  let at = 0;
  while (at < buf.length) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const n = x % 5 === 0 ? 0 : 1 + (x % Math.max(1, Math.floor(buf.length / 3)));
    parts.push(buf.subarray(at, Math.min(buf.length, at + n)));
    at += n;
  }
  return parts;
}

const html = Buffer.from('<html><body>' + '<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n'.repeat(800) + '</body></html>');
// Incompressible and larger than the 64 KiB scratch buffer: the output must grow it.
const noise = randomBytes(300 * 1024);
const inputs: Array<[string, Buffer]> = [
  ['empty', Buffer.alloc(0)],
  ['one byte', Buffer.from('x')],
  ['request head', Buffer.from('WARC/1.1\r\nWARC-Type: request\r\n\r\nGET / HTTP/1.1\r\nhost: a.example\r\n\r\n\r\n\r\n')],
  ['50 KiB html', html],
  ['300 KiB noise', noise],
];

test('the reused stream is in use on this Node (else every record takes gzipSync)', () => {
  expect(reusedGzipInUse(3)).toBe(true);
});

test.each(inputs)('%s: zlib: the bytes of gzipSync at levels 1, 3, 6 and 9, whole and split', (_name, input) => {
  for (const level of [1, 3, 6, 9]) {
    const expected = gzipSync(input, { level, memLevel: GZIP_MEM_LEVEL });
    expect(gzipMemberZlib([input], level).equals(expected)).toBe(true);
    for (const seed of [1, 7, 42]) expect(gzipMemberZlib(splits(input, seed), level).equals(expected)).toBe(true);
  }
});

/** Whether the system's libdeflate loads through koffi here (Debian's libdeflate0; stack/stack.sh and the Dockerfile install it). */
function libdeflateLoads(): boolean {
  try {
    (require('koffi') as typeof import('koffi')).load('libdeflate.so.0');
    return true;
  } catch {
    return false;
  }
}

test('libdeflate makes the members where the library loads, zlib where it does not', () => {
  expect(gzipEngine(3)).toBe(process.env.CRAWL_WARC_DEFLATE !== 'zlib' && libdeflateLoads() ? 'libdeflate' : 'zlib');
});

test.each(inputs)('%s: gzipMember at levels 1-9 reads back through gunzipSync, the same bytes whole and split', (_name, input) => {
  for (let level = 1; level <= 9; level++) {
    const whole = gzipMember([input], level);
    expect(gunzipSync(whole).equals(input)).toBe(true);
    // One member: a gzip header, nothing after its trailer (its ISIZE is the input's length).
    expect(whole.subarray(0, 3).equals(Buffer.from([0x1f, 0x8b, 8]))).toBe(true);
    expect(whole.readUInt32LE(whole.length - 4)).toBe(input.length % 2 ** 32);
    for (const seed of [1, 7, 42]) expect(gzipMember(splits(input, seed), level).equals(whole)).toBe(true);
  }
});

test('on real pages gzipMember at level 3 is no larger than zlib level 3 (pages and their sizes summed)', () => {
  const dir = join(__dirname, '..', 'fixtures', 'realpages');
  const pages = readdirSync(dir).filter((f) => /\.html?$/.test(f)).map((f) => readFileSync(join(dir, f)));
  expect(pages.length).toBeGreaterThan(0);
  let ours = 0;
  let zlibs = 0;
  for (const p of pages) {
    ours += gzipMember([p], 3).length;
    zlibs += gzipSync(p, { level: 3, memLevel: GZIP_MEM_LEVEL }).length;
  }
  expect(ours).toBeLessThanOrEqual(zlibs);
});

test('members made one after another by the same engine are each whole and independent', () => {
  const made = [noise, html, Buffer.alloc(0), html.subarray(100, 5000), noise.subarray(0, 70_000)].map((b) => [b, gzipMember([b], 3)] as const);
  for (const [input, gz] of made) {
    expect(gunzipSync(gz).equals(input)).toBe(true);
    expect(gzipMemberZlib([input], 3).equals(gzipSync(input, { level: 3, memLevel: GZIP_MEM_LEVEL }))).toBe(true);
  }
  // Concatenated members read back as the concatenated inputs (the shape of a WARC file).
  expect(gunzipSync(Buffer.concat(made.map(([, gz]) => gz))).equals(Buffer.concat(made.map(([b]) => b)))).toBe(true);
});

test('a member is a buffer of its own: the next member does not overwrite it', () => {
  const first = gzipMember([html], 3);
  const copy = Buffer.from(first);
  gzipMember([noise], 3);
  expect(first.equals(copy)).toBe(true);
  // Exactly sized: no spare room of the scratch buffer is kept alive with it.
  expect(first.buffer.byteLength).toBeLessThanOrEqual(Math.max(first.length, 8192));
});

test('a scratch buffer grows by doubling up to the keep size, never past it for a record that fits it', () => {
  const K = 1024;
  expect(grownScratchSize(64 * K, 10 * K)).toBe(64 * K); // fits: unchanged
  expect(grownScratchSize(64 * K, 100 * K)).toBe(128 * K); // doubling covers it
  expect(grownScratchSize(64 * K, 300 * K)).toBe(300 * K); // the need itself
  // Doubling would pass the keep size (1 MiB): capped there, so the buffer is kept, not dropped after the member.
  expect(grownScratchSize(600 * K, 700 * K)).toBe(1024 * K);
  expect(grownScratchSize(600 * K, 1024 * K)).toBe(1024 * K);
  expect(grownScratchSize(100, 150, 160)).toBe(160);
});

test('records past the keep size, in parts, between smaller ones: every member whole', () => {
  const big = Buffer.concat([noise, noise, html, noise].map((b) => Buffer.concat([b, b, b, b]))).subarray(0, 1_600_000);
  const seq = [html.subarray(0, 700_000), big, html.subarray(0, 300_000), big.subarray(0, 1_100_000), noise.subarray(0, 900_000)];
  for (const [i, b] of seq.entries()) {
    const gz = gzipMember(splits(b, i + 3), 3);
    expect(gunzipSync(gz).equals(b)).toBe(true);
  }
});

test('no parts is an empty member; a bad level fails as gzipSync does', () => {
  expect(gunzipSync(gzipMember([], 3)).length).toBe(0);
  expect(gzipMemberZlib([], 3).equals(gzipSync(Buffer.alloc(0), { level: 3, memLevel: GZIP_MEM_LEVEL }))).toBe(true);
  expect(() => gzipMember([html], 42)).toThrow(/out of range/);
});
