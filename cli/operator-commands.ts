/**
 * The operator's commands for a running (or the next) embedded crawl, `--out DIR`: `crawl seed`,
 * `crawl block`/`unblock`, `crawl optout set|list`, writing the same records as in Kafka mode
 * (and as `crawl serve`'s routes) through the crawl's inbox (cli/operator-inbox.ts). `crawl
 * block`/`unblock` in Kafka mode produce those records to crawl.host-policy.
 */
import { join } from 'node:path';
import { hostPolicyRecord, hostPolicyTombstone, operatorAudit } from '../api/operator-routes';
import { ApiError, parseHost } from '../api/validate';
import type { OptOutMsg, OptOutPurpose, OptOutScope } from '../lib/messages';
import { OptOutRegistry, optOutWrite } from '../lib/optout-registry';
import { argLines, feedSeeds, seedBatches, seedLines, seedLink, SeedTally, type SeedLine } from '../lib/seed-source';
import type { OutRecord } from '../runtime/stage';
import { readJournaledTable } from './explain-state';
import { operatorName, submitAndWait, type InboxRequest } from './operator-inbox';

/** Most seeds in one inbox request (a file of about 1 MiB). */
const SEEDS_PER_REQUEST = 10_000;

export interface EmbeddedSeedOptions {
  file?: string;
  feeds?: readonly string[];
  notice?: (line: string) => void;
  /** How long to wait for a running crawl's reply to each request. */
  waitMs?: number;
  print?: (line: string) => void;
}

/** `crawl seed … --out DIR`: seeds (and --feed URLs) to the embedded crawl on DIR, in requests of SEEDS_PER_REQUEST. */
export async function seedEmbedded(out: string, urls: readonly string[], o: EmbeddedSeedOptions = {}): Promise<SeedTally> {
  const print = o.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const tally = new SeedTally(o.notice ?? ((line) => process.stderr.write(`crawl seed: ${line}\n`)));
  const send = async (records: OutRecord[], what: string): Promise<void> => {
    if (records.length) print(await submitAndWait(out, { what, records }, o.waitMs));
  };
  const toRecord = (host: string, value: OutRecord['value']): OutRecord => ({ topic: 'links', key: host, host, value });
  await send(feedSeeds(o.feeds ?? [], tally, Date.now()).map((s) => toRecord(s.host, s.link)), `${o.feeds?.length ?? 0} feed(s)`);
  async function* lines(): AsyncGenerator<SeedLine> {
    yield* argLines(urls);
    if (o.file) yield* seedLines(o.file);
  }
  let batch: OutRecord[] = [];
  const flush = async (): Promise<void> => {
    await send(batch, `${batch.length} seed URL(s)`);
    batch = [];
  };
  for await (const seeds of seedBatches(lines(), 1000)) {
    const now = Date.now();
    for (const s of seeds) {
      tally.add(s);
      if (s.ok) batch.push(toRecord(s.host, seedLink(s, now)));
    }
    if (batch.length >= SEEDS_PER_REQUEST) await flush();
  }
  await flush();
  print(`seeds for ${out}: ${tally.summary()}`);
  if (tally.accepted === 0) throw new Error('no valid seed URL');
  return tally;
}

export interface BlockOptions {
  /** Seconds the block lasts. */
  for: number;
  reason?: string;
  /** Block a host the crawl does not know (a typo otherwise blocks nothing useful). */
  force?: boolean;
}

/** The host as the API takes it, or a plain error. */
export function hostArg(raw: string): string {
  try {
    return parseHost(raw);
  } catch (err) {
    throw new Error(err instanceof ApiError ? err.message : String(err));
  }
}

/** Seconds of a block, as the API takes duration_s: more than 0, at most 366 days. Pure. */
export function blockSeconds(raw: string | number): number {
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0 || n > 366 * 86400) throw new Error(`--for ${raw}: expected seconds > 0, at most 366 days (31622400)`);
  return n;
}

/** The records of `crawl block` (the same as POST /hosts/{host}/block): the policy row and its audit row. Pure. */
export function blockRequest(host: string, o: BlockOptions, now: number, actor = operatorName()): InboxRequest {
  const until = now + Math.round(o.for * 1000);
  const reason = o.reason ?? null;
  return {
    what: `crawl block ${host} until ${new Date(until).toISOString()}`,
    records: [hostPolicyRecord(host, 'block', { blocked_until: until, reason }, now), operatorAudit(actor, 'block', host, { until, reason }, now)],
    ...(o.force ? {} : { knownHost: host }),
  };
}

/** `crawl unblock`'s records (DELETE /hosts/{host}/block's). Pure. */
export function unblockRequest(host: string, now: number, actor = operatorName()): InboxRequest {
  return { what: `crawl unblock ${host}`, records: [hostPolicyTombstone(host, 'block'), operatorAudit(actor, 'remove-block', host, {}, now)] };
}

/** Kafka mode: produce a request's records (acks = all). */
async function produceRecords(records: OutRecord[]): Promise<void> {
  const { kafkaEnv, runtimeFor } = await import('./kafka-commands');
  const { createProducer, produce } = await import('../connectors/kafka');
  const { encodeRecords } = await import('../runtime/kafka-runner');
  const { loadConfig } = await import('../lib/config');
  const { createLogger } = await import('../lib/logger');
  const rt = await runtimeFor(kafkaEnv(), loadConfig(), createLogger());
  const producer = await createProducer(rt.kafka);
  try {
    await produce(producer, await encodeRecords(rt, records));
  } finally {
    await producer.disconnect();
  }
}

/** `crawl block HOST` / `crawl unblock HOST`: to the embedded crawl on --out, or Kafka. */
export async function blockCommand(rawHost: string, o: { for: string; reason?: string; force: boolean; out?: string }): Promise<void> {
  const host = hostArg(rawHost);
  const req = blockRequest(host, { for: blockSeconds(o.for), reason: o.reason, force: o.force }, Date.now());
  if (o.out) return void process.stdout.write(`${await submitAndWait(o.out, req)}\n`);
  // Kafka mode: every fetch process applies it within 60 s; no check that the crawl knows the host (crawl serve's POST does that).
  await produceRecords(req.records);
  process.stdout.write(`${req.what}: sent to crawl.host-policy\n`);
}

export async function unblockCommand(rawHost: string, o: { out?: string }): Promise<void> {
  const req = unblockRequest(hostArg(rawHost), Date.now());
  if (o.out) return void process.stdout.write(`${await submitAndWait(o.out, req)}\n`);
  await produceRecords(req.records);
  process.stdout.write(`${req.what}: sent to crawl.host-policy\n`);
}

/** The opt-out registry of an embedded crawl's journal. */
export function journaledRegistry(out: string): OptOutRegistry {
  const registry = new OptOutRegistry();
  for (const [key, value] of readJournaledTable<OptOutMsg>(join(out, 'state'), 'optout')) registry.apply(key, value);
  return registry;
}

/** `crawl optout set … --out DIR`: the subject's record with the next version of the crawl's registry. */
export async function optoutSetEmbedded(out: string, o: { subject: string; purpose: OptOutPurpose; allowed: boolean; scope?: OptOutScope; verified?: boolean }): Promise<string> {
  const registry = journaledRegistry(out);
  const now = Date.now();
  const rows = optOutWrite(registry, { subject: o.subject, scope: o.scope, purposes: { [o.purpose]: o.allowed ? 'allow' : 'deny' }, source: 'operator_cli', verified: o.verified ?? false }, registry.nextVersion(), now);
  const v = rows[0].value!;
  const records: OutRecord[] = rows.map((r) => ({ topic: 'optout', key: r.key, host: o.subject, value: r.value }));
  records.push(operatorAudit(operatorName(), 'set-opt-out', o.subject, { scope: v.scope, purposes: v.purposes, registry_version: v.registry_version }, now));
  return submitAndWait(out, { what: `${v.subject} ${o.purpose} ${v.purposes![o.purpose]}: registry version ${v.registry_version} (scope ${v.scope})`, records });
}
