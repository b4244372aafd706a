/**
 * One GET exchange on an undici Client or Pool, for connectors/http-undici.ts: the dispatch handler that
 * enforces the overall deadline, feeds the bounded body decoder with backpressure, keeps the
 * partial body when the connection breaks mid-body, and maps undici errors to FetchError codes.
 */
import { errors as undiciErrors, type Dispatcher } from 'undici';
import { FetchError, type HttpCapture, type HttpFetchOptions } from './types';
import { createBodyDecoder, parseContentEncoding, type BodyDecoder } from '../lib/net/content-decode';

/** After the deadline or a cut, time allowed for the decoder to flush what it already holds. */
const FLUSH_GRACE_MS = 1000;

export interface RequestHead {
  path: string;
  /** Flat name/value list for undici, in the order it writes them. */
  flat: string[];
  /** Exactly what undici writes for a body-less GET on a keep-alive connection. */
  text: string;
}

/** Our own aborts (deadline, caps) carry this, so they are not mistaken for network errors. */
const STOP = new Error('stopped by fetcher');

export function exchange(
  pool: Dispatcher,
  url: URL,
  ip: string,
  head: RequestHead,
  opts: HttpFetchOptions,
  startedAt: number,
  deadlineAt: number,
): Promise<HttpCapture> {
  return new Promise<HttpCapture>((resolve, reject) => {
    let controller: Dispatcher.DispatchController | null = null;
    let connected = false;
    let done = false;
    let status = 0;
    let statusText = '';
    let headers: Array<[string, string]> = [];
    let decoder: BodyDecoder | null = null;
    let cut: 'time' | 'disconnect' | null = null;
    /** When the request went out on its connection: the response time (responseMs) counts from here. */
    let requestAt = 0;

    const timer = setTimeout(() => {
      if (done) return;
      if (decoder === null) {
        fail(new FetchError('DEADLINE_EXCEEDED', `no response headers within ${opts.overallTimeoutMs} ms`, true));
      } else {
        cut = 'time';
        void complete();
      }
      controller?.abort(STOP);
    }, Math.max(0, deadlineAt - Date.now()));

    const fail = (err: FetchError): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      reject(err);
    };

    const complete = async (): Promise<void> => {
      if (done || decoder === null) return;
      done = true;
      const lastByteAt = Date.now();
      clearTimeout(timer);
      const d = decoder;
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([d.end(), new Promise<void>((r) => (grace = setTimeout(r, FLUSH_GRACE_MS)))]);
      clearTimeout(grace);
      d.destroy();
      // On a clean end, let undici hand the socket back to the pool first (it does so on the
      // next setImmediate); otherwise a fetch issued right after this one opens a new socket.
      if (!cut && !d.stopped) await new Promise<void>((r) => setImmediate(r));
      // The chunks as they came; `body` joins them only when something asks for it (fetch's
      // page path does not: lib/net/capture-body.ts).
      const parts = d.parts();
      let joined: Buffer | null = parts.length === 1 ? parts[0] : null;
      resolve({
        url: url.href,
        ip,
        status,
        statusText,
        headers,
        requestHead: head.text,
        get body(): Buffer {
          return (joined ??= Buffer.concat(parts));
        },
        bodyParts: parts,
        truncated: d.stopped ?? cut ?? false,
        startedAt,
        elapsedMs: Date.now() - startedAt,
        responseMs: lastByteAt - (requestAt || startedAt),
      });
    };

    const handler: Dispatcher.DispatchHandler = {
      onRequestStart(c) {
        requestAt = Date.now();
        controller = c;
        connected = true;
        if (done) c.abort(STOP); // the deadline passed while we waited for a connection
      },
      onResponseStart(c, statusCode, _parsed, statusMessage) {
        if (done || statusCode < 200) return; // 1xx interim responses: wait for the final one
        status = statusCode;
        statusText = statusMessage ?? '';
        headers = rawPairs(c.rawHeaders);
        const codings = parseContentEncoding(headers.filter(([k]) => k.toLowerCase() === 'content-encoding').map(([, v]) => v));
        decoder = createBodyDecoder(
          codings,
          { maxBytes: opts.maxBodyBytes, maxRatio: opts.maxDecompressionRatio },
          {
            onStop: () => {
              c.abort(STOP); // stop reading the network as soon as a limit is hit
              void complete();
            },
            onDrain: () => {
              if (!done) c.resume();
            },
          },
        );
      },
      onResponseData(c, chunk) {
        if (done || decoder === null) return;
        if (!decoder.write(chunk)) c.pause(); // decoder backlog: backpressure to the socket
      },
      onResponseEnd() {
        void complete();
      },
      onResponseError(_c, err) {
        if (done || err === STOP) return;
        if (decoder !== null) {
          cut = 'disconnect'; // body started, then the connection broke: keep what came
          void complete();
        } else {
          fail(mapError(err, connected));
        }
      },
    };

    try {
      pool.dispatch(
        {
          path: head.path,
          method: 'GET',
          headers: head.flat,
          // Backstops only; the overall deadline above fires first.
          headersTimeout: opts.overallTimeoutMs + 1000,
          bodyTimeout: opts.overallTimeoutMs + 1000,
        },
        handler,
      );
    } catch (e) {
      fail(mapError(e, false));
    }
  });
}

function rawPairs(raw: Dispatcher.DispatchController['rawHeaders']): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if (!Array.isArray(raw)) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    // llhttp drops leading whitespace of a value but keeps trailing; drop both (RFC 9110 OWS).
    out.push([raw[i].toString('latin1'), raw[i + 1].toString('latin1').replace(/[ \t]+$/, '')]);
  }
  return out;
}

/** undici/Node error → stable FetchError code. `connected`: the socket (and TLS) was up. */
export function mapError(err: unknown, connected: boolean): FetchError {
  const e = err as { code?: string; message?: string };
  const code = e.code ?? '';
  const detail = `${code} ${e.message ?? String(err)}`.trim();
  if (code === 'UND_ERR_HEADERS_OVERFLOW') return new FetchError('HEADERS_TOO_LARGE', detail, false);
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return new FetchError('DEADLINE_EXCEEDED', detail, true);
  if (err instanceof undiciErrors.HTTPParserError || code.startsWith('HPE_') || e.message === 'bad response' || e.message === 'bad upgrade') {
    return new FetchError('PROTOCOL_ERROR', detail, false);
  }
  if (code === 'UND_ERR_INVALID_ARG') return new FetchError('BAD_URL', detail, false);
  if (!connected) {
    if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return new FetchError('CONNECT_TIMEOUT', detail, true);
    // Certificate problems do not fix themselves on retry; refused/unreachable may.
    const tlsPermanent = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL/.test(code);
    return new FetchError('CONNECT_FAILED', detail, !tlsPermanent);
  }
  return new FetchError('CONNECTION_RESET', detail, true);
}
