/**
 * Kafka-mode e2e helpers on the real local stack: a unique topic/S3 prefix per test file,
 * `crawl` commands and long-running `crawl process …` children (kill -9 and restart), the
 * handoff events read as an indexer would (kafkajs + the registry client, not our code), and
 * the WARC files and CDXJ indexes read back from S3.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { SchemaRegistry } from '@kafkajs/confluent-schema-registry';
import { Kafka, logLevel, type Consumer } from 'kafkajs';
import type { HandoffEvent } from '../../lib/messages';
import { CLI, parseJsonLines, type LogLine } from './cli';

export function uniquePrefix(tag: string): string {
  return `${tag}-${randomBytes(4).toString('hex')}.`;
}

/**
 * A test's environment: its own topic and S3 prefix, and frontier stores under the system's
 * temporary folder (one subfolder per prefix; processes of one test share it, as processes of
 * one machine would).
 */
export function stackEnv(prefix: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  return { ...process.env, CRAWL_TOPIC_PREFIX: prefix, CRAWL_S3_PREFIX: prefix, CRAWL_LOG_LEVEL: 'info', CRAWL_STATE_DIR: join(tmpdir(), 'kcrawl-e2e-state'), ...extra };
}

export function cliSync(args: string[], env: NodeJS.ProcessEnv): string {
  const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`crawl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

/** Runs the CLI without blocking this process's event loop (where the fixture servers live); rejects on a non-zero exit. */
export function cliAsync(args: string[], env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [CLI, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    p.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    p.once('error', reject);
    p.once('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`crawl ${args.join(' ')} exited ${code}: ${err.slice(-2000)}`))));
  });
}

/** A `crawl process …` child; its stderr (JSON log lines) is kept. */
export class CrawlProcess {
  readonly child: ChildProcess;
  stderr = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(readonly names: string[], env: NodeJS.ProcessEnv, readonly label = names.join('+')) {
    this.child = spawn(process.execPath, [CLI, 'process', ...names, '--allow-private-network'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    this.child.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString()));
    this.exited = new Promise((resolve) => this.child.on('close', (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid!;
  }

  log(): LogLine[] {
    return parseJsonLines(this.stderr);
  }

  /** Whether it logged this message yet (e.g. 'processors running'). */
  logged(msg: string): boolean {
    return this.log().some((l) => l.msg === msg);
  }

  async kill9(): Promise<void> {
    this.child.kill('SIGKILL');
    await this.exited;
  }

  /** SIGTERM: stops consuming, stores the open WARC file, leaves the group. Bounded by a kill -9. */
  async stop(graceMs = 30_000): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    await this.exited;
    clearTimeout(t);
  }
}

export function s3Client(): S3Client {
  return new S3Client({
    endpoint: process.env.CRAWL_S3_ENDPOINT, region: process.env.CRAWL_S3_REGION ?? 'us-east-1', forcePathStyle: true,
    credentials: { accessKeyId: process.env.CRAWL_S3_ACCESS_KEY ?? '', secretAccessKey: process.env.CRAWL_S3_SECRET_KEY ?? '' },
  });
}

export const bucket = (): string => process.env.CRAWL_S3_BUCKET ?? 'crawl';

export async function s3List(s3: S3Client, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let token: string | undefined;
  for (let page = 0; page < 100; page++) {
    const r = await s3.send(new ListObjectsV2Command({ Bucket: bucket(), Prefix: prefix, ContinuationToken: token }));
    for (const o of r.Contents ?? []) if (o.Key) keys.push(o.Key);
    if (!r.IsTruncated) break;
    token = r.NextContinuationToken;
  }
  return keys.sort();
}

export async function s3GetKey(s3: S3Client, key: string, range?: [offset: number, length: number]): Promise<Buffer> {
  const res = await s3.send(new GetObjectCommand({ Bucket: bucket(), Key: key, Range: range ? `bytes=${range[0]}-${range[0] + range[1] - 1}` : undefined }));
  return Buffer.from(await res.Body!.transformToByteArray());
}

export interface CdxjEntry {
  surt: string;
  timestamp: string;
  url: string;
  mime: string;
  status: string;
  offset: number;
  length: number;
  filename: string;
}

/** pywb CDXJ: `surt timestamp {json}` per line. */
export function parseCdxj(text: string): CdxjEntry[] {
  return text.split('\n').filter(Boolean).map((line) => {
    const [surt, timestamp] = line.split(' ', 2);
    const j = JSON.parse(line.slice(surt.length + timestamp.length + 2)) as Record<string, string>;
    return { surt, timestamp, url: j.url, mime: j.mime, status: j.status, offset: Number(j.offset), length: Number(j.length), filename: j.filename };
  });
}

/** Reads crawl.handoff.v3 from the beginning, as an indexer would. */
export class HandoffReader {
  readonly events: HandoffEvent[] = [];
  /** When each event was read (Date.now()), by index. */
  readonly readAt: number[] = [];
  private readonly consumer: Consumer;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly prefix: string, brokers = process.env.CRAWL_KAFKA_BROKERS!) {
    // Retries a second apart at most and without end: after a broker restart the reader is back
    // as soon as it is, without a crash and restart of its consumer.
    const kafka = new Kafka({
      clientId: 'e2e-indexer', brokers: brokers.split(','), logLevel: logLevel.NOTHING,
      retry: { initialRetryTime: 200, maxRetryTime: 1000, retries: Number.MAX_SAFE_INTEGER },
      // kafkajs's own connect, with the sockets kept: after a broker restart kafkajs leaves its
      // group coordinator's connection open after disconnect() (docs/faults.md); stop() ends it.
      socketFactory: ({ host, port, ssl, onConnect }) => {
        const s = ssl ? tlsConnect({ host, port, ...ssl }, onConnect) : netConnect({ host, port }, onConnect);
        this.sockets.add(s);
        s.once('close', () => this.sockets.delete(s));
        return s;
      },
    });
    // A short session: a reader that lost its membership in a broker restart is back in seconds.
    this.consumer = kafka.consumer({ groupId: `${prefix}indexer`, sessionTimeout: 6000, heartbeatInterval: 1000, retry: { retries: Number.MAX_SAFE_INTEGER } });
  }

  async start(): Promise<void> {
    const registry = new SchemaRegistry({ host: process.env.CRAWL_REGISTRY_URL! });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic: `${this.prefix}crawl.handoff.v3`, fromBeginning: true });
    await this.consumer.run({
      eachMessage: async ({ message }) => {
        this.events.push((await registry.decode(message.value!)) as HandoffEvent);
        this.readAt.push(Date.now());
      },
    });
  }

  urls(): Set<string> {
    return new Set(this.events.map((e) => e.url));
  }

  async stop(): Promise<void> {
    try {
      await this.consumer.disconnect();
    } finally {
      // Also when disconnect() failed (kafka-faults calls stop() expecting that it may): a socket
      // left open keeps jest (--runInBand) from exiting. Destroyed with an error, which kafkajs
      // hears ('error'; it listens for no 'close'): its connection then disconnects and clears
      // its request queue's timers. A plain destroy() left that connection "connected", its
      // 100 ms request-timeout interval (and its pending-request check) running for ever, and
      // jest waited on them after kafka-faults (seen 2026-12-07 with a timer-tracing preload).
      for (const s of this.sockets) s.destroy(new Error('HandoffReader stopped'));
    }
  }
}
