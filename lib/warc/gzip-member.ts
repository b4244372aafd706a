/**
 * Gzip members for WARC records: by libdeflate where it loads (lib/warc/libdeflate.ts: about
 * 60% of zlib's CPU for members no larger), else from one long-lived zlib stream per level
 * instead of a new one per record, as below.
 *
 * zlib.gzipSync builds a Transform stream and a native deflate state (about 256 KiB, its hash
 * table zeroed) for every call, and returns a slice of a fresh 16 KiB output buffer. A page
 * makes three records, and each record lives until its WARC file is stored: so a page pinned
 * 48 KiB of ArrayBuffers for 1-3 KiB of gzip (the synthetic pages compress 40:1), and V8
 * starts a full garbage collection every 64 MB of such external memory. Here the deflate state
 * is reset (deflateReset) between members, the output goes to a reused scratch buffer, and each
 * member is copied out at its exact size (small ones into Node's shared 8 KiB pool).
 *
 * The bytes are those of gzipSync at the same level and GZIP_MEM_LEVEL: deflateReset leaves the
 * state deflateInit makes (test/unit/gzip-member.test.ts compares them). The stream is driven through zlib's own
 * handle (`_handle.writeSync`, `_writeState`), which Node has kept since v10 but does not
 * document (lib/warc/zlib-raw.ts); where it is missing, gzipSync is used.
 */
import { types } from 'node:util';
import * as zlib from 'node:zlib';
import { LIBDEFLATE_LEVEL_FOR, libdeflate, type LibDeflate } from './libdeflate';
import { RawZlib } from './zlib-raw';

const { Z_NO_FLUSH, Z_FINISH } = zlib.constants;
/**
 * zlib's memLevel 9 (its default is 8): a hash table of 2^16 entries instead of 2^15 for the
 * match finder. On the real-page web's records at level 3 (a page's request, response and 30 KB
 * of text) 1.30-1.33 ms a page against 1.36-1.39, for 0.2% more bytes; the table is 128 KiB more
 * for the one stream a level (docs/performance.md, "Fetch and WARC CPU"). Still standard gzip.
 */
export const GZIP_MEM_LEVEL = 9;
const START_SCRATCH = 64 * 1024;
/** A scratch buffer grown past this by one huge record shrinks back after it. */
const KEEP_SCRATCH = 1024 * 1024;

/**
 * The size a reused scratch buffer of `current` bytes grows to when `need` bytes (at most `keep`)
 * must fit: doubling, but never past `keep`. A record larger than `keep` gets a buffer of its own
 * for that one member and the reused buffer stays as it is. Before, doubling overshot the keep
 * size for records of 0.5-1 MiB (a 600 KiB buffer grown for a 700 KiB record became 1.2 MiB), and
 * a buffer past it was dropped back to 64 KiB after the member and grown again step by step by
 * the next large pages: on the benchmark's real-page web the crawl's event loop allocated ~250 KB
 * a page of ArrayBuffers that way, external memory that forces V8's scavenges
 * (docs/performance.md, branch i49gc).
 */
export function grownScratchSize(current: number, need: number, keep = KEEP_SCRATCH): number {
  if (need <= current) return current;
  return Math.max(need, Math.min(current * 2, keep));
}

/** `kept` if `need` bytes fit it; else a buffer for them: the reused one grown, or one of its own past KEEP_SCRATCH. */
function scratchFor(kept: Buffer<ArrayBuffer>, need: number): { buf: Buffer<ArrayBuffer>; keep: boolean } {
  if (need <= kept.length) return { buf: kept, keep: true };
  if (need > KEEP_SCRATCH) return { buf: Buffer.allocUnsafe(need), keep: false };
  return { buf: Buffer.allocUnsafe(grownScratchSize(kept.length, need)), keep: true };
}

class ReusedGzip {
  private readonly z: RawZlib;
  private scratch = Buffer.allocUnsafe(START_SCRATCH);

  constructor(level: number) {
    this.z = new RawZlib(zlib.createGzip({ level, memLevel: GZIP_MEM_LEVEL }));
  }

  /** One gzip member of the parts, as a Buffer of its own. */
  member(parts: readonly Uint8Array[]): Buffer {
    let outOff = 0;
    for (let p = 0; p < parts.length; p++) {
      const part = parts[p];
      const flush = p === parts.length - 1 ? Z_FINISH : Z_NO_FLUSH;
      let inOff = 0;
      let inLen = part.length;
      for (;;) {
        const outLen = this.scratch.length - outOff;
        this.z.write(flush, part, inOff, inLen, this.scratch, outOff, outLen);
        const availOut = this.z.availOut;
        const availIn = this.z.availIn;
        outOff += outLen - availOut;
        inOff += inLen - availIn;
        inLen = availIn;
        // Room left means deflate took all the input (and, on Z_FINISH, ended the member).
        if (availOut !== 0) break;
        const grown = Buffer.allocUnsafe(this.scratch.length * 2);
        this.scratch.copy(grown, 0, 0, outOff);
        this.scratch = grown;
      }
    }
    // deflateReset: the next member starts from the state deflateInit gives.
    this.z.reset();
    const gz = Buffer.from(this.scratch.subarray(0, outOff));
    if (this.scratch.length > KEEP_SCRATCH) this.scratch = Buffer.allocUnsafe(START_SCRATCH);
    return gz;
  }
}

/**
 * Members made by libdeflate (lib/warc/libdeflate.ts) at the libdeflate level that matches the
 * configured zlib level's size: libdeflate takes its input whole, so the parts are copied into
 * one reused input buffer first (a page: one memcpy of ~290 KB, about 0.02 ms), and the member,
 * written to a reused output buffer, is copied out at its exact size as the zlib path does.
 */
class LibDeflateGzip {
  private input = Buffer.allocUnsafe(START_SCRATCH);
  private output = Buffer.allocUnsafe(START_SCRATCH);

  constructor(private readonly lib: LibDeflate, private readonly compressor: unknown) {}

  member(parts: readonly Uint8Array[]): Buffer {
    let whole: Uint8Array;
    let inLen = 0;
    if (parts.length === 1) {
      whole = parts[0];
      inLen = whole.length;
    } else {
      for (const p of parts) inLen += p.length;
      const input = scratchFor(this.input, inLen);
      if (input.keep) this.input = input.buf;
      let at = 0;
      for (const p of parts) {
        input.buf.set(p, at);
        at += p.length;
      }
      whole = input.buf;
    }
    const bound = this.lib.bound(this.compressor, inLen);
    const output = scratchFor(this.output, bound);
    if (output.keep) this.output = output.buf;
    const n = Number(this.lib.gzipCompress(this.compressor, whole, inLen, output.buf, output.buf.length));
    if (n === 0) throw new Error('libdeflate_gzip_compress: output buffer too small');
    return Buffer.from(output.buf.subarray(0, n));
  }
}

const libEngines = new Map<number, LibDeflateGzip | null>();

function libEngineFor(level: number): LibDeflateGzip | null {
  let e = libEngines.get(level);
  if (e === undefined) {
    e = null;
    const lib = libdeflate();
    const ldLevel = LIBDEFLATE_LEVEL_FOR[level];
    if (lib && ldLevel !== undefined && ldLevel > 0) {
      try {
        e = new LibDeflateGzip(lib, lib.compressor(ldLevel));
      } catch {
        e = null;
      }
    }
    libEngines.set(level, e);
  }
  return e;
}

const engines = new Map<number, ReusedGzip | null>();

function engineFor(level: number): ReusedGzip | null {
  let e = engines.get(level);
  if (e === undefined) {
    try {
      e = new ReusedGzip(level);
    } catch {
      e = null;
    }
    engines.set(level, e);
  }
  return e;
}

/**
 * The parts, in order, as one gzip member at `level` (1-9, zlib's scale): made by libdeflate
 * where it is loaded (lib/warc/libdeflate.ts; at least as small as zlib's member at that level
 * on real pages), else by zlib (gzipMemberZlib). A member takes parts of any length; no parts at
 * all give an empty member. Either way one standard gzip member that gunzipSync reads back.
 */
export function gzipMember(parts: readonly Uint8Array[], level: number): Buffer {
  if (parts.length === 0) parts = [Buffer.alloc(0)];
  if (!Number.isInteger(level) || level < 1 || level > 9) return gzipMemberZlib(parts, level);
  const bytes = parts.every((p) => types.isUint8Array(p));
  const lib = bytes ? libEngineFor(level) : null;
  if (lib) {
    try {
      return lib.member(parts);
    } catch {
      libEngines.set(level, null);
    }
  }
  return gzipMemberZlib(parts, level);
}

/**
 * The parts as one gzip member made by zlib: the same bytes as
 * `gzipSync(Buffer.concat(parts), { level, memLevel: GZIP_MEM_LEVEL })`, without joining the parts first.
 */
export function gzipMemberZlib(parts: readonly Uint8Array[], level: number): Buffer {
  if (parts.length === 0) parts = [Buffer.alloc(0)];
  // The native write takes only byte views (anything else aborts the process, not throws).
  const engine = parts.every((p) => types.isUint8Array(p)) ? engineFor(level) : null;
  if (engine) {
    try {
      return engine.member(parts);
    } catch {
      // A stream in an unknown state is not used again (the next record gets a new one), and
      // this record is made the documented way, which throws if the failure was not the stream's.
      engines.delete(level);
    }
  }
  return zlib.gzipSync(parts.length === 1 ? parts[0] : Buffer.concat(parts), { level, memLevel: GZIP_MEM_LEVEL });
}

/** Which engine makes members at `level`: libdeflate, zlib's reused stream, or gzipSync. */
export function gzipEngine(level: number): 'libdeflate' | 'zlib' | 'gzipSync' {
  return libEngineFor(level) ? 'libdeflate' : engineFor(level) ? 'zlib' : 'gzipSync';
}

/** Whether zlib members are made by the reused stream (false: gzipSync), for the tests and logs. */
export function reusedGzipInUse(level: number): boolean {
  return engineFor(level) !== null;
}
