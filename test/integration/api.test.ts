/**
 * The control API end to end on the local stack: the built `crawl serve` as a child process
 * over real Kafka, registry and S3, a `crawl process all` crawling a loopback fixture site
 * (127.0.8.10), and an independent reader (kafkajs + the registry client) checking what the
 * API wrote to the topics. Bad inputs: invalid URL, unknown host, missing/wrong token,
 * oversized body, wrong content type.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
// crawl.links and crawl.host-policy are LZ4 batches (topologies/crawl.ts), and kafkajs has no LZ4
// codec: the reader registers ours, as any kafkajs reader of the crawl's own topics must.
// (The indexer's readers of crawl.handoff.v3, uncompressed, need none: test/e2e/kafka-crawl.test.ts.)
import '../../connectors/kafka-lz4';
import type { HostPolicyMsg, LinkMsg, OptOutMsg } from '../../lib/messages';
import { partitionForHost } from '../../lib/partitioner';
import { FixtureWeb, page } from '../fixtures/web';
import { callJson, eventually as until, type JsonAnswer } from '../support/http-json';

import { CLI } from '../support/cli';
import { cliSync } from '../support/kafka-stack';
const prefix = `api-${randomBytes(4).toString('hex')}.`;
const token = randomBytes(24).toString('hex');
const env = {
  ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_WARC_MAX_AGE_MS: '500', CRAWL_LOG_LEVEL: 'info',
  CRAWL_API_TOKEN: token,
};
const IP = '127.0.8.10';

interface Sent { topic: string; partition: number; key: string; value: unknown }

const cli = (args: string[]): string => cliSync(args, env);

describe('crawl serve: the control API on the Kafka stack', () => {
  let web: FixtureWeb;
  let serve: ChildProcess;
  let procs: ChildProcess;
  let serveLog = '';
  let procLog = '';
  let base = '';
  const sent: Sent[] = [];
  const kafka = new Kafka({ clientId: 'api-test-reader', brokers: process.env.CRAWL_KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const reader = kafka.consumer({ groupId: `${prefix}reader` });
  const registry = new SchemaRegistry({ host: process.env.CRAWL_REGISTRY_URL! });

  const call = (method: string, path: string, body?: unknown, opts: { auth?: string | null; type?: string } = {}): Promise<JsonAnswer> =>
    callJson(base, method, path, body, { token: opts.auth === undefined ? token : opts.auth, type: opts.type });
  const sentTo = (topic: string): Sent[] => sent.filter((s) => s.topic === prefix + topic);

  beforeAll(async () => {
    web = await FixtureWeb.start([{ ip: IP, pages: { '/': page('API home', ['/a']), '/a': page('API page a', []) } }]);
    cli(['init']);
    serve = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--host', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    serve.stderr!.on('data', (d: Buffer) => (serveLog += d.toString()));
    let out = '';
    serve.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    base = await until('crawl serve to listen', () => /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[0].replace(/\/$/, ''), 600).catch((e: Error) => {
      throw new Error(`${e.message}\n${serveLog}`);
    });
    procs = spawn(process.execPath, [CLI, 'process', 'all', '--allow-private-network'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    procs.stderr!.on('data', (d: Buffer) => (procLog += d.toString()));
    await reader.connect();
    await reader.subscribe({ topics: ['crawl.links', 'crawl.host-policy', 'crawl.optout', 'crawl.webmaster-audit'].map((t) => prefix + t), fromBeginning: true });
    await reader.run({
      eachMessage: async ({ topic, partition, message }) =>
        void sent.push({ topic, partition, key: message.key!.toString(), value: message.value === null ? null : await registry.decode(message.value) }),
    });
  });

  afterAll(async () => {
    serve?.kill('SIGTERM');
    procs?.kill('SIGTERM');
    await Promise.all([serve, procs].map((p) => p && new Promise((r) => (p.exitCode !== null ? r(null) : p.once('close', r)))));
    await reader.disconnect();
    await web?.stop();
  });

  test('serves its OpenAPI document, describing every route', async () => {
    const r = await call('GET', '/openapi.json');
    expect(r.status).toBe(200);
    expect(r.json.openapi).toMatch(/^3\./);
    const paths = Object.keys(r.json.paths as object);
    for (const p of ['/seeds', '/hosts/{host}/block', '/hosts/{host}/crawl-rate', '/optout/{subject}', '/urls/{url}', '/pages', '/stats', '/metrics']) expect(paths).toContain(p);
  });

  test('operator endpoints refuse a missing or wrong token, and never log it', async () => {
    const missing = await call('POST', '/seeds', { urls: [`${web.origin(IP)}/`] }, { auth: null });
    expect(missing.status).toBe(401);
    expect(missing.json.error).toBe('missing_token');
    const wrong = await call('POST', '/seeds', { urls: [`${web.origin(IP)}/`] }, { auth: 'not-the-token' });
    expect(wrong.status).toBe(403);
    expect(wrong.json.error).toBe('invalid_token');
    expect(serveLog).not.toContain(token);
    expect(serveLog).not.toContain('not-the-token');
  });

  test('bad inputs get clear 4xx JSON errors: invalid URL, oversized body, not JSON, bad host, unknown host', async () => {
    const invalid = await call('POST', '/seeds', { urls: [`${web.origin(IP)}/ok`, 'notaurl', 'ftp://x.example/'] });
    expect(invalid.status).toBe(400);
    expect(invalid.json.error).toBe('invalid_url');
    expect((invalid.json.details as { invalid: Array<{ index: number }> }).invalid.map((i) => i.index)).toEqual([1, 2]);

    const big = await call('POST', '/seeds', { urls: ['http://a.example/' + 'x'.repeat(2 * 1024 * 1024)] });
    expect(big.status).toBe(413);
    expect(big.json.error).toBe('body_too_large');

    const notJson = await call('POST', '/seeds', 'urls=http://a.example/', { type: 'application/x-www-form-urlencoded' });
    expect(notJson.status).toBe(415);
    const broken = await call('POST', '/seeds', '{"urls": [', {});
    expect(broken.status).toBe(400);
    expect(broken.json.error).toBe('invalid_json');

    const badHost = await call('POST', '/hosts/bad host:80/block', { duration_s: 60 });
    expect(badHost.status).toBe(400);
    expect(badHost.json.error).toBe('invalid_host');
    const unknown = await call('POST', '/hosts/nowhere.invalid/block', { duration_s: 60, reason: 'typo?' });
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toBe('unknown_host');
    expect((await call('GET', '/hosts/nowhere.invalid')).status).toBe(404);
    expect((await call('DELETE', '/hosts/nowhere.invalid/block')).status).toBe(404);
    const noExpiry = await call('POST', `/hosts/${IP}/block`, { reason: 'forever?', force: true });
    expect(noExpiry.status).toBe(400);
    expect(noExpiry.json.error).toBe('invalid_expiry');
    expect((await call('PUT', '/optout/example.com', { purpose: 'everything', allowed: false })).status).toBe(400);
    expect((await call('GET', '/urls/notaurl')).status).toBe(400);
    expect((await call('GET', '/nope')).status).toBe(404);

    // The refused body is logged under its own key only, cut short.
    expect(serveLog).toMatch(/"body":"\{\\"urls\\":\[\\"http:\/\/127\.0\.8\.10/);
    // Nothing refused reached the log.
    await new Promise((r) => setTimeout(r, 500));
    expect(sentTo('crawl.links')).toHaveLength(0);
    expect(sentTo('crawl.host-policy')).toHaveLength(0);
  });

  test('POST /seeds: the site is crawled; GET /urls, GET /pages and GET /stats show it', async () => {
    const home = `${web.origin(IP)}/`;
    const r = await call('POST', '/seeds', { urls: [home] });
    expect(r.status).toBe(202);
    expect(r.json.seeded).toBe(1);
    const link = await until('the seed on crawl.links', () => sentTo('crawl.links')[0]);
    expect(link.key).toBe(IP);
    expect(link.partition).toBe(partitionForHost(IP, 8));
    expect(link.value as LinkMsg).toMatchObject({ url: home, is_seed: true, depth: 0 });

    const row = await until('the home page fetched and stored', async () => {
      const u = await call('GET', `/urls/${encodeURIComponent(home)}`);
      return u.status === 200 && u.json.warc !== null && u.json.state === 'FETCHED' ? u.json : undefined;
    }, 600).catch((e: Error) => {
      throw new Error(`${e.message}\nprocess log:\n${procLog.slice(-3000)}`);
    });
    expect(row).toMatchObject({ url: home, host: IP, http_status: 200 });
    expect(row.content_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(typeof row.last_fetch).toBe('number');
    expect((row.warc as { uri: string }).uri).toMatch(/^s3:\/\//);

    const { createHash } = await import('node:crypto');
    const byHash = await call('GET', `/urls/${createHash('sha256').update(home).digest('hex')}`);
    expect(byHash.json.url).toBe(home);

    const stored = await call('GET', `/pages?url=${encodeURIComponent(home)}`);
    expect(stored.status).toBe(200);
    expect(stored.headers.get('content-type')).toMatch(/text\/html/);
    expect(stored.headers.get('content-security-policy')).toMatch(/sandbox/);
    expect(stored.text).toBe(page('API home', ['/a']));
    expect((await call('GET', `/pages?url=${encodeURIComponent(`${web.origin(IP)}/never`)}`)).status).toBe(404);

    // Consumer lag is polled every LAG_POLL_MS (one admin round trip per group, in turn): on a
    // busy machine the crawl can count its pages before the first poll has reached every group.
    const stats = await until('stats to count the pages and every group\'s lag', async () => {
      const s = await call('GET', '/stats');
      const lag = Object.keys((s.json.queues as { lag: object }).lag);
      return (s.json.pages_total as number) >= 2 && lag.includes('crawl.fetch') ? s.json : undefined;
    }, 300);
    expect((stats.top_hosts as Array<{ host: string }>)[0].host).toBe(IP);
    expect(Object.keys((stats.queues as { lag: object }).lag)).toEqual(expect.arrayContaining(['crawl.links', 'crawl.fetch']));
    const metrics = await call('GET', '/metrics');
    expect(metrics.text).toMatch(/crawl_consumer_lag_messages\{group="crawl.fetch",topic="crawl.fetch"\} \d+/);
    expect(metrics.text).toMatch(/crawl_hosts_in_rotation \d+/);
    const page0 = await call('GET', '/');
    expect(page0.text).toContain('id="pages-total"');
  });

  test('blocks, crawl rates and opt-outs are written as table rows; DELETE writes a tombstone', async () => {
    const block = await call('POST', `/hosts/${IP}/block`, { duration_s: 3600, reason: 'webmaster asked' });
    expect(block.status).toBe(202);
    const row = await until('the block row', () => sentTo('crawl.host-policy').find((s) => s.key === `${IP}|block`));
    const v = row.value as HostPolicyMsg;
    expect(v).toMatchObject({ host: IP, field: 'block', reason: 'webmaster asked', min_delay_ms: null });
    expect(v.blocked_until! - Date.now()).toBeGreaterThan(3500_000);
    expect(row.partition).toBe(partitionForHost(IP, 8));
    const shown = await until('GET /hosts to show the block', async () => {
      const h = await call('GET', `/hosts/${IP}`);
      return h.json.block ? h.json : undefined;
    });
    expect((shown.block as { reason: string }).reason).toBe('webmaster asked');
    expect((await call('GET', '/stats')).json.blocks).toEqual([expect.objectContaining({ host: IP })]);

    expect((await call('DELETE', `/hosts/${IP}/block`)).status).toBe(202);
    await until('the tombstone', () => sentTo('crawl.host-policy').find((s) => s.key === `${IP}|block` && s.value === null));

    const rate = await call('PUT', `/hosts/${IP}/crawl-rate`, { min_delay_ms: 5000 });
    expect(rate.status).toBe(202);
    const rateRow = await until('the crawl-rate row', () => sentTo('crawl.host-policy').find((s) => s.key === `${IP}|crawl-rate`));
    expect(rateRow.value).toMatchObject({ field: 'crawl-rate', min_delay_ms: 5000, blocked_until: null });
    expect((await call('PUT', `/hosts/${IP}/crawl-rate`, { min_delay_ms: -1 })).status).toBe(400);

    // The first version's body still works; the record written is the subject's, in the registry's shape.
    expect((await call('PUT', '/optout/example.com', { purpose: 'ai_training', allowed: false })).status).toBe(202);
    expect((await call('PUT', '/optout/example.org', { purposes: { search_index: 'deny', crawl: 'deny' }, scope: 'registered_domain' })).status).toBe(202);
    const optouts = await until('two opt-out rows', () => (sentTo('crawl.optout').length >= 2 ? sentTo('crawl.optout') : undefined));
    const values = optouts.map((o) => o.value as OptOutMsg);
    expect(optouts.map((o) => o.key).sort()).toEqual(['example.com', 'example.org']);
    expect(values.map((o) => o.registry_version).sort()).toEqual([1, 2]);
    expect(values.find((o) => o.subject === 'example.com')).toMatchObject({
      scope: 'registered_domain', purposes: { crawl: 'allow', search_index: 'allow', ai_training: 'deny' }, source: 'operator_api', verified: false,
    });
    expect(values.find((o) => o.subject === 'example.org')!.purposes).toEqual({ crawl: 'deny', search_index: 'deny', ai_training: 'allow' });
    // Each change has its audit row, by the operator.
    const audits = await until('the audit rows', () => (sentTo('crawl.webmaster-audit').length >= 5 ? sentTo('crawl.webmaster-audit') : undefined));
    expect(audits.map((a) => (a.value as { action: string }).action).sort()).toEqual(['block', 'remove-block', 'set-crawl-rate', 'set-opt-out', 'set-opt-out']);
    expect(audits.every((a) => (a.value as { actor: string }).actor === 'operator:api')).toBe(true);
  });
});
