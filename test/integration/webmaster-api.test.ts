/**
 * The webmaster API end to end on the local stack: the built `crawl serve` as a child process
 * over real Kafka and the registry, accounts made with `crawl webmaster add-account`, DNS TXT
 * verification against a real DNS server on a loopback port (test/support/dns-server.ts, set as
 * CRAWL_WEBMASTER_DNS_SERVERS), and an independent reader (kafkajs + the registry client) checking
 * what was written. Every call, bad inputs included (bad token, unknown host, malformed JSON,
 * oversized body, wrong TXT record, a rate without verification): clear errors, nothing written.
 * Then the opt-out registry's lag as crawl serve shows it, with a `crawl process handoff` reporting.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import '../../connectors/kafka-lz4';
import type { HostPolicyMsg, OptOutAppliedMsg, OptOutMsg, WebmasterAuditMsg, WebmasterSiteMsg } from '../../lib/messages';
import { startTestDns, type TestDns } from '../support/dns-server';
import { callJson, eventually } from '../support/http-json';

import { CLI } from '../support/cli';
import { cliSync } from '../support/kafka-stack';
const prefix = `wm-${randomBytes(4).toString('hex')}.`;
const operatorToken = randomBytes(24).toString('hex');
const HOST = 'shop.example.test';
const TOPICS = ['crawl.webmaster-sites', 'crawl.webmaster-audit', 'crawl.host-policy', 'crawl.optout', 'crawl.optout-applied'];

interface Sent { topic: string; key: string; value: unknown }

describe('the webmaster API on crawl serve (Kafka mode)', () => {
  let dns: TestDns;
  let env: NodeJS.ProcessEnv;
  let serve: ChildProcess;
  let handoff: ChildProcess | undefined;
  let serveLog = '';
  let base = '';
  let owner = { id: '', token: '' };
  let other = { id: '', token: '' };
  const sent: Sent[] = [];
  const kafka = new Kafka({ clientId: 'wm-test-reader', brokers: process.env.CRAWL_KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const reader = kafka.consumer({ groupId: `${prefix}reader` });
  const registry = new SchemaRegistry({ host: process.env.CRAWL_REGISTRY_URL! });
  const sentTo = (topic: string): Sent[] => sent.filter((s) => s.topic === prefix + topic);
  const call = (method: string, path: string, body?: unknown, token: string | null = owner.token, type?: string) => callJson(base, method, path, body, { token, type });

  const cli = (args: string[]): string => cliSync(args, env);

  function account(name: string): { id: string; token: string } {
    const out = cli(['webmaster', 'add-account', name]);
    return { id: /webmaster account (wm_[0-9a-f]+)/.exec(out)![1], token: /token: (\S+)/.exec(out)![1] };
  }

  /** What the topics hold a moment after a refused call: nothing new. */
  async function nothingWritten(before: number): Promise<void> {
    await new Promise((r) => setTimeout(r, 1500));
    expect(sent.filter((s) => !s.topic.endsWith('crawl.optout-applied')).length).toBe(before);
  }
  const written = (): number => sent.filter((s) => !s.topic.endsWith('crawl.optout-applied')).length;

  beforeAll(async () => {
    dns = await startTestDns();
    env = {
      ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_API_TOKEN: operatorToken, CRAWL_LOG_LEVEL: 'info',
      CRAWL_WEBMASTER_DNS_SERVERS: dns.server, CRAWL_WEBMASTER_DNS_TIMEOUT_MS: '1000', CRAWL_WEBMASTER_REQUESTS_PER_MINUTE: '60',
      CRAWL_OPTOUT_REPORT_MS: '1000', CRAWL_OPTOUT_LAG_ALARM_MS: '4000',
    };
    cli(['init']);
    owner = account('Shop owner');
    other = account('Someone else');
    expect(cli(['webmaster', 'list-accounts'])).toMatch(new RegExp(`${owner.id}\\tShop owner\\tactive\\tcreated .* by operator:`));
    serve = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--host', '127.0.0.1'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    serve.stderr!.on('data', (d: Buffer) => (serveLog += d.toString()));
    let out = '';
    serve.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    base = await eventually('crawl serve to listen', () => /http:\/\/127\.0\.0\.1:(\d+)\//.exec(out)?.[0].replace(/\/$/, ''), 600).catch((e: Error) => {
      throw new Error(`${e.message}\n${serveLog}`);
    });
    await reader.connect();
    await reader.subscribe({ topics: TOPICS.map((t) => prefix + t), fromBeginning: true });
    await reader.run({
      eachMessage: async ({ topic, message }) =>
        void sent.push({ topic, key: message.key!.toString(), value: message.value === null ? null : await registry.decode(message.value) }),
    });
    // The reader has caught up (the two accounts' audit rows, by the operator who made them).
    const made = await eventually('the add-account audit rows', () => (sentTo('crawl.webmaster-audit').length >= 2 ? sentTo('crawl.webmaster-audit') : undefined), 600);
    expect(made.map((s) => (s.value as WebmasterAuditMsg).action)).toEqual(['add-account', 'add-account']);
    expect((made[0].value as WebmasterAuditMsg).actor).toMatch(/^operator:/);
    // The accounts made above are in crawl serve's view before the first call.
    await eventually('accounts in crawl serve', async () => ((await call('GET', '/webmaster/v1/sites')).status === 200 ? true : undefined));
  });

  afterAll(async () => {
    for (const p of [serve, handoff]) p?.kill('SIGTERM');
    await Promise.all([serve, handoff].map((p) => p && new Promise((r) => (p.exitCode !== null ? r(null) : p.once('close', r)))));
    await reader.disconnect();
    await dns?.close();
  });

  test('the OpenAPI document covers the webmaster endpoints', async () => {
    const paths = Object.keys((await call('GET', '/openapi.json')).json.paths as object);
    for (const p of ['/webmaster/v1/sites', '/webmaster/v1/sites/{host}', '/webmaster/v1/sites/{host}/verify', '/webmaster/v1/sites/{host}/crawl-rate', '/webmaster/v1/sites/{host}/opt-outs']) {
      expect(paths).toContain(p);
    }
  });

  test('a missing, wrong or operator token is refused, and tokens never reach the log', async () => {
    const before = written();
    expect((await call('POST', '/webmaster/v1/sites', { host: HOST }, null)).json.error).toBe('missing_token');
    const bad = await call('POST', '/webmaster/v1/sites', { host: HOST }, 'kcw_not-a-real-token');
    expect([bad.status, bad.json.error]).toEqual([403, 'invalid_token']);
    expect((await call('GET', '/webmaster/v1/sites', undefined, operatorToken)).status).toBe(403);
    await nothingWritten(before);
    expect(serveLog).not.toContain(owner.token);
    expect(serveLog).not.toContain('kcw_not-a-real-token');
  });

  test('adding a site: bad bodies get clear 4xx errors and write nothing; a good one answers the TXT record to publish', async () => {
    const before = written();
    const malformed = await call('POST', '/webmaster/v1/sites', '{"host": "shop.example.test"');
    expect([malformed.status, malformed.json.error]).toEqual([400, 'invalid_json']);
    const big = await call('POST', '/webmaster/v1/sites', { host: HOST, pad: 'x'.repeat(2 * 1024 * 1024) });
    expect([big.status, big.json.error]).toEqual([413, 'body_too_large']);
    expect((await call('POST', '/webmaster/v1/sites', `host=${HOST}`, owner.token, 'application/x-www-form-urlencoded')).status).toBe(415);
    for (const host of ['http://shop.example.test/', '', 'shop example', 42]) {
      const r = await call('POST', '/webmaster/v1/sites', { host });
      expect([r.status, r.json.error]).toEqual([400, 'invalid_host']);
    }
    await nothingWritten(before);

    const r = await call('POST', '/webmaster/v1/sites', { host: HOST });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ host: HOST, verification: { method: 'dns_txt', record: expect.stringMatching(/^kcrawl-verify=[0-9a-f]{16}$/) }, status: 'PENDING' });
    const again = await call('POST', '/webmaster/v1/sites', { host: HOST.toUpperCase() });
    expect([again.status, again.json]).toEqual([200, r.json]);
    const site = await eventually('the site row', () => sentTo('crawl.webmaster-sites').find((s) => s.key === `${HOST}|${owner.id}`));
    expect(site.value).toMatchObject({ host: HOST, account: owner.id, status: 'PENDING', record: (r.json.verification as { record: string }).record });
    const audit = await eventually('the audit row', () => sentTo('crawl.webmaster-audit').find((s) => (s.value as WebmasterAuditMsg).action === 'add-site'));
    expect(audit.value).toMatchObject({ actor: `account:${owner.id}`, host: HOST });
    expect((audit.value as WebmasterAuditMsg).at).toBeGreaterThan(Date.now() - 60_000);
  });

  test("unknown hosts, and another account's site, are 404 unknown_site", async () => {
    for (const [method, path, body] of [
      ['GET', '/webmaster/v1/sites/nobody.example.test', undefined],
      ['POST', '/webmaster/v1/sites/nobody.example.test/verify', undefined],
      ['PUT', '/webmaster/v1/sites/nobody.example.test/crawl-rate', { max_requests_per_second: 1, until: new Date(Date.now() + 3600_000).toISOString() }],
    ] as const) {
      const r = await call(method, path, body);
      expect([r.status, r.json.error]).toEqual([404, 'unknown_site']);
    }
    const theirs = await call('GET', `/webmaster/v1/sites/${HOST}`, undefined, other.token);
    expect([theirs.status, theirs.json.error]).toEqual([404, 'unknown_site']);
    expect((await call('GET', '/webmaster/v1/sites/bad%20host')).json.error).toBe('invalid_host');
  });

  test('before verification: no rate (above our default or below it) and no opt-out; nothing written', async () => {
    const before = written();
    const until = new Date(Date.now() + 3600_000).toISOString();
    const up = await call('PUT', `/webmaster/v1/sites/${HOST}/crawl-rate`, { max_requests_per_second: 5, until });
    expect([up.status, up.json.error]).toEqual([403, 'site_not_verified']);
    expect(up.json.message).toMatch(/raising our rate above the default \(1 requests\/s\) needs a verified site: publish the TXT record kcrawl-verify=/);
    const down = await call('PUT', `/webmaster/v1/sites/${HOST}/crawl-rate`, { max_requests_per_second: 0.5, until });
    expect([down.status, down.json.error]).toEqual([403, 'site_not_verified']);
    const opt = await call('PUT', `/webmaster/v1/sites/${HOST}/opt-outs`, { purposes: { ai_training: 'deny' } });
    expect([opt.status, opt.json.error]).toEqual([403, 'site_not_verified']);
    await nothingWritten(before);
  });

  test('verify: no TXT record, a wrong one, and DNS not answering are refused and leave it PENDING; the right record verifies it', async () => {
    const record = ((await call('POST', '/webmaster/v1/sites', { host: HOST })).json.verification as { record: string }).record;
    const before = written();
    const none = await call('POST', `/webmaster/v1/sites/${HOST}/verify`);
    expect([none.status, none.json.error]).toEqual([422, 'verification_failed']);
    expect(none.json.message).toMatch(/shop\.example\.test has no TXT record/);
    dns.setTxt(HOST, ['v=spf1 -all', 'kcrawl-verify=0000000000000000']);
    const wrong = await call('POST', `/webmaster/v1/sites/${HOST}/verify`);
    expect([wrong.status, wrong.json.error]).toEqual([422, 'verification_failed']);
    expect(wrong.json.details).toEqual({ expected: record, found: ['v=spf1 -all', 'kcrawl-verify=0000000000000000'], status: 'PENDING' });
    dns.silence('silent.example.test');
    await call('POST', '/webmaster/v1/sites', { host: 'silent.example.test' });
    const down = await call('POST', '/webmaster/v1/sites/silent.example.test/verify');
    expect([down.status, down.json.error]).toEqual([502, 'dns_unavailable']);
    expect(dns.queries).toContain(HOST);
    expect((await call('GET', `/webmaster/v1/sites/${HOST}`)).json.status).toBe('PENDING');
    await new Promise((r) => setTimeout(r, 1500));
    // Only the silent site's own add-site rows were written meanwhile.
    expect(sent.slice(before).filter((s) => !s.topic.endsWith('crawl.optout-applied')).every((s) => s.key.startsWith('silent.example.test'))).toBe(true);

    dns.setTxt(HOST, ['v=spf1 -all', record]);
    const ok = await call('POST', `/webmaster/v1/sites/${HOST}/verify`);
    expect(ok.status).toBe(200);
    expect(ok.json).toMatchObject({ host: HOST, status: 'VERIFIED', verification: { method: 'dns_txt', record } });
    const row = await eventually('the VERIFIED row', () => sentTo('crawl.webmaster-sites').find((s) => (s.value as WebmasterSiteMsg | null)?.status === 'VERIFIED'));
    expect((row.value as WebmasterSiteMsg).verified_at).toBeGreaterThan(0);
    await eventually('the verify audit row', () => sentTo('crawl.webmaster-audit').find((s) => (s.value as WebmasterAuditMsg).action === 'verify-site'));
  });

  test('crawl-rate: bad input refused; a verified rate is written for every frontier and fetch process, with its audit row', async () => {
    const before = written();
    const until = new Date(Date.now() + 3600_000).toISOString();
    for (const [body, code] of [
      [{ max_requests_per_second: 0, until }, 'invalid_crawl_rate'],
      [{ max_requests_per_second: 11, until }, 'invalid_crawl_rate'],
      [{ max_requests_per_second: 2 }, 'invalid_until'],
      [{ max_requests_per_second: 2, until: '2001-01-01T00:00:00Z' }, 'invalid_until'],
      ['{"max_requests_per_second": 2,', 'invalid_json'],
    ] as const) {
      const r = await call('PUT', `/webmaster/v1/sites/${HOST}/crawl-rate`, body);
      expect([r.status, r.json.error]).toEqual([400, code]);
    }
    await nothingWritten(before);

    const r = await call('PUT', `/webmaster/v1/sites/${HOST}/crawl-rate`, { max_requests_per_second: 2, until });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ host: HOST, max_requests_per_second: 2, until: new Date(until).toISOString(), min_gap_ms: 500 });
    const row = await eventually('the webmaster-rate row', () => sentTo('crawl.host-policy').find((s) => s.key === `${HOST}|webmaster-rate`));
    expect(row.value).toMatchObject({ host: HOST, field: 'webmaster-rate', min_delay_ms: 500, max_requests_per_second: 2, expires_at: Date.parse(until) } satisfies Partial<HostPolicyMsg>);
    const audit = await eventually('the rate audit row', () => sentTo('crawl.webmaster-audit').find((s) => (s.value as WebmasterAuditMsg).action === 'set-crawl-rate'));
    expect(JSON.parse((audit.value as WebmasterAuditMsg).detail)).toEqual({ max_requests_per_second: 2, until: Date.parse(until) });
  });

  test('opt-outs: a registry record in the design shape with the next version; GET shows status, rate and opt-outs', async () => {
    const wrongScope = await call('PUT', `/webmaster/v1/sites/${HOST}/opt-outs`, { purposes: { ai_training: 'deny' }, scope: 'registered_domain' });
    expect([wrongScope.status, wrongScope.json.error]).toEqual([400, 'invalid_scope']);
    const r = await call('PUT', `/webmaster/v1/sites/${HOST}/opt-outs`, { purposes: { ai_training: 'deny' } });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ host: HOST, registry_version: 1, opt_out: { subject: HOST, scope: 'host', purposes: { crawl: 'allow', search_index: 'allow', ai_training: 'deny' }, source: 'webmaster_console', verified: true } });
    const row = await eventually('the opt-out record', () => sentTo('crawl.optout').find((s) => s.key === HOST));
    expect(row.value).toMatchObject({ subject: HOST, scope: 'host', purposes: { crawl: 'allow', search_index: 'allow', ai_training: 'deny' }, source: 'webmaster_console', verified: true, registry_version: 1 } satisfies Partial<OptOutMsg>);

    const g = await call('GET', `/webmaster/v1/sites/${HOST}`);
    expect(g.status).toBe(200);
    expect(g.json).toMatchObject({
      host: HOST, status: 'VERIFIED',
      rate: { default_max_requests_per_second: 1, webmaster: { max_requests_per_second: 2 }, max_requests_per_second: 2, operator_min_gap_ms: null },
      blocked: null,
      opt_outs: { decisions: { crawl: 'allow', search_index: 'allow', ai_training: 'deny' }, registry_version: 1 },
      last_day: { requests: 0, errors: 0, mean_gap_ms: null },
    });
    expect((g.json.opt_outs as { records: unknown[] }).records).toHaveLength(1);
  });

  test('each account is rate-limited: 429 with Retry-After past CRAWL_WEBMASTER_REQUESTS_PER_MINUTE', async () => {
    const answers = [];
    for (let i = 0; i < 65; i++) answers.push(await call('GET', '/webmaster/v1/sites', undefined, other.token));
    const limited = answers.filter((a) => a.status === 429);
    expect(limited.length).toBeGreaterThan(0);
    expect(limited[0].json.error).toBe('rate_limited');
    expect(Number(limited[0].headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    // Another account is not limited by it.
    expect((await call('GET', '/webmaster/v1/sites')).status).toBe(200);
  });

  test('crawl webmaster disable-account: the account is listed disabled and its token refused (403 account_disabled)', async () => {
    const gone = account('Former owner');
    expect((await call('GET', '/webmaster/v1/sites', undefined, gone.token)).status).toBe(200);
    cli(['webmaster', 'disable-account', gone.id]);
    expect(cli(['webmaster', 'list-accounts'])).toMatch(new RegExp(`${gone.id}\\tFormer owner\\tdisabled`));
    const refused = await eventually('the disabled account refused', async () => {
      const r = await call('GET', '/webmaster/v1/sites', undefined, gone.token);
      return r.status === 403 ? r : undefined;
    });
    expect(refused.json.error).toBe('account_disabled');
    // An unknown account id is a clear error, and the other accounts are untouched.
    expect(() => cli(['webmaster', 'disable-account', 'wm_000000000000'])).toThrow(/no webmaster account wm_000000000000/);
    expect((await call('GET', '/webmaster/v1/sites')).status).toBe(200);
  });

  test('crawl serve shows each process\'s applied registry version, and raises the alarm for one behind past the limit', async () => {
    handoff = spawn(process.execPath, [CLI, 'process', 'handoff'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let procLog = '';
    handoff.stderr!.on('data', (d: Buffer) => (procLog += d.toString()));
    type Lag = { version: number; alarm: boolean; processes: Array<{ stage: string; applied_version: number; behind_s: number; alarm: boolean; silent: boolean; reporter: string }> };
    const lag = async (): Promise<Lag> => (await call('GET', '/stats')).json.optout_registry as Lag;
    const up = await eventually('the handoff process to report version 1', async () => {
      const l = await lag();
      return l.processes.find((p) => p.stage === 'handoff' && p.applied_version === 1 && !p.silent) ? l : undefined;
    }, 600).catch((e: Error) => {
      throw new Error(`${e.message}\n${procLog.slice(-3000)}`);
    });
    expect(up).toMatchObject({ version: 1, alarm: false });
    // The test's own reader of the topics may see the report after crawl serve did.
    const handoffReports = (): OptOutAppliedMsg[] => sentTo('crawl.optout-applied').map((s) => s.value as OptOutAppliedMsg).filter((v) => v.stage === 'handoff');
    const report = await eventually('the handoff report in crawl.optout-applied', () => handoffReports().at(-1), 300);
    expect(report).toMatchObject({ applied_version: 1, pid: handoff.pid });
    expect((await call('GET', '/metrics')).text).toMatch(/crawl_optout_registry_lag_alarm 0/);

    // A process that stays on version 0 (what a stuck frontier would report), heartbeat after heartbeat.
    const producer = kafka.producer();
    await producer.connect();
    const id = (await registry.getLatestSchemaId(`${prefix}crawl.optout-applied-value`));
    const stuck = async (): Promise<void> => {
      const value: OptOutAppliedMsg = { reporter: 'test:1:frontier:stuck', stage: 'frontier', machine: 'test', pid: 1, applied_version: 0, started_at: 0, reported_at: Date.now() };
      await producer.send({ topic: `${prefix}crawl.optout-applied`, messages: [{ key: value.reporter, value: await registry.encode(id, value) }] });
    };
    await stuck();
    const alarmed = await eventually('the alarm', async () => {
      await stuck();
      const l = await lag();
      return l.alarm ? l : undefined;
    }, 200);
    await producer.disconnect();
    expect(alarmed.processes.find((p) => p.reporter === 'test:1:frontier:stuck')).toMatchObject({ applied_version: 0, alarm: true });
    expect(alarmed.processes.find((p) => p.stage === 'handoff')).toMatchObject({ alarm: false, behind_s: 0 });
    const metrics = (await call('GET', '/metrics')).text;
    expect(metrics).toMatch(/crawl_optout_registry_lag_alarm 1/);
    expect(metrics).toMatch(/crawl_optout_registry_lag_seconds\{stage="frontier",instance="test:1"\} [4-9]/);
    expect(metrics).toMatch(/crawl_optout_registry_version_applied\{stage="serve"\} 1/);
    expect((await call('GET', '/')).text).toContain('id="registry-alarm"');
  }, 120_000);
});
