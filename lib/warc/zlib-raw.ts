/**
 * A zlib stream driven through its native handle, synchronously, one member after another:
 * what lib/warc/gzip-member.ts (deflate) and lib/warc/gunzip-member.ts (inflate) share. The
 * handle (`_handle.writeSync`, `_writeState`) is Node's own, kept since v10 but undocumented;
 * the constructor throws where it is missing, and its users then take zlib's documented
 * gzipSync/gunzipSync.
 */
import { types } from 'node:util';
import type * as zlib from 'node:zlib';

interface ZlibHandle {
  writeSync(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void;
  reset(): void;
}

type RawStream = (zlib.Gzip | zlib.Gunzip) & { _handle?: ZlibHandle | null; _writeState?: Uint32Array };

export class RawZlib {
  private readonly state: Uint32Array;
  private error: Error | null = null;

  constructor(private readonly stream: zlib.Gzip | zlib.Gunzip) {
    const s = stream as RawStream;
    if (!s._handle || typeof s._handle.writeSync !== 'function' || !types.isUint32Array(s._writeState)) {
      throw new Error('zlib handle not available');
    }
    this.state = s._writeState;
    // zlib reports a failed deflate() or inflate() (a bad CRC, a cut member) through the
    // stream's 'error' event, synchronously, and then closes the handle (_handle becomes null).
    stream.on('error', (err: Error) => (this.error = err));
  }

  /**
   * The live handle. Node aborts the process on a write to a closed one, so each use checks:
   * a stream that failed once is never written again (its users drop it).
   */
  private handle(): ZlibHandle {
    const h = (this.stream as RawStream)._handle;
    if (this.error || !h) throw this.error ?? new Error('zlib handle closed');
    return h;
  }

  /** One deflate()/inflate() call; then availOut and availIn say what is left. Throws zlib's error. */
  write(flush: number, input: Uint8Array, inOff: number, inLen: number, out: Uint8Array, outOff: number, outLen: number): void {
    this.handle().writeSync(flush, input, inOff, inLen, out, outOff, outLen);
    if (this.error) throw this.error;
  }

  get availOut(): number {
    return this.state[0];
  }

  get availIn(): number {
    return this.state[1];
  }

  /** deflateReset/inflateReset: the next member starts from the state Init gives. */
  reset(): void {
    this.handle().reset();
  }
}
