/**
 * node:http plumbing for the control API: a bounded JSON body reader, JSON answers, the
 * bearer-token check, and a tiny method+pattern router. No framework: the API is a dozen routes.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './validate';

/** Request bodies above this are refused with 413 before or while reading. */
export const MAX_BODY_BYTES = 1024 * 1024;

export async function readJson(req: IncomingMessage, maxBytes = MAX_BODY_BYTES): Promise<{ value: unknown; raw: string }> {
  const type = String(req.headers['content-type'] ?? '');
  if (!/^application\/json\b/i.test(type)) throw new ApiError(415, 'unsupported_media_type', 'send the body as application/json');
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const raw = (await readBody(req, maxBytes)).toString('utf8');
  try {
    return { value: JSON.parse(raw) as unknown, raw };
  } catch {
    throw new ApiError(400, 'invalid_json', 'the body is not valid JSON', undefined);
  }
}

/**
 * A JSON body checked by `check` (an api/validate.ts parser). A refused body travels with its
 * error under `body`, so the server logs it under its own key (cut short).
 */
export async function readChecked<T>(req: IncomingMessage, maxBytes: number, check: (v: unknown) => T): Promise<T> {
  const { value, raw } = await readJson(req, maxBytes);
  try {
    return check(value);
  } catch (err) {
    if (err instanceof ApiError) Object.assign(err, { body: raw });
    throw err;
  }
}

/**
 * The body, refused with 413 once past maxBytes: a client that lies about (or omits) its length
 * cannot make us buffer more. The request is left flowing, not destroyed (as leaving a
 * `for await` over it would), so the 413 can still be sent; sendError bounds what follows.
 */
function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        done();
        reject(tooLarge(maxBytes));
      } else chunks.push(chunk);
    };
    const onEnd = (): void => {
      done();
      resolve(Buffer.concat(chunks));
    };
    const onError = (err: Error): void => {
      done();
      reject(err);
    };
    // Closed before its end without an error (a client gone, a socket timed out): never settled otherwise.
    const onClose = (): void => onError(new Error('the connection closed mid-body'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(413, 'body_too_large', `request bodies are limited to ${maxBytes} bytes`);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

/**
 * A refused upload (413) is read to its end and dropped before the answer goes out, within
 * these bounds. Answering at once and closing resets a connection the client is still writing
 * to: it then sees a broken pipe, not the 413 (seen in CI). Past either bound, or when the
 * declared length is past it, the answer goes at once and the connection is closed.
 */
export const REFUSED_BODY_DRAIN_BYTES = 16 * 1024 * 1024;
export const REFUSED_BODY_DRAIN_MS = 10_000;

export function sendError(res: ServerResponse, err: ApiError): void {
  const send = (): void => sendJson(res, err.status, { error: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) });
  if (err.status === 413) afterRefusedBody(res, send);
  else send();
}

/** Calls `send` once the request's body is read and dropped, or at once (closing) past REFUSED_BODY_DRAIN_*. */
function afterRefusedBody(res: ServerResponse, send: () => void): void {
  const req = res.req;
  const declared = Number(req?.headers['content-length'] ?? NaN);
  let answered = false;
  const answer = (close: boolean): void => {
    if (answered) return;
    answered = true;
    clearTimeout(timer);
    if (close) res.setHeader('connection', 'close');
    send();
  };
  const timer = setTimeout(() => answer(true), REFUSED_BODY_DRAIN_MS);
  timer.unref();
  if (!req || req.complete || req.socket.destroyed || declared > REFUSED_BODY_DRAIN_BYTES) return answer(!req?.complete);
  let left = REFUSED_BODY_DRAIN_BYTES;
  req.on('data', (chunk: Buffer) => {
    left -= chunk.length;
    if (left < 0) answer(true);
  });
  req.once('end', () => answer(false));
  req.once('close', () => clearTimeout(timer));
  req.resume();
}

/**
 * The operator's bearer token. Compared through fixed-length digests in constant time so
 * neither the length nor a prefix of the token leaks through timing.
 */
export function checkBearer(req: IncomingMessage, token: string): void {
  const header = req.headers.authorization;
  if (!header) throw new ApiError(401, 'missing_token', 'this endpoint needs Authorization: Bearer <CRAWL_API_TOKEN>');
  const m = /^Bearer\s+(.+)$/i.exec(header);
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  if (!m || !timingSafeEqual(digest(m[1].trim()), digest(token))) throw new ApiError(403, 'invalid_token', 'the bearer token is not valid');
}

export interface RouteMatch {
  params: Record<string, string>;
  url: URL;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, m: RouteMatch) => Promise<void> | void;

interface Route {
  method: string;
  pattern: RegExp;
  names: string[];
  operator: boolean;
  handler: Handler;
}

/** Routes like `/hosts/{host}/block`; a `{name*}` parameter takes the rest of the path. */
export class Router {
  private readonly routes: Route[] = [];

  add(method: string, path: string, handler: Handler, opts: { operator?: boolean } = {}): this {
    const names: string[] = [];
    const source = path.replace(/\{(\w+)(\*?)\}/g, (_m, name: string, rest: string) => {
      names.push(name);
      return rest ? '(.+)' : '([^/]+)';
    });
    this.routes.push({ method, pattern: new RegExp(`^${source}$`), names, operator: opts.operator ?? false, handler });
    return this;
  }

  /** The route for a request, `methodNotAllowed` if the path exists with other methods, or null. */
  find(method: string, path: string): { route: Route; params: Record<string, string> } | 'methodNotAllowed' | null {
    let pathMatched = false;
    for (const route of this.routes) {
      const m = route.pattern.exec(path);
      if (!m) continue;
      pathMatched = true;
      if (route.method !== method) continue;
      const params: Record<string, string> = {};
      route.names.forEach((n, i) => {
        params[n] = decodeURIComponent(m[i + 1]);
      });
      return { route, params };
    }
    return pathMatched ? 'methodNotAllowed' : null;
  }
}
