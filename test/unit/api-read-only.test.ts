/**
 * A read-only API server (`crawl run --status-port`: no writer, no operator token) says plainly
 * that the operator's endpoints are not served there and how to add seeds to an embedded crawl,
 * and its /openapi.json lists only what it serves. Before, POST /seeds got "no route /seeds; see
 * GET /openapi.json" from a server whose /openapi.json listed POST /seeds. Real loopback socket.
 */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { CrawlView } from '../../api/crawl-view';
import { createApiServer, READ_ONLY_NOTE } from '../../api/server';
import { callJson } from '../support/http-json';

let server: Server;
let base = '';

beforeAll(async () => {
  server = createApiServer({ view: new CrawlView() }, { token: null, log: pino({ level: 'silent' }) });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('a read-only API server', () => {
  it('answers the operator endpoints with not_served and what to do instead', async () => {
    for (const [method, path] of [['POST', '/seeds'], ['POST', '/hosts/a.test/block'], ['DELETE', '/hosts/a.test/crawl-rate'], ['PUT', '/optout/a.test'], ['POST', '/feeds']]) {
      const r = await callJson(base, method, path, {});
      expect([path, r.status, r.json]).toEqual([path, 404, { error: 'not_served', message: `${method} ${path}: ${READ_ONLY_NOTE}` }]);
    }
    expect(READ_ONLY_NOTE).toContain('run the same command with more --seed');
    // Unknown paths and wrong methods on served paths are answered as before.
    expect((await callJson(base, 'GET', '/nowhere')).json.error).toBe('not_found');
    expect((await callJson(base, 'POST', '/stats', {})).json.error).toBe('method_not_allowed');
  });

  it('publishes an OpenAPI document of the routes it serves only', async () => {
    const doc = (await callJson(base, 'GET', '/openapi.json')).json as { paths: Record<string, Record<string, unknown>>; info: { description: string } };
    expect(doc.paths['/seeds']).toBeUndefined();
    expect(doc.paths['/hosts/{host}/block']).toBeUndefined();
    expect(Object.keys(doc.paths['/feeds'])).toEqual(['get']);
    expect(doc.paths['/stats']).toBeDefined();
    expect(doc.paths['/webmaster/v1/sites']).toBeDefined();
    expect(doc.info.description).toMatch(/^A read-only server/);
  });
});
