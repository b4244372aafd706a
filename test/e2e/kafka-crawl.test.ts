/**
 * Kafka mode end to end on the real local stack (Kafka, schema registry, S3Proxy): `crawl init`,
 * `crawl process all` as a separate process, `crawl seed`, then a fixture web of three hosts on
 * distinct 127.x addresses is crawled through every processor. The test reads the handoff
 * events as an indexer would (kafkajs + the registry client, independently of our code) and the
 * page bytes from S3 by WARC offset, checked with warcio.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
import type { HandoffEvent } from '../../lib/messages';
import { allTopics } from '../../topologies/crawl';
import { FixtureWeb, page } from '../fixtures/web';
import { readOneRecord, readWarc } from '../support/warc-read';

const CLI = join(__dirname, '..', '..', 'bin', 'crawl.js');
const prefix = `e2e-${randomBytes(4).toString('hex')}.`;
const env = { ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_WARC_MAX_AGE_MS: '500', CRAWL_LOG_LEVEL: 'info' };

const s3 = new S3Client({
  endpoint: process.env.CRAWL_S3_ENDPOINT, region: process.env.CRAWL_S3_REGION ?? 'us-east-1', forcePathStyle: true,
  credentials: { accessKeyId: process.env.CRAWL_S3_ACCESS_KEY ?? '', secretAccessKey: process.env.CRAWL_S3_SECRET_KEY ?? '' },
});

async function s3Get(uri: string, range?: [number, number]): Promise<Buffer> {
  const u = new URL(uri);
  const res = await s3.send(new GetObjectCommand({ Bucket: u.host, Key: u.pathname.slice(1), Range: range ? `bytes=${range[0]}-${range[0] + range[1] - 1}` : undefined }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

function cli(args: string[]): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`crawl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

describe('Kafka mode, end to end on the local stack', () => {
  let web: FixtureWeb;
  let proc: ChildProcess;
  let procLog = '';
  const kafka = new Kafka({ clientId: 'e2e-indexer', brokers: process.env.CRAWL_KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const consumer = kafka.consumer({ groupId: `${prefix}indexer` });

  beforeAll(async () => {
    web = await FixtureWeb.start([
      { ip: '127.0.0.41', robots: 'User-agent: *\nDisallow: /private\n', pages: { '/': page('K one', ['/k1', '/private/x', '{origin:127.0.0.42}/']), '/k1': page('K one a', ['/']) } },
      { ip: '127.0.0.42', pages: { '/': page('K two', ['/k2']), '/k2': page('K two a', ['{origin:127.0.0.43}/']) } },
      { ip: '127.0.0.43', pages: { '/': page('K three', []) } },
    ]);
    expect(cli(['init'])).toMatch(new RegExp(`topics created: ${allTopics.length}\\b`));
    proc = spawn(process.execPath, [CLI, 'process', 'all', '--allow-private-network'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stderr!.on('data', (d: Buffer) => (procLog += d.toString()));
  });

  afterAll(async () => {
    proc?.kill('SIGTERM');
    await new Promise((r) => proc?.once('close', r));
    await consumer.disconnect();
    s3.destroy();
    await web?.stop();
  });

  test('every new page reaches crawl.handoff.v3 as a registry-decodable event pointing at its bytes in S3', async () => {
    cli(['seed', `${web.origin('127.0.0.41')}/`]);
    const registry = new SchemaRegistry({ host: process.env.CRAWL_REGISTRY_URL! });
    const events: HandoffEvent[] = [];
    await consumer.connect();
    await consumer.subscribe({ topic: `${prefix}crawl.handoff.v3`, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void events.push((await registry.decode(message.value!)) as HandoffEvent) });
    const expected = [`${web.origin('127.0.0.41')}/`, `${web.origin('127.0.0.41')}/k1`, `${web.origin('127.0.0.42')}/`, `${web.origin('127.0.0.42')}/k2`, `${web.origin('127.0.0.43')}/`].sort();
    for (let i = 0; i < 600 && new Set(events.map((e) => e.url)).size < expected.length; i++) await new Promise((r) => setTimeout(r, 100));
    if (new Set(events.map((e) => e.url)).size < expected.length) throw new Error(`timed out; processor log:\n${procLog.slice(-4000)}`);
    expect([...new Set(events.map((e) => e.url))].sort()).toEqual(expected);

    for (const e of events) {
      expect(e.change).toBe('NEW');
      expect(e.warc.uri.startsWith('s3://')).toBe(true);
      const rec = await readOneRecord(await s3Get(e.warc.uri, [e.warc.offset, e.warc.length]), 0, e.warc.length);
      expect(rec.targetUri).toBe(e.url);
      expect(rec.payload.toString()).toContain('<title>K ');
    }
    const k2 = events.find((e) => e.url.endsWith('/k2'))!;
    const body = (await readOneRecord(await s3Get(k2.warc.uri, [k2.warc.offset, k2.warc.length]), 0, k2.warc.length)).payload.toString();
    expect(body).toBe(page('K two a', [`${web.origin('127.0.0.43')}/`]));
  });

  test('the WARC files in S3 pass warcio with verified digests; disallowed paths were never fetched; one request per host at a time', async () => {
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: process.env.CRAWL_S3_BUCKET, Prefix: prefix }));
    const files = (listed.Contents ?? []).map((o) => o.Key!).filter((k) => k.endsWith('.warc.gz'));
    expect(files.length).toBeGreaterThan(0);
    let responses = 0;
    for (const key of files) {
      const recs = await readWarc(await s3Get(`s3://${process.env.CRAWL_S3_BUCKET}/${key}`));
      responses += recs.filter((r) => r.type === 'response').length;
    }
    expect(responses).toBeGreaterThanOrEqual(5);
    expect(web.log.some((e) => e.path.startsWith('/private'))).toBe(false);
    for (const site of web.sites) {
      const reqs = web.requestsTo(site.origin);
      for (const r of reqs) expect(r.concurrent).toBe(1);
      for (let i = 1; i < reqs.length; i++) expect(reqs[i]!.at - reqs[i - 1]!.at).toBeGreaterThanOrEqual(995);
    }
  });
});
