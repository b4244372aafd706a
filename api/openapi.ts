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

export function openApiDocument(): object {
  return {
    openapi: '3.0.3',
    info: {
      title: 'kcrawl control API',
      version: '0.1.0',
      description:
        'Seed the crawl, block hosts, set crawl rates and opt-outs, look up URLs and stored pages, and watch the crawl. ' +
        'Endpoints that change the crawl need `Authorization: Bearer <CRAWL_API_TOKEN>`. Errors are JSON `{error, message, details?}`. ' +
        'Request bodies are limited to 1 MiB.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      responses: {
        Error: {
          description: 'A refused request: 400 invalid input, 401 missing token, 403 wrong token, 404 unknown host/URL, 413 body too large, 415 not JSON',
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
          ...operator, summary: 'Record an opt-out decision for a host or registered domain (next registry_version)',
          parameters: [{ name: 'subject', in: 'path', required: true, schema: { type: 'string' } }],
          requestBody: { required: true, content: json({ type: 'object', required: ['purpose', 'allowed'], properties: { purpose: { type: 'string', enum: ['crawl', 'search_index', 'ai_training'] }, allowed: { type: 'boolean' } } }) },
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
