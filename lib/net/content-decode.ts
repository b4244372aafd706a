/**
 * Bounded decoding of an HTTP response body (Content-Encoding) as it streams in.
 *
 * The fetcher asks for `gzip, deflate, br` and decodes here rather than in the HTTP client so
 * that decoded output is capped (maxBytes) and a compression bomb is stopped by its ratio
 * (output/input) long before it is expanded in memory. Policy:
 *  - no encoding / `identity`: bytes kept as they are, up to maxBytes;
 *  - one of gzip, x-gzip, deflate (zlib-wrapped or raw, sniffed), br: decoded;
 *  - an unknown single encoding (zstd, compress, …): stored raw, undecoded, up to maxBytes;
 *  - more than one encoding (`gzip, br`): refused — empty body, stop reason 'decompression'.
 *    Stacked encodings have no use on the real web but multiply a bomb's ratio.
 *  - corrupt compressed data: what decoded so far is kept, stop reason 'decompression'.
 */
import zlib from 'node:zlib';

export type DecodeStop = 'length' | 'decompression';

export interface DecodeLimits {
  maxBytes: number;
  /** Maximum output/input; checked once output passes RATIO_FLOOR so tiny bodies never trip it. */
  maxRatio: number;
}

export interface BodyDecoder {
  /** Feed encoded bytes. Returns false when the caller should pause until `onDrain`. */
  write(chunk: Buffer): boolean;
  /** No more input: flush and resolve once all output is in. */
  end(): Promise<void>;
  /** Stop now and drop buffers; `result()` still returns what was decoded. */
  destroy(): void;
  readonly stopped: DecodeStop | null;
  result(): Buffer;
  /** What result() joins: the kept chunks in order, not copied (views of the input or zlib's output). */
  parts(): Buffer[];
}

export interface DecoderEvents {
  /** Called once when a limit is hit, so the caller can stop reading the network. */
  onStop(reason: DecodeStop): void;
  onDrain(): void;
}

/** Output below this size is never called a bomb, whatever the ratio. */
export const RATIO_FLOOR = 64 * 1024;

/** Lower-cased codings in order of application; `identity` and blanks dropped. */
export function parseContentEncoding(values: readonly string[]): string[] {
  return values
    .flatMap((v) => v.split(','))
    .map((s) => s.trim().toLowerCase())
    .filter((s) => s !== '' && s !== 'identity');
}

const KNOWN = new Set(['gzip', 'x-gzip', 'deflate', 'br']);

export function createBodyDecoder(codings: readonly string[], limits: DecodeLimits, ev: DecoderEvents): BodyDecoder {
  const out: Buffer[] = [];
  let outBytes = 0;
  let inBytes = 0;
  let stopped: DecodeStop | null = null;
  let z: zlib.Gzip | zlib.Inflate | zlib.InflateRaw | zlib.BrotliDecompress | null = null;
  let head: Buffer[] = []; // bytes held back while sniffing the deflate wrapper
  let finished: Promise<void> | null = null;

  const coding = codings.length === 1 ? codings[0] : null;
  const decode = coding !== null && KNOWN.has(coding);

  const stop = (reason: DecodeStop): void => {
    if (stopped) return;
    stopped = reason;
    z?.destroy();
    ev.onStop(reason);
  };

  /** Keep at most maxBytes of output; returns false once full. */
  const keep = (buf: Buffer): boolean => {
    const room = limits.maxBytes - outBytes;
    if (buf.length > room) {
      if (room > 0) out.push(buf.subarray(0, room));
      outBytes += Math.max(room, 0);
      stop('length');
      return false;
    }
    out.push(buf);
    outBytes += buf.length;
    return true;
  };

  const makeZlib = (first: Buffer): typeof z => {
    // finishFlush SYNC: a body cut short still yields what it decoded, as browsers do.
    const o = { finishFlush: zlib.constants.Z_SYNC_FLUSH };
    if (coding === 'br') {
      return zlib.createBrotliDecompress({ finishFlush: zlib.constants.BROTLI_OPERATION_FLUSH });
    }
    if (coding === 'deflate') {
      // RFC 9110 says zlib-wrapped, but many servers send raw deflate; the zlib header is
      // CM=8 in the low nibble and a 16-bit check value divisible by 31.
      const wrapped = first.length >= 2 && (first[0] & 0x0f) === 8 && ((first[0] << 8) | first[1]) % 31 === 0;
      return wrapped ? zlib.createInflate(o) : zlib.createInflateRaw(o);
    }
    return zlib.createGunzip(o);
  };

  const startZlib = (first: Buffer): void => {
    const s = makeZlib(first) as NonNullable<typeof z>;
    z = s;
    s.on('data', (d: Buffer) => {
      if (stopped || !keep(d)) return;
      if (outBytes > RATIO_FLOOR && outBytes > limits.maxRatio * Math.max(inBytes, 1)) stop('decompression');
    });
    s.on('drain', () => ev.onDrain());
    s.on('error', () => stop('decompression'));
  };

  if (codings.length > 1) {
    // Refused (see header comment); nothing is kept. The caller hears of it on the next tick
    // so it is never re-entered from its own constructor call.
    stopped = 'decompression';
    queueMicrotask(() => ev.onStop('decompression'));
  }

  return {
    get stopped() {
      return stopped;
    },
    write(chunk) {
      if (stopped || chunk.length === 0) return true;
      inBytes += chunk.length;
      if (!decode) return keep(chunk), true;
      if (z === null) {
        head.push(chunk);
        const first = Buffer.concat(head);
        if (coding === 'deflate' && first.length < 2) return true;
        head = [];
        startZlib(first);
        return (z as unknown as NodeJS.WritableStream).write(first);
      }
      return (z as unknown as NodeJS.WritableStream).write(chunk);
    },
    end() {
      if (finished) return finished;
      finished = new Promise<void>((resolve) => {
        if (stopped || !decode || inBytes === 0) return resolve();
        if (z === null) startZlib(Buffer.concat(head)); // deflate body shorter than 2 bytes
        const s = z as NonNullable<typeof z>;
        if (s.destroyed) return resolve();
        s.once('end', resolve);
        s.once('close', resolve);
        s.once('error', () => resolve());
        if (head.length) s.write(Buffer.concat(head));
        head = [];
        s.end();
      });
      return finished;
    },
    destroy() {
      z?.destroy();
      head = [];
    },
    result() {
      return out.length === 1 ? out[0] : Buffer.concat(out);
    },
    parts() {
      return out;
    },
  };
}
