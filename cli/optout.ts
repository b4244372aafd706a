/**
 * `crawl optout set <subject> <purpose> allow|deny` and `crawl optout list` (Kafka mode): the
 * operator's side of the opt-out registry, the compacted crawl.optout topic. A change is one
 * record keyed `subject|purpose` with the next registry_version (one more than the highest in
 * the table); handoff instances follow the table and stamp new events with it, fetch stops a
 * crawl=deny subject.
 *
 * Two operators writing at the same instant could both take the same next version; the
 * records still apply (each is its own key), only the version numbers then coincide.
 */
import { createProducer, produce, readTable } from '../connectors/kafka';
import { loadConfig, type CrawlConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import type { OptOutMsg, OptOutPurpose } from '../lib/messages';
import { optOutKey, OptOutRegistry } from '../lib/optout-registry';
import { encodeRecords, type KafkaRuntime } from '../runtime/kafka-runner';
import { topics } from '../topologies/crawl';
import { kafkaEnv, runtimeFor, type KafkaEnv } from './kafka-commands';

export const PURPOSES: readonly OptOutPurpose[] = ['crawl', 'search_index', 'ai_training'];

/** A subject is a bare host or registered domain, lower-case: no scheme, port or path. */
export function parseSubject(s: string): string {
  const v = s.trim().toLowerCase().replace(/\.$/, '');
  if (!/^[a-z0-9-]+(\.[a-z0-9-]+)*$/.test(v) && !/^\d{1,3}(\.\d{1,3}){3}$/.test(v)) {
    throw new Error(`subject "${s}" is not a host or domain name (give e.g. example.com or www.example.com, without scheme or path)`);
  }
  return v;
}

export function parsePurpose(p: string): OptOutPurpose {
  if (!(PURPOSES as readonly string[]).includes(p)) throw new Error(`purpose "${p}" is not one of ${PURPOSES.join(', ')}`);
  return p as OptOutPurpose;
}

export function parseDecision(d: string): boolean {
  if (d !== 'allow' && d !== 'deny') throw new Error(`decision "${d}" must be allow or deny`);
  return d === 'allow';
}

/** The whole registry as it stands in crawl.optout (latest record per key). */
export async function readRegistry(rt: KafkaRuntime): Promise<{ registry: OptOutRegistry; rows: OptOutMsg[] }> {
  const all = Array.from({ length: rt.partitions }, (_, p) => p);
  const raw = await readTable(rt.kafka, rt.prefix + topics.optout.name, all);
  const latest = new Map<string, (typeof raw)[number]>();
  for (const r of raw) latest.set(r.key, r);
  const registry = new OptOutRegistry();
  const rows: OptOutMsg[] = [];
  for (const r of latest.values()) {
    const value = r.value === null ? null : ((await rt.registry.decode(r.value)) as OptOutMsg);
    registry.apply(r.key, value);
    if (value) rows.push(value);
  }
  return { registry, rows };
}

/** Write one decision with the next registry version; returns the record written. */
export async function setOptOut(
  subject: string, purpose: OptOutPurpose, allowed: boolean, env: KafkaEnv = kafkaEnv(), config: CrawlConfig = loadConfig(),
): Promise<OptOutMsg> {
  const rt = await runtimeFor(env, config, createLogger());
  const { registry } = await readRegistry(rt);
  const value: OptOutMsg = { subject, purpose, allowed, registry_version: registry.nextVersion(), updated_at: Date.now() };
  const producer = await createProducer(rt.kafka);
  try {
    await produce(producer, await encodeRecords(rt, [{ topic: 'optout', key: optOutKey(subject, purpose), host: subject, value }]));
  } finally {
    await producer.disconnect();
  }
  return value;
}

export async function optoutSet(subject: string, purpose: string, decision: string): Promise<void> {
  const v = await setOptOut(parseSubject(subject), parsePurpose(purpose), parseDecision(decision));
  process.stdout.write(`${v.subject} ${v.purpose} ${v.allowed ? 'allow' : 'deny'}: registry version ${v.registry_version}\n`);
}

export async function optoutList(env: KafkaEnv = kafkaEnv(), config: CrawlConfig = loadConfig()): Promise<void> {
  const rt = await runtimeFor(env, config, createLogger());
  const { registry, rows } = await readRegistry(rt);
  rows.sort((a, b) => a.subject.localeCompare(b.subject) || a.purpose.localeCompare(b.purpose));
  for (const r of rows) process.stdout.write(`${r.subject}\t${r.purpose}\t${r.allowed ? 'allow' : 'deny'}\tv${r.registry_version}\n`);
  process.stdout.write(`registry version ${registry.version}, ${rows.length} record(s)\n`);
}
