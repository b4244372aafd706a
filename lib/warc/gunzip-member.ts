/**
 * One gzip member inflated by one long-lived zlib stream instead of a new one per member.
 *
 * Parse inflates every page's WARC record on its worker (lib/fetched-body.ts). zlib.gunzipSync
 * builds a Transform stream and a native inflate state for every call: in the parse worker's
 * profile of `npm run bench -- --only embedded --latency 0 --secs 40 --profile`, the Gunzip
 * constructor took 0.94% of the worker's time against 2.1% for the inflating itself. Here the
 * state is reset (inflateReset) between members, as lib/warc/gzip-member.ts does for deflate,
 * through the same undocumented handle (lib/warc/zlib-raw.ts); where it is
 * missing, or the input is anything but exactly one member, gunzipSync does the work, so the
 * result (bytes or error) is always gunzipSync's: the CRC-32 and length in the member's trailer
 * are checked by zlib either way.
 */
import { types } from 'node:util';
import * as zlib from 'node:zlib';
import { LIBDEFLATE_BAD_DATA, LIBDEFLATE_INSUFFICIENT_SPACE, LIBDEFLATE_SHORT_OUTPUT, LIBDEFLATE_SUCCESS, libdeflate, type LibDeflate } from './libdeflate';
import { RawZlib } from './zlib-raw';

const { Z_FINISH } = zlib.constants;
/** The results libdeflate documents for a decompression. */
const LIBDEFLATE_RESULTS: ReadonlySet<number> = new Set([LIBDEFLATE_SUCCESS, LIBDEFLATE_BAD_DATA, LIBDEFLATE_SHORT_OUTPUT, LIBDEFLATE_INSUFFICIENT_SPACE]);
/** A reused output buffer grown past this by one huge member is not kept. */
const KEEP_OUTPUT = 4 * 1024 * 1024;

/** The member's size as its trailer states it (ISIZE, mod 2^32), and room for zlib to say it is done. */
function sizeHint(gz: Uint8Array): number {
  const n = gz.length;
  const isize = n >= 4 ? (gz[n - 4] | (gz[n - 3] << 8) | (gz[n - 2] << 16) | (gz[n - 1] << 24)) >>> 0 : 0;
  return Math.min(Math.max(isize + 64, 1024), 16 * 1024 * 1024);
}

class ReusedGunzip {
  private readonly z = new RawZlib(zlib.createGunzip());
  /** The output buffer `reuseOutput` calls inflate into. */
  private output: Buffer | null = null;

  /** The member inflated, or null when its input did not end with the member (gunzipSync decides then). */
  member(gz: Uint8Array, maxOutputLength: number, reuseOutput: boolean): Buffer | null {
    const want = Math.min(sizeHint(gz), maxOutputLength);
    let out = reuseOutput && this.output !== null && this.output.length >= want ? this.output : Buffer.allocUnsafe(want);
    let outOff = 0;
    let inOff = 0;
    let inLen = gz.length;
    for (;;) {
      const outLen = out.length - outOff;
      this.z.write(Z_FINISH, gz, inOff, inLen, out, outOff, outLen);
      const availOut = this.z.availOut;
      const availIn = this.z.availIn;
      outOff += outLen - availOut;
      inOff += inLen - availIn;
      inLen = availIn;
      if (availOut !== 0) break;
      if (out.length >= maxOutputLength) {
        this.z.reset();
        return null;
      }
      const grown = Buffer.allocUnsafe(Math.min(out.length * 2, maxOutputLength));
      out.copy(grown, 0, 0, outOff);
      out = grown;
    }
    if (reuseOutput && out !== this.output && out.length <= KEEP_OUTPUT) this.output = out;
    // inflateReset: the next member starts from the state inflateInit gives.
    this.z.reset();
    // Input left after the member's end: another member or trailing bytes, gunzipSync's cases.
    return inLen === 0 ? out.subarray(0, outOff) : null;
  }
}

/**
 * One member inflated by libdeflate (lib/warc/libdeflate.ts) in one call, into a buffer of the
 * size its trailer states: 0.15 ms for a real page's member where zlib takes 0.39. libdeflate
 * checks the CRC-32 and the size in the trailer as zlib does. Anything but exactly one good
 * member that fits (bad data, a second member or trailing bytes, a wrong size in the trailer)
 * returns null, and the zlib path decides, so results and errors stay gunzipSync's.
 */
class LibDeflateGunzip {
  private output: Buffer | null = null;
  private readonly inUsed: [number] = [0];
  private readonly outUsed: [number] = [0];

  constructor(private readonly lib: LibDeflate, private readonly d: unknown) {}

  member(gz: Uint8Array, maxOutputLength: number, reuseOutput: boolean): Buffer | null {
    const want = Math.min(sizeHint(gz), maxOutputLength);
    const out = reuseOutput && this.output !== null && this.output.length >= want ? this.output : Buffer.allocUnsafe(want);
    const r = this.lib.gzipDecompressEx(this.d, gz, gz.length, out, out.length, this.inUsed, this.outUsed);
    if (r !== LIBDEFLATE_SUCCESS || Number(this.inUsed[0]) !== gz.length) {
      // A result libdeflate does not document is a failure of the binding: the engine is dropped (gunzipMember).
      if (!LIBDEFLATE_RESULTS.has(r)) throw new Error(`libdeflate_gzip_decompress_ex: ${r}`);
      return null;
    }
    if (reuseOutput && out !== this.output && out.length <= KEEP_OUTPUT) this.output = out;
    return out.subarray(0, Number(this.outUsed[0]));
  }
}

let libEngine: LibDeflateGunzip | null | undefined;

function libEngineNow(): LibDeflateGunzip | null {
  if (libEngine === undefined) {
    const lib = libdeflate();
    try {
      libEngine = lib ? new LibDeflateGunzip(lib, lib.decompressor()) : null;
    } catch {
      libEngine = null;
    }
  }
  return libEngine;
}

let engine: ReusedGunzip | null | undefined;

function engineNow(): ReusedGunzip | null {
  if (engine === undefined) {
    try {
      engine = new ReusedGunzip();
    } catch {
      engine = null;
    }
  }
  return engine;
}

/**
 * gunzipSync(gz, { maxOutputLength }), for input that is one gzip member (the WARC record's).
 * With `reuseOutput` the bytes may be a view of one buffer that the next such call inflates into
 * again, not a buffer of their own: for a caller done with them before it calls again (parse
 * decodes a page to a string at once). A page's record is about 290 KB inflated, and a fresh
 * buffer for each was most of what the parse thread allocated outside its heap.
 */
export function gunzipMember(gz: Buffer, maxOutputLength: number, reuseOutput = false): Buffer {
  const lib = types.isUint8Array(gz) && gz.length > 0 ? libEngineNow() : null;
  if (lib) {
    try {
      const out = lib.member(gz, maxOutputLength, reuseOutput);
      if (out) return out;
    } catch {
      libEngine = null;
    }
  }
  const e = types.isUint8Array(gz) && gz.length > 0 ? engineNow() : null;
  if (e) {
    try {
      const out = e.member(gz, maxOutputLength, reuseOutput);
      if (out) return out;
    } catch {
      // A stream in an unknown state is not used again; gunzipSync gives this member's error.
      engine = undefined;
    }
  }
  return zlib.gunzipSync(gz, { maxOutputLength });
}

/** Whether members are inflated by libdeflate first (lib/warc/libdeflate.ts), for the tests. */
export function libdeflateGunzipInUse(): boolean {
  return libEngineNow() !== null;
}

/** Whether members are inflated by the reused stream (false: gunzipSync), for the tests. */
export function reusedGunzipInUse(): boolean {
  return engineNow() !== null;
}
