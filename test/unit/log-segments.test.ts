/**
 * runtime/log-segments.ts fileFrames: a segment file read a window at a time gives exactly the
 * frames a whole-file read gives, across window boundaries, with a frame larger than the window,
 * with explicit offsets (.cseg), and stops at a torn tail.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileFrames, frames, type RawFrame } from '../../runtime/log-segments';

/** A plain (.seg) frame: [u32 len][u32 keyLen][key][f64 ts][value]. */
function plainFrame(key: string, ts: number, value: Buffer | null): Buffer {
  const k = Buffer.from(key, 'utf8');
  const v = value ?? Buffer.alloc(0);
  const b = Buffer.alloc(4 + 4 + k.length + 8 + v.length);
  b.writeUInt32LE(b.length - 4, 0);
  b.writeUInt32LE(k.length, 4);
  k.copy(b, 8);
  b.writeDoubleLE(ts, 8 + k.length);
  v.copy(b, 16 + k.length);
  return b;
}

/** An explicit (.cseg) frame: [u32 len][f64 offset][u32 keyLen][key][f64 ts][value]. */
function explicitFrame(offset: number, key: string, ts: number, value: Buffer): Buffer {
  const k = Buffer.from(key, 'utf8');
  const b = Buffer.alloc(4 + 8 + 4 + k.length + 8 + value.length);
  b.writeUInt32LE(b.length - 4, 0);
  b.writeDoubleLE(offset, 4);
  b.writeUInt32LE(k.length, 12);
  k.copy(b, 16);
  b.writeDoubleLE(ts, 16 + k.length);
  value.copy(b, 24 + k.length);
  return b;
}

const plain = (f: RawFrame): unknown => ({ ...f, value: f.value?.toString('hex') ?? null });

describe('fileFrames', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'segframes-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a plain segment in small windows exactly as a whole read, a frame larger than the window included', () => {
    const parts: Buffer[] = [];
    for (let i = 0; i < 200; i++) parts.push(plainFrame(`k${i % 37}`, 1000 + i, i % 11 === 0 ? null : Buffer.alloc(i % 5 === 0 ? 300 : 7 + (i % 13), i)));
    const bytes = Buffer.concat(parts);
    const path = join(dir, 'a.seg');
    writeFileSync(path, bytes);
    const whole = [...frames(bytes, { baseOffset: 500, explicit: false })].map(plain);
    expect(whole).toHaveLength(200);
    for (const window of [64, 100, 257, 4096, 1 << 20]) {
      const got = [...fileFrames(path, { baseOffset: 500, explicit: false }, bytes.length, window)];
      expect(got.map(plain)).toEqual(whole);
    }
    // Values read earlier stay intact after later windows are read.
    const all = [...fileFrames(path, { baseOffset: 500, explicit: false }, undefined, 64)];
    expect(all.map(plain)).toEqual(whole);
  });

  it('keeps explicit offsets, and stops at a torn tail or at the given length', () => {
    const parts = [explicitFrame(10, 'a', 1, Buffer.from('x')), explicitFrame(14, 'b', 2, Buffer.alloc(90, 1)), explicitFrame(15, 'c', 3, Buffer.from('zz'))];
    const bytes = Buffer.concat(parts);
    const path = join(dir, 'b.cseg');
    writeFileSync(path, Buffer.concat([bytes, parts[0].subarray(0, 9)]));
    const got = [...fileFrames(path, { baseOffset: 10, explicit: true }, undefined, 40)];
    expect(got.map((f) => [f.offset, f.key, f.timestamp])).toEqual([[10, 'a', 1], [14, 'b', 2], [15, 'c', 3]]);
    expect(got[1].value).toEqual(Buffer.alloc(90, 1));
    const cut = [...fileFrames(path, { baseOffset: 10, explicit: true }, parts[0].length + parts[1].length, 40)];
    expect(cut.map((f) => f.key)).toEqual(['a', 'b']);
  });
});
