/**
 * `crawl seed --file` on the real stack, as a user runs it (the built CLI): a list of 10,000
 * URLs with comments, blank lines, URLs without a scheme and malformed ones. Every good URL
 * arrives in crawl.links (read back with kafkajs, lz4-napi and the registry client), every
 * bad one is counted with its reason. Also `--file -` (standard input) with URL arguments.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel } from 'kafkajs';
// crawl.links is written as LZ4 batches; kafkajs reads them once a codec is registered (lz4-napi's).
import '../../connectors/kafka-lz4';
import type { LinkMsg } from '../../lib/messages';
import { CLI } from '../support/cli';
import { cliSync, stackEnv, uniquePrefix } from '../support/kafka-stack';
import { rng } from '../support/rng';

const prefix = uniquePrefix('seedfile');
const env = stackEnv(prefix, { CRAWL_LOG_LEVEL: 'warn' });

/** 10,000 lines: 9,000 URLs, 400 without a scheme, 600 malformed (four reasons), shuffled (seed 38); plus comments and blank lines. */
function seedList(): { lines: string[]; good: string[]; refused: Record<string, number> } {
  const entries: Array<{ line: string; url?: string }> = [];
  for (let i = 0; i < 9000; i++) entries.push({ line: `https://seed${i}.example${i % 50}.org/path/${i}?q=${i}`, url: `https://seed${i}.example${i % 50}.org/path/${i}?q=${i}` });
  for (let i = 0; i < 400; i++) entries.push({ line: `host${i}.example.net/p${i}`, url: `https://host${i}.example.net/p${i}` });
  for (let i = 0; i < 200; i++) entries.push({ line: `ht tp://bad${i}.example.org/` });
  for (let i = 0; i < 150; i++) entries.push({ line: `ftp://files${i}.example.org/x` });
  for (let i = 0; i < 150; i++) entries.push({ line: `https://user:pw@cred${i}.example.org/` });
  for (let i = 0; i < 100; i++) entries.push({ line: `https://long${i}.example.org/${'a'.repeat(2100)}` });
  const r = rng(38);
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [entries[i], entries[j]] = [entries[j], entries[i]];
  }
  const lines = ['# a seed list', ''];
  entries.forEach((e, i) => lines.push(i % 1000 === 999 ? `  ${e.line}  ` : e.line, ...(i % 2500 === 0 ? ['', '# more'] : [])));
  return {
    lines,
    good: entries.filter((e) => e.url).map((e) => e.url!),
    refused: { 'invalid-url': 200, 'unsupported-scheme': 150, credentials: 150, 'too-long': 100 },
  };
}

/** Every record in `topic`, decoded through the registry, until `want` have arrived (bounded). */
async function readLinks(topic: string, want: number): Promise<LinkMsg[]> {
  const kafka = new Kafka({ clientId: 'seed-file-test', brokers: process.env.CRAWL_KAFKA_BROKERS!.split(','), logLevel: logLevel.NOTHING });
  const registry = new SchemaRegistry({ host: process.env.CRAWL_REGISTRY_URL! });
  const consumer = kafka.consumer({ groupId: `${prefix}reader-${topic}` });
  const got: LinkMsg[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void got.push((await registry.decode(message.value!)) as LinkMsg) });
    for (let i = 0; i < 600 && got.length < want; i++) await new Promise((r) => setTimeout(r, 100));
    // A little longer, so that a record too many would show.
    await new Promise((r) => setTimeout(r, 1000));
  } finally {
    await consumer.disconnect();
  }
  return got;
}

describe('crawl seed --file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'seed-file-'));
  const topic = `${prefix}crawl.links`;

  beforeAll(() => {
    cliSync(['init'], env);
  });

  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test('10,000 URLs: the good ones arrive in crawl.links, the bad ones are counted with their reason', async () => {
    const list = seedList();
    const file = join(dir, 'seeds.txt');
    writeFileSync(file, list.lines.join('\n') + '\n');
    const r = spawnSync(process.execPath, [CLI, 'seed', '--file', file], { env, encoding: 'utf8' });
    expect(r.status).toBe(0);

    const summary = new RegExp(`^seeded (\\d+) URL\\(s\\) to ${prefix.replace(/\./g, '\\.')}crawl\\.links: (\\d+) accepted, (\\d+) refused \\((.*)\\); (\\d+) without a scheme taken as https://$`, 'm').exec(r.stdout);
    expect(summary).not.toBeNull();
    const [, seeded, accepted, refused, reasons, schemeless] = summary!;
    expect(Number(seeded)).toBe(9400);
    expect(Number(accepted)).toBe(9400);
    expect(Number(refused)).toBe(600);
    expect(Number(schemeless)).toBe(400);
    expect(Object.fromEntries(reasons.split(', ').map((p) => [p.split(' ')[0], Number(p.split(' ')[1])]))).toEqual(list.refused);
    // The first few refusals and added schemes are told on stderr, each with its line.
    expect(r.stderr).toMatch(/^crawl seed: line \d+: refused ".+": (invalid-url|unsupported-scheme|credentials|too-long) /m);
    expect(r.stderr).toMatch(/^crawl seed: line \d+: no scheme in "host\d+\.example\.net\/p\d+": taken as https:\/\/host\d+\.example\.net\/p\d+$/m);
    expect(r.stderr.split('\n').filter((l) => l.startsWith('crawl seed: ')).length).toBe(10);

    const links = await readLinks(topic, list.good.length);
    expect(links.length).toBe(list.good.length);
    expect(new Set(links.map((l) => l.url))).toEqual(new Set(list.good));
    for (const l of links) expect(l).toMatchObject({ is_seed: true, depth: 0, source_url: null });
  });

  test('--file - reads standard input, after the URLs given as arguments', async () => {
    const stdinPrefix = uniquePrefix('seedstdin');
    const stdinEnv = stackEnv(stdinPrefix, { CRAWL_LOG_LEVEL: 'warn' });
    cliSync(['init'], stdinEnv);
    const r = spawnSync(process.execPath, [CLI, 'seed', 'example.org', '--file', '-'], {
      env: stdinEnv, encoding: 'utf8', input: '# from stdin\nhttps://a.example.com/x\nnot a url\nb.example.com\n',
    });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain(': 3 accepted, 1 refused (invalid-url 1); 2 without a scheme taken as https://');
    expect(r.stderr).toContain('crawl seed: no scheme in "example.org": taken as https://example.org/');
    expect(r.stderr).toContain('crawl seed: line 3: refused "not a url": invalid-url');
    const links = await readLinks(`${stdinPrefix}crawl.links`, 3);
    expect(links.map((l) => l.url).sort()).toEqual(['https://a.example.com/x', 'https://b.example.com/', 'https://example.org/']);
  });

  test('a list with no valid URL fails, saying why', () => {
    const file = join(dir, 'bad.txt');
    writeFileSync(file, 'ftp://x.example/\nnot a url\n');
    const r = spawnSync(process.execPath, [CLI, 'seed', '--file', file], { env, encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('0 accepted, 2 refused');
    expect(r.stderr).toContain('no valid seed URL');
  });
});
