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
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    // Stop reading at the cap: a client that lies about (or omits) its length cannot make us buffer more.
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk);
  }
  const raw = Buffer.concat(chunks).toString('utf8');
  try {
    return { value: JSON.parse(raw) as unknown, raw };
  } catch {
    throw new ApiError(400, 'invalid_json', 'the body is not valid JSON', undefined);
  }
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(413, 'body_too_large', `request bodies are limited to ${maxBytes} bytes`);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

export function sendError(res: ServerResponse, err: ApiError): void {
  // A refused upload may still be streaming in; close the connection rather than read it all.
  if (err.status === 413) res.setHeader('connection', 'close');
  sendJson(res, err.status, { error: err.code, message: err.message, ...(err.details === undefined ? {} : { details: err.details }) });
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
