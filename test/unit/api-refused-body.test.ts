/**
 * A body over the control API's cap gets its 413 JSON answer, not a broken pipe: the server reads
 * and drops the rest of the upload (within REFUSED_BODY_DRAIN_BYTES) before closing. Real
 * loopback sockets, readJson and sendError as api/server.ts uses them.
 */
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readJson, REFUSED_BODY_DRAIN_BYTES, sendError, sendJson } from '../../api/http';
import { ApiError } from '../../api/validate';
import { until } from '../support/until';

const CAP = 64 * 1024;
let server: Server;
let port = 0;
/** What readJson failed with other than an ApiError, last. */
let otherFailure: Error | undefined;

beforeAll(async () => {
  server = createServer((req, res) => {
    readJson(req, CAP).then(
      ({ value }) => sendJson(res, 200, { got: typeof value }),
      (e: unknown) => {
        if (e instanceof ApiError) sendError(res, e);
        else {
          otherFailure = e as Error;
          res.destroy();
        }
      },
    );
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

interface Outcome {
  /** The answer's status and body, if one came. */
  status?: number;
  body?: string;
  /** The error the upload ended with (a reset, a broken pipe), if it did not end cleanly. */
  uploadError?: string;
}

/** POSTs `size` bytes of body, with or without a declared length; settles once both the upload and the answer are over. */
function post(size: number, declared: boolean): Promise<Outcome> {
  return new Promise((resolve) => {
    const out: Outcome = {};
    let pending = 2;
    const settle = (): void => {
      if (--pending === 0) resolve(out);
    };
    const headers: Record<string, string | number> = { 'content-type': 'application/json' };
    if (declared) headers['content-length'] = size;
    let answered = false;
    const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/seeds', headers, agent: false }, (res) => {
      answered = true;
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        out.status = res.statusCode;
        out.body = body;
      });
      res.on('close', settle);
    });
    let uploadOver = false;
    const uploadEnded = (err?: NodeJS.ErrnoException): void => {
      if (err && out.uploadError === undefined) out.uploadError = err.code ?? err.message;
      if (uploadOver) return;
      uploadOver = true;
      settle();
    };
    req.on('error', (e: NodeJS.ErrnoException) => {
      uploadEnded(e);
      // The socket is gone: no answer will come if none has begun.
      if (!answered) {
        answered = true;
        settle();
      }
    });
    req.on('finish', () => uploadEnded());
    // In 256 KiB writes, each after the last is taken, so most of the body is still to go when
    // the server answers.
    // The body is the JSON number 1 and spaces: valid JSON whatever its size.
    const chunk = Buffer.alloc(256 * 1024, ' ');
    chunk[0] = 0x31;
    let sent = 0;
    const more = (): void => {
      while (sent < size && !req.destroyed) {
        const n = Math.min(chunk.length, size - sent);
        sent += n;
        if (!req.write(n === chunk.length ? chunk : chunk.subarray(0, n))) {
          req.once('drain', more);
          return;
        }
      }
      if (!req.destroyed) req.end();
    };
    more();
  });
}

test('a small body is read', async () => {
  const r = await post(10, true);
  expect(r).toEqual({ status: 200, body: JSON.stringify({ got: 'number' }) });
});

test.each([
  ['declared length', true],
  ['no length (chunked)', false],
])('an oversized body with %s gets 413 body_too_large, every time', async (_name, declared) => {
  for (let i = 0; i < 5; i++) {
    const r = await post(8 * 1024 * 1024, declared);
    expect(r.uploadError).toBeUndefined();
    expect(r.status).toBe(413);
    expect(JSON.parse(r.body ?? '{}').error).toBe('body_too_large');
  }
});

test('an upload past the drain bound is cut off, not read to its end', async () => {
  const r = await post(REFUSED_BODY_DRAIN_BYTES + 16 * 1024 * 1024, false);
  expect(r.uploadError).toMatch(/ECONNRESET|EPIPE/);
});

test('a client gone mid-body ends the read with an error, not a wait forever', async () => {
  otherFailure = undefined;
  const req = request({ host: '127.0.0.1', port, method: 'POST', path: '/seeds', agent: false, headers: { 'content-type': 'application/json', 'content-length': 10_000 } });
  req.on('error', () => undefined);
  req.write(Buffer.alloc(1000, ' '));
  await new Promise((r) => setTimeout(r, 50));
  req.destroy();
  await until(() => otherFailure !== undefined);
  expect((otherFailure as Error | undefined)?.message).toMatch(/aborted|closed mid-body/);
});
