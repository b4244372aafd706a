/**
 * libdeflate (Eric Biggers' whole-buffer DEFLATE library, Debian's `libdeflate0`, the system's
 * `libdeflate.so.0`) through koffi (a maintained FFI for Node, prebuilt binaries in its npm
 * package): the WARC records' gzip members made and inflated in one call each.
 *
 * Why: deflate was the largest single cost of `crawl run` after the parser (zlib 31% of the
 * event loop's busy time in a `--profile` run on the real-page web). Over the 65 pages of
 * shared/corpus/realpages (186 KiB on average), libdeflate level 1 makes members of 5.64:1 in
 * 0.64 ms a page where zlib level 3 (memLevel 9) makes 5.61:1 in 1.02 ms, and inflates them in
 * 0.15 ms against 0.39 (docs/performance.md, "libdeflate for the WARC members"). Its members
 * are standard gzip (RFC 1952), one per record, readable by zlib, warcio and any WARC reader.
 *
 * Everything here is optional: where koffi or the library cannot be loaded, or
 * CRAWL_WARC_DEFLATE=zlib asks for it, `libdeflate()` is null and lib/warc/gzip-member.ts and
 * gunzip-member.ts use node:zlib as before.
 */

/** One gzip member's bytes written to `out`, or 0 when `out` is too small. */
type CompressFn = (c: unknown, input: Uint8Array, inLen: number, out: Uint8Array, outLen: number) => number | bigint;
/** libdeflate_result: 0 success, 1 bad data, 2 short output, 3 insufficient space. */
type DecompressFn = (d: unknown, input: Uint8Array, inLen: number, out: Uint8Array, outLen: number, inUsed: [number], outUsed: [number]) => number;

export const LIBDEFLATE_SUCCESS = 0;
export const LIBDEFLATE_BAD_DATA = 1;
export const LIBDEFLATE_SHORT_OUTPUT = 2;
export const LIBDEFLATE_INSUFFICIENT_SPACE = 3;

/**
 * The libdeflate level used for a configured level (1-9, zlib's scale, CRAWL_WARC_GZIP_LEVEL):
 * the fastest libdeflate level whose members, pages and their text together, are no larger than
 * zlib's at that level (memLevel 9) over shared/corpus/realpages (pages / text ratio, zlib
 * against libdeflate: 1 5.34/2.32 - 5.64/2.39; 3 5.61/2.39 - 5.64/2.39 (level 1); 4 5.84/2.45 -
 * 5.86/2.44 (3); 5 6.05/2.49 - 6.07/2.48; 6 6.17/2.49 - 6.20/2.49; 7-8 6.19-6.23/2.49 - 6.27/2.50
 * (7); 9 6.24/2.49 - 6.31/2.51 (8)).
 */
export const LIBDEFLATE_LEVEL_FOR: readonly number[] = [0, 1, 1, 1, 3, 5, 6, 7, 7, 8];

export interface LibDeflate {
  /** A compressor for a libdeflate level (1-12), made once and kept. */
  compressor(level: number): unknown;
  /** libdeflate_gzip_compress_bound. */
  bound(c: unknown, inLen: number): number;
  gzipCompress: CompressFn;
  decompressor(): unknown;
  gzipDecompressEx: DecompressFn;
}

let loaded: LibDeflate | null | undefined;

function load(): LibDeflate | null {
  if (process.env.CRAWL_WARC_DEFLATE === 'zlib') return null;
  let koffi: typeof import('koffi');
  try {
    koffi = require('koffi') as typeof import('koffi');
  } catch {
    return null;
  }
  try {
    const lib = koffi.load('libdeflate.so.0');
    const alloc = lib.func('void *libdeflate_alloc_compressor(int)');
    const bound = lib.func('size_t libdeflate_gzip_compress_bound(void *, size_t)');
    const gzipCompress = lib.func('size_t libdeflate_gzip_compress(void *, const uint8_t *, size_t, _Out_ uint8_t *, size_t)') as CompressFn;
    const allocD = lib.func('void *libdeflate_alloc_decompressor()');
    const gzipDecompressEx = lib.func('int libdeflate_gzip_decompress_ex(void *, const uint8_t *, size_t, _Out_ uint8_t *, size_t, _Out_ size_t *, _Out_ size_t *)') as DecompressFn;
    const compressors = new Map<number, unknown>();
    let decompressor: unknown = null;
    return {
      compressor(level) {
        let c = compressors.get(level);
        if (c === undefined) {
          c = alloc(level);
          if (!c) throw new Error(`libdeflate_alloc_compressor(${level}) failed`);
          compressors.set(level, c);
        }
        return c;
      },
      bound: (c, n) => Number(bound(c, n)),
      gzipCompress,
      decompressor() {
        if (decompressor === null) {
          decompressor = allocD();
          if (!decompressor) throw new Error('libdeflate_alloc_decompressor failed');
        }
        return decompressor;
      },
      gzipDecompressEx,
    };
  } catch {
    return null;
  }
}

/** The library, loaded on first use (null: not available here, or CRAWL_WARC_DEFLATE=zlib). */
export function libdeflate(): LibDeflate | null {
  if (loaded === undefined) loaded = load();
  return loaded;
}
