/**
 * The opt-out registry in Kafka mode on the real local stack: `crawl process all` runs as a
 * child process; `crawl optout set` writes crawl.optout; every handoff event for the subject
 * fetched after that carries the flag and the new registry version (the promise is "within
 * 60 s"; the handoff stage follows the table live, so the test holds it to every event after
 * the command returned), while other hosts keep their flags but carry the new version too.
 *
 * Fixture hosts are IP addresses, whose "registered domain" is the address itself, so the
 * subject here is the host; domain-wide subjects are covered by test/unit/handoff.test.ts.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import type { HandoffEvent } from '../../lib/messages';
import { FixtureWeb, page } from '../fixtures/web';

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');
const prefix = `e2e-optout-${randomBytes(4).toString('hex')}.`;
const env = { ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_WARC_MAX_AGE_MS: '300', CRAWL_LOG_LEVEL: 'info' };
const OPTED = '127.0.7.21';
const OTHER = '127.0.7.22';

function cli(args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`crawl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

describe('opt-out registry, Kafka mode', () => {
  let web: FixtureWeb;
  let proc: ChildProcess;
  let procLog = '';
  const events: HandoffEvent[] = [];
  const kafka = new Kafka({ clientId: 'e2e-optout-indexer', brokers: process.env.CRAWL_KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `${prefix}indexer` });
  const url = (ip: string, path: string): string => `${web.origin(ip)}${path}`;

  async function eventsFor(urls: string[]): Promise<HandoffEvent[]> {
    const want = new Set(urls);
    for (let i = 0; i < 900; i++) {
      const got = events.filter((e) => want.has(e.url));
      if (new Set(got.map((e) => e.url)).size === want.size) return got;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${urls.join(', ')}; processor log:\n${procLog.slice(-4000)}`);
  }

  beforeAll(async () => {
    const pages = (title: string): Record<string, string> =>
      Object.fromEntries(['/', '/late-1', '/late-2'].map((p) => [p, page(`${title} ${p}`, [], `Distinct words for ${title} at ${p}: ${p.repeat(20)}`)]));
    web = await FixtureWeb.start([{ ip: OPTED, pages: pages('Opted') }, { ip: OTHER, pages: pages('Other') }]);
    cli(['init']);
    proc = spawn(process.execPath, [CLI, 'process', 'all', '--allow-private-network'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stderr!.on('data', (d: Buffer) => (procLog += d.toString()));
    const registry = new SchemaRegistry({ host: process.env.CRAWL_REGISTRY_URL! });
    await consumer.connect();
    await consumer.subscribe({ topic: `${prefix}crawl.handoff.v3`, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void events.push((await registry.decode(message.value!)) as HandoffEvent) });
  });

  afterAll(async () => {
    proc?.kill('SIGTERM');
    await new Promise((r) => proc?.once('close', r));
    await consumer.disconnect();
    await web?.stop();
  });

  test('before any opt-out: everything usable, registry version 0', async () => {
    cli(['seed', url(OPTED, '/'), url(OTHER, '/')]);
    const before = await eventsFor([url(OPTED, '/'), url(OTHER, '/')]);
    for (const e of before) expect(e).toMatchObject({ usage: { search_index: true, ai_training: true }, usage_registry_version: 0 });
  });

  test('after `crawl optout set`, every new event for the subject carries the flag and the new version', async () => {
    expect(cli(['optout', 'set', OPTED, 'ai_training', 'deny'])).toMatch(/ai_training deny: registry version 1/);
    const setAt = Date.now();
    cli(['seed', url(OPTED, '/late-1'), url(OTHER, '/late-1')]);
    const after = await eventsFor([url(OPTED, '/late-1'), url(OTHER, '/late-1')]);
    const opted = after.find((e) => e.url === url(OPTED, '/late-1'))!;
    const other = after.find((e) => e.url === url(OTHER, '/late-1'))!;
    expect(opted).toMatchObject({ usage: { search_index: true, ai_training: false }, usage_registry_version: 1 });
    expect(other).toMatchObject({ usage: { search_index: true, ai_training: true }, usage_registry_version: 1 });
    expect(opted.fetched_at - setAt).toBeLessThan(60_000);
    process.stdout.write(`optout: first flagged event fetched ${opted.fetched_at - setAt} ms after the registry change\n`);
  });

  test('each change bumps the version; list shows the registry', async () => {
    expect(cli(['optout', 'set', OPTED, 'search_index', 'deny'])).toMatch(/registry version 2/);
    cli(['seed', url(OPTED, '/late-2')]);
    const [e] = await eventsFor([url(OPTED, '/late-2')]);
    expect(e).toMatchObject({ usage: { search_index: false, ai_training: false }, usage_registry_version: 2 });
    const listed = cli(['optout', 'list']);
    // One record per subject, in the registry's shape: both decisions, the source, the version.
    expect(listed).toMatch(new RegExp(`^${OPTED.replace(/\./g, '\\.')}\thost\tcrawl=allow search_index=deny ai_training=deny\toperator_cli\t\\S+Z\tv2$`, 'm'));
    expect(listed).toMatch(/registry version 2, 1 subject\(s\)/);
    // Every event for the opted host fetched after the first change is flagged.
    const all = events.filter((x) => x.url.startsWith(web.origin(OPTED)) && x.usage_registry_version >= 1);
    expect(all.length).toBeGreaterThanOrEqual(2);
    for (const x of all) expect(x.usage.ai_training).toBe(false);
  });

  test('a bad subject or purpose is refused with a message saying what to give', () => {
    const r = spawnSync(process.execPath, [CLI, 'optout', 'set', 'http://x.test/', 'ai_training', 'deny'], { env, encoding: 'utf8' });
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/not a host or domain name/);
    const p = spawnSync(process.execPath, [CLI, 'optout', 'set', 'x.test', 'ads', 'deny'], { env, encoding: 'utf8' });
    expect(p.stderr).toMatch(/purpose "ads" is not one of crawl, search_index, ai_training/);
  });
});
