/**
 * The OpenAPI 3 description `crawl serve` publishes at GET /openapi.json. Written by hand next
 * to the routes (api/server.ts, api/operator-routes.ts); test/integration/api.test.ts checks
 * that every route it calls is described here.
 */
const error = { $ref: '#/components/responses/Error' };
const json = (schema: object): object => ({ 'application/json': { schema } });
const hostParam = { name: 'host', in: 'path', required: true, description: 'Lower-case host name (IDNs in punycode), no port', schema: { type: 'string' } };
const operator = { security: [{ bearer: [] }] };
const accepted = { description: 'Written durably to the log; every process applies it from there', content: json({ type: 'object' }) };
/** crawl.feeds rows (schemas/crawl.FeedState.v1.avsc has every field's meaning). */
const feedState = {
  type: 'object',
  properties: {
    url: { type: 'string' }, host: { type: 'string' }, kind: { type: 'string', enum: ['rss', 'atom', 'rdf', 'news-sitemap'] },
    interval_ms: { type: 'integer' }, added_at: { type: 'integer' }, last_polled_at: { type: 'integer' }, last_ok_at: { type: 'integer' },
    last_status: { type: 'integer', nullable: true }, etag: { type: 'string', nullable: true }, last_modified: { type: 'string', nullable: true },
    items_seen: { type: 'array', items: { type: 'string' } }, new_items: { type: 'integer' }, polls: { type: 'integer' }, items_total: { type: 'integer' },
    failures: { type: 'integer' }, updated_at: { type: 'integer' },
  },
};

const decision = { type: 'string', enum: ['allow', 'deny'] };
const optOutBody = {
  type: 'object', required: ['purposes'],
  properties: {
    purposes: { type: 'object', minProperties: 1, additionalProperties: false, properties: { crawl: decision, search_index: decision, ai_training: decision } },
    scope: { type: 'string', enum: ['host', 'registered_domain'], description: 'registered_domain: the subject (which must be one) and every host under it' },
  },
};
const webmaster = { security: [{ webmaster: [] }] };
const wmErrors = { 400: error, 401: error, 403: error, 404: error, 413: error, 415: error, 429: error };
const siteHost = { ...hostParam, description: 'A host this account has added (POST /webmaster/v1/sites)' };
const verification = { type: 'object', properties: { method: { type: 'string', enum: ['dns_txt'] }, record: { type: 'string', example: 'kcrawl-verify=3f9a1c07e5b2d4a8' } } };

/** The webmaster API (api/webmaster-routes.ts). */
function webmasterPaths(): Record<string, object> {
  return {
    '/webmaster/v1/sites': {
      post: {
        ...webmaster, summary: 'Claim a host: answers the DNS TXT record to publish at it (201; 200 with the same record when already claimed)',
        requestBody: { required: true, content: json({ type: 'object', required: ['host'], properties: { host: { type: 'string', example: 'shop.example.com' } } }) },
        responses: {
          201: { description: 'Claimed, to be verified', content: json({ type: 'object', properties: { host: { type: 'string' }, verification, status: { type: 'string', enum: ['PENDING', 'VERIFIED'] } } }) },
          200: { description: 'Already claimed by this account' }, 409: error, ...wmErrors,
        },
      },
      get: { ...webmaster, summary: "This account's sites and their status", responses: { 200: { description: 'Sites', content: json({ type: 'object' }) }, 401: error, 403: error, 429: error } },
    },
    '/webmaster/v1/sites/{host}': {
      get: {
        ...webmaster, parameters: [siteHost],
        summary: 'Status, rate (default, webmaster, operator, in force), block, opt-outs (decisions and records) and what we fetched from the host in the last day (requests, errors, mean and least gap)',
        responses: { 200: { description: 'The site', content: json({ type: 'object' }) }, ...wmErrors },
      },
    },
    '/webmaster/v1/sites/{host}/verify': {
      post: {
        ...webmaster, parameters: [siteHost], summary: 'Look the TXT record up in DNS: VERIFIED, or 422 verification_failed with what was found (502 dns_unavailable when DNS did not answer)',
        responses: { 200: { description: 'VERIFIED', content: json({ type: 'object' }) }, 422: error, 502: error, ...wmErrors },
      },
    },
    '/webmaster/v1/sites/{host}/crawl-rate': {
      put: {
        ...webmaster, parameters: [siteHost],
        summary: 'A ceiling on our rate for the host until `until` (a verified site): every frontier and fetch process applies it within 60 s, in place of our default; Crawl-delay, slow answers and 429/503 only slow us further',
        requestBody: {
          required: true,
          content: json({ type: 'object', required: ['max_requests_per_second', 'until'], properties: { max_requests_per_second: { type: 'number', exclusiveMinimum: 0, example: 2 }, until: { type: 'string', format: 'date-time' } } }),
        },
        responses: { 200: { description: 'Set', content: json({ type: 'object' }) }, ...wmErrors },
      },
      delete: { ...webmaster, parameters: [siteHost], summary: 'Remove the webmaster rate (our default applies again)', responses: { 200: { description: 'Removed' }, ...wmErrors } },
    },
    '/webmaster/v1/sites/{host}/opt-outs': {
      put: {
        ...webmaster, parameters: [siteHost], summary: 'Set the host\'s opt-outs (a verified site; source webmaster_console, verified): crawl, search_index, ai_training',
        requestBody: { required: true, content: json(optOutBody) },
        responses: { 200: { description: 'Recorded with the next registry version', content: json({ type: 'object' }) }, ...wmErrors },
      },
    },
  };
}

export function openApiDocument(): object {
  return {
    openapi: '3.0.3',
    info: {
      title: 'kcrawl control API',
      version: '0.1.0',
      description:
        'Seed the crawl, block hosts, set crawl rates and opt-outs, look up URLs and stored pages, and watch the crawl. ' +
        'Endpoints that change the crawl need `Authorization: Bearer <CRAWL_API_TOKEN>`; the webmaster API (/webmaster/v1) takes a webmaster account token instead. Errors are JSON `{error, message, details?}`. ' +
        'Request bodies are limited to 1 MiB.',
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'The operator token, CRAWL_API_TOKEN' },
        webmaster: { type: 'http', scheme: 'bearer', description: 'A webmaster account token (crawl webmaster add-account); each account may make CRAWL_WEBMASTER_REQUESTS_PER_MINUTE calls a minute' },
      },
      responses: {
        Error: {
          description: 'A refused request: 400 invalid input, 401 missing token, 403 wrong token or site not verified, 404 unknown host/URL/site, 409 too many sites, 413 body too large, 415 not JSON, 422 TXT record not found, 429 rate limited (Retry-After), 502 DNS did not answer',
          content: json({ type: 'object', required: ['error', 'message'], properties: { error: { type: 'string' }, message: { type: 'string' }, details: {} } }),
        },
      },
    },
    paths: {
      '/seeds': {
        post: {
          ...operator, summary: 'Send seed URLs to crawl.links (all or nothing: one invalid URL refuses the request)',
          requestBody: { required: true, content: json({ type: 'object', required: ['urls'], properties: { urls: { type: 'array', items: { type: 'string', format: 'uri' }, maxItems: 10000 } } }) },
          responses: { 202: accepted, 400: error, 401: error, 403: error, 413: error, 415: error },
        },
      },
      '/hosts/{host}': {
        get: { summary: "A host's policy rows and the block in force", parameters: [hostParam], responses: { 200: { description: 'Policy', content: json({ type: 'object' }) }, 404: error } },
      },
      '/hosts/{host}/block': {
        post: {
          ...operator, summary: 'Block a host until a time; fetch processes stop requesting it', parameters: [hostParam],
          requestBody: {
            required: true,
            content: json({
              type: 'object',
              properties: {
                expires_at: { oneOf: [{ type: 'string', format: 'date-time' }, { type: 'integer', description: 'epoch ms' }] },
                duration_s: { type: 'number', exclusiveMinimum: 0 },
                reason: { type: 'string', maxLength: 500 },
                force: { type: 'boolean', description: 'Set it even for a host the crawl has not seen' },
              },
            }),
          },
          responses: { 202: accepted, 400: error, 401: error, 403: error, 404: error, 413: error, 415: error },
        },
        delete: { ...operator, summary: 'Lift a block (a tombstone on host|block)', parameters: [hostParam], responses: { 202: accepted, 401: error, 403: error, 404: error } },
      },
      '/hosts/{host}/crawl-rate': {
        put: {
          ...operator, summary: 'Set the least gap between two requests to a host', parameters: [hostParam],
          requestBody: { required: true, content: json({ type: 'object', required: ['min_delay_ms'], properties: { min_delay_ms: { type: 'integer', minimum: 0, maximum: 86400000 }, reason: { type: 'string' }, force: { type: 'boolean' } } }) },
          responses: { 202: accepted, 400: error, 401: error, 403: error, 404: error, 413: error, 415: error },
        },
        delete: { ...operator, summary: 'Remove the crawl-rate rule', parameters: [hostParam], responses: { 202: accepted, 401: error, 403: error, 404: error } },
      },
      '/optout/{subject}': {
        put: {
          ...operator,
          summary: "Set a host's or registered domain's opt-outs (source operator_api, the next registry_version); the purposes not given keep their decisions",
          parameters: [{ name: 'subject', in: 'path', required: true, schema: { type: 'string' } }],
          requestBody: {
            required: true,
            content: json({
              oneOf: [
                optOutBody,
                { type: 'object', required: ['purpose', 'allowed'], description: 'The first version\'s form: one purpose', properties: { purpose: { type: 'string', enum: ['crawl', 'search_index', 'ai_training'] }, allowed: { type: 'boolean' } } },
              ],
            }),
          },
          responses: { 202: accepted, 400: error, 401: error, 403: error, 413: error, 415: error },
        },
      },
      '/feeds': {
        get: {
          summary: 'The feeds the crawl polls (RSS, Atom, news sitemaps; crawl.feeds), in URL order',
          parameters: [
            { name: 'host', in: 'query', required: false, description: 'Only the feeds of this host', schema: { type: 'string' } },
            { name: 'after', in: 'query', required: false, description: 'Start after this feed URL (the previous page\'s next_after)', schema: { type: 'string' } },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 } },
          ],
          responses: {
            200: {
              description: 'A page of feeds',
              content: json({ type: 'object', required: ['total', 'feeds', 'next_after'], properties: { total: { type: 'integer' }, feeds: { type: 'array', items: feedState }, next_after: { type: 'string', nullable: true } } }),
            },
            400: error,
          },
        },
        post: {
          ...operator, summary: 'Poll these feeds: each goes to crawl.links in priority class 1 (as `crawl seed --feed`); all or nothing',
          requestBody: { required: true, content: json({ type: 'object', required: ['urls'], properties: { urls: { type: 'array', items: { type: 'string', format: 'uri' }, maxItems: 10000 } } }) },
          responses: { 202: accepted, 400: error, 401: error, 403: error, 413: error, 415: error },
        },
      },
      '/feeds/{url}': {
        get: {
          summary: 'One feed the crawl polls: interval, last poll, items, failures',
          parameters: [{ name: 'url', in: 'path', required: true, description: 'The feed URL, percent-encoded as one path segment', schema: { type: 'string' } }],
          responses: { 200: { description: 'The feed', content: json(feedState) }, 400: error, 404: error },
        },
      },
      ...webmasterPaths(),
      '/urls/{url}': {
        get: {
          summary: "A URL's row of the URL table: state, last fetch, next due, content hash, WARC pointer, priority_class (1 high, 2, 3 low), its feed if it is one",
          parameters: [{ name: 'url', in: 'path', required: true, description: 'The URL, percent-encoded as one path segment, or the hex SHA-256 of the normalised URL', schema: { type: 'string' } }],
          responses: { 200: { description: 'The row', content: json({ type: 'object' }) }, 400: error, 404: error },
        },
      },
      '/pages': {
        get: {
          summary: 'The latest stored copy of a page, read from its WARC file by offset (served sandboxed)',
          parameters: [{ name: 'url', in: 'query', required: true, schema: { type: 'string' } }],
          responses: { 200: { description: 'The payload with its stored Content-Type' }, 400: error, 404: error },
        },
      },
      '/stats': { get: { summary: 'Live numbers for the status page', responses: { 200: { description: 'Stats', content: json({ type: 'object' }) } } } },
      '/metrics': { get: { summary: 'Prometheus metrics of this process', responses: { 200: { description: 'Text exposition format' } } } },
      '/': { get: { summary: 'The live status page (HTML)', responses: { 200: { description: 'HTML' } } } },
      '/openapi.json': { get: { summary: 'This document', responses: { 200: { description: 'OpenAPI 3' } } } },
    },
  };
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch']);

/**
 * The document a read-only server publishes (`crawl run --status-port`): without the operations
 * that need the operator token, which such a server does not serve.
 */
export function readOnlyOpenApiDocument(): object {
  type Op = { security?: Array<Record<string, unknown>> };
  const doc = openApiDocument() as { info: { description: string }; paths: Record<string, Record<string, unknown>> };
  const paths: Record<string, Record<string, unknown>> = {};
  for (const [path, item] of Object.entries(doc.paths)) {
    const kept = Object.entries(item).filter(([k, op]) => !METHODS.has(k) || !(op as Op).security?.some((s) => 'bearer' in s));
    if (kept.some(([k]) => METHODS.has(k))) paths[path] = Object.fromEntries(kept);
  }
  return {
    ...doc,
    info: { ...doc.info, description: `A read-only server (\`crawl run --status-port\`): the status page, /stats, /metrics, URL and feed look-ups and the webmaster API; the operator's endpoints are served by \`crawl serve\`, and by \`crawl run --status-port\` when CRAWL_API_TOKEN is set as it starts. ${doc.info.description}` },
    paths,
  };
}
