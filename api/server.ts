/**
 * The control API and status page over node:http. Reads are open (the status page polls
 * /stats); everything that changes the crawl needs the operator's bearer token, except the
 * webmaster API (/webmaster/v1, api/webmaster-routes.ts), which takes webmaster account tokens.
 * Writes go to the log through `backend.send` (the webmaster API's through its own writer) and
 * are answered once Kafka (or the embedded log) has them; every process picks them up from there.
 *
 * Logging: method, route and status only. Tokens never; request bodies only under their own
 * `body` key, cut short, when they are refused.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { PageStore } from '../connectors/types';
import { DEFAULTS } from '../lib/config';
import { registry } from '../lib/metrics';
import { normalizeUrl } from '../lib/url-normalize';
import type { UrlStateMsg } from '../lib/messages';
import type { OutRecord } from '../runtime/stage';
import { givenClass, priorityClassOf } from '../processors/priority-class';
import type { CrawlView } from './crawl-view';
import { feedRoutes } from './feed-routes';
import { checkBearer, MAX_BODY_BYTES, Router, sendError, sendJson } from './http';
import { openApiDocument, readOnlyOpenApiDocument } from './openapi';
import { extractPayload } from './page-read';
import { operatorRoutes } from './operator-routes';
import { webmasterRoutes, type WebmasterDeps } from './webmaster-routes';
import { statusPageHtml } from './status-page';
import { ApiError } from './validate';

export interface ApiBackend {
  view: CrawlView;
  /** Produce records durably to the log. Absent: a read-only server (`crawl run --status-port`). */
  send?: (outs: OutRecord[]) => Promise<void>;
  /** Where WARC files are, for GET /pages. */
  pages?: PageStore;
  /** The webmaster API (/webmaster/v1), where this server can write: its own writer and DNS lookup. */
  webmaster?: Omit<WebmasterDeps, 'view' | 'now' | 'maxBodyBytes'>;
  /** Records waiting per topic: consumer lag, where measured (Kafka mode; `crawl run` from its log). */
  lag?: () => Record<string, number>;
  now?: () => number;
}

export interface ApiOptions {
  /** Operator token; required when the backend can write. */
  token: string | null;
  log: Logger;
  maxBodyBytes?: number;
  /** Shown on the status page. */
  title?: string;
}

/**
 * What a read-only server says of the operator's endpoints (routes the Router marks `operator`).
 * Before, `crawl run --status-port` answered POST /seeds with "no route /seeds; see GET
 * /openapi.json", and its /openapi.json listed that route.
 */
export const READ_ONLY_NOTE =
  'the operator\'s endpoints (seeds, feeds, blocks, crawl rates, opt-outs) are served by `crawl run --status-port` only when CRAWL_API_TOKEN is set as the run starts (and by `crawl serve` in Kafka mode). ' +
  'Without a port: `crawl seed URL --out DIR`, `crawl block HOST --out DIR` and `crawl optout set … --out DIR` reach a running embedded crawl (or the next run on DIR); ' +
  'or stop it (Ctrl-C) and run the same command with more --seed: it resumes where it stopped.';

export function createApiServer(backend: ApiBackend, opts: ApiOptions): Server {
  if (backend.send && !opts.token) throw new Error('the control API needs an operator token: set CRAWL_API_TOKEN');
  const now = backend.now ?? Date.now;
  const router = new Router();
  const html = statusPageHtml(opts.title ?? 'kcrawl');

  router
    .add('GET', '/', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html);
    })
    .add('GET', '/openapi.json', (_req, res) => sendJson(res, 200, backend.send ? openApiDocument() : readOnlyOpenApiDocument()))
    .add('GET', '/healthz', (_req, res) => sendJson(res, 200, { ok: true }))
    .add('GET', '/stats', (_req, res) => sendJson(res, 200, backend.view.snapshot(now(), backend.lag?.() ?? {})))
    .add('GET', '/metrics', async (_req, res) => {
      const text = await registry.metrics();
      res.writeHead(200, { 'content-type': registry.contentType }).end(text);
    })
    .add('GET', '/hosts/{host}', async (_req, res, m) => {
      const host = m.params.host.toLowerCase();
      if (!(await backend.view.hostKnown(host))) throw new ApiError(404, 'unknown_host', `the crawl has no URL, status or policy for ${host}`);
      sendJson(res, 200, { host, policy: backend.view.policy.fields(host), block: backend.view.policy.block(host, now()) });
    })
    .add('GET', '/urls/{url*}', async (_req, res, m) => {
      const row = await lookupUrl(backend.view, m.params.url);
      sendJson(res, 200, {
        url: row.url, host: row.host, state: row.state, depth: row.depth, attempts: row.attempts,
        discovered_at: row.discovered_at, updated_at: row.updated_at, last_fetch: row.fetched_at, http_status: row.http_status,
        next_due_at: row.next_due_at, content_sha256: row.sha256, reason: row.reason,
        warc: row.warc_uri === null ? null : { uri: row.warc_uri, offset: row.warc_offset, length: row.warc_length },
        // As the frontier set it; rows written before classes existed get the default rule's.
        priority_class: givenClass(row.priority_class) ?? priorityClassOf(row, DEFAULTS),
        feed: backend.view.feed(row.url) ? `/feeds/${encodeURIComponent(row.url)}` : null,
      });
    })
    .add('GET', '/pages', async (_req, res, m) => {
      const raw = m.url.searchParams.get('url');
      if (!raw) throw new ApiError(400, 'invalid_url', 'give ?url=<page URL>');
      const row = await lookupUrl(backend.view, raw);
      if (row.warc_uri === null || row.warc_offset === null || row.warc_length === null) throw new ApiError(404, 'not_stored', 'no stored copy of this URL yet');
      if (!backend.pages) throw new ApiError(503, 'no_page_store', 'this server has no page store configured');
      const bytes = await backend.pages.read(row.warc_uri, row.warc_offset, row.warc_length);
      const page = await extractPayload(bytes);
      res.writeHead(200, {
        'content-type': page.contentType ?? 'application/octet-stream',
        'content-length': page.payload.length,
        'x-crawl-url': row.url,
        'x-crawl-fetched-at': new Date(row.fetched_at ?? row.updated_at).toISOString(),
        'x-crawl-http-status': String(page.httpStatus ?? ''),
        'x-crawl-warc': `${row.warc_uri}#${row.warc_offset}+${row.warc_length}`,
        // Archived pages are third-party content: never let a browser run them as ours.
        'content-security-policy': "sandbox; default-src 'none'",
        'x-content-type-options': 'nosniff',
      });
      res.end(page.payload);
    });
  // The operator's routes are always registered (marked `operator`): a read-only server
  // (`crawl run --status-port` without CRAWL_API_TOKEN) answers them not_served before their handler runs.
  const send = backend.send ?? readOnlySend;
  operatorRoutes(router, { view: backend.view, send, now, maxBodyBytes: opts.maxBodyBytes ?? MAX_BODY_BYTES });
  if (backend.webmaster) webmasterRoutes(router, { ...backend.webmaster, view: backend.view, now, maxBodyBytes: opts.maxBodyBytes ?? MAX_BODY_BYTES });
  feedRoutes(router, { view: backend.view, send, now, maxBodyBytes: opts.maxBodyBytes ?? MAX_BODY_BYTES });

  const server = createServer((req, res) => {
    const started = Date.now();
    handle(req, res).then(
      () => opts.log.debug({ method: req.method, path: pathOf(req), status: res.statusCode, ms: Date.now() - started }, 'api request'),
      (err: unknown) => {
        const e = err instanceof ApiError ? err : err instanceof URIError ? new ApiError(400, 'invalid_path', 'bad percent-encoding in the path') : null;
        if (!e) {
          opts.log.error({ err, method: req.method, path: pathOf(req) }, 'api request failed');
          if (!res.headersSent) sendJson(res, 500, { error: 'internal', message: 'internal error; see the server log' });
          else res.destroy();
          return;
        }
        const body = (err as { body?: string }).body;
        opts.log.info({ method: req.method, path: pathOf(req), status: e.status, code: e.code, ...(body ? { body: body.slice(0, 200) } : {}) }, 'api request refused');
        if (!res.headersSent) sendError(res, e);
      },
    );
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://api.invalid');
    const found = router.find(req.method ?? 'GET', url.pathname);
    if (found === null) throw new ApiError(404, 'not_found', `no route ${url.pathname}; see GET /openapi.json`);
    if (found === 'methodNotAllowed') throw new ApiError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname}`);
    if (found.route.operator) {
      if (!backend.send) throw new ApiError(404, 'not_served', `${req.method} ${url.pathname}: ${READ_ONLY_NOTE}`);
      checkBearer(req, opts.token!);
    }
    await found.route.handler(req, res, { params: found.params, url });
  }

  return server;
}

/** The writer of a read-only server's operator routes: never called (they are answered not_served first). */
async function readOnlySend(): Promise<void> {
  throw new ApiError(404, 'not_served', READ_ONLY_NOTE);
}

/** A URL's row (read from the URL table's store), by the URL or the SHA-256 (hex) of it. */
async function lookupUrl(view: CrawlView, raw: string): Promise<UrlStateMsg> {
  if (/^[0-9a-f]{64}$/i.test(raw)) {
    const byHash = await view.url(raw, null);
    if (!byHash) throw new ApiError(404, 'unknown_url', 'no URL with that hash in the URL table (`crawl serve` keeps the hash index; `crawl run --status-port` looks URLs up by URL)');
    return byHash;
  }
  const n = normalizeUrl(raw);
  if (!n.ok) throw new ApiError(400, 'invalid_url', `not a crawlable URL (${n.reason}): ${n.detail}`);
  const row = await view.url(n.url, n.host);
  if (!row) throw new ApiError(404, 'unknown_url', `not in the URL table: ${n.url}`);
  return row;
}

/** The path without its query (a ?url= can be long and is the caller's data). */
function pathOf(req: IncomingMessage): string {
  return (req.url ?? '/').split('?')[0].slice(0, 300);
}

/** Listen and resolve with the bound port (0 picks a free one). */
export function listen(server: Server, port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : port);
    });
  });
}
