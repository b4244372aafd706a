/**
 * `crawl optout set <subject> <purpose> allow|deny` and `crawl optout list` (Kafka mode): the
 * operator's side of the opt-out registry, the compacted crawl.optout topic. A change is the
 * subject's whole record (lib/optout-registry.ts optOutWrite: its other purposes as they were)
 * with the next registry_version (one more than the highest in the table), plus tombstones for
 * the subject's rows of the first version; handoff instances follow the table and stamp new
 * events with it, the frontier holds a crawl=deny subject and fetch refuses it.
 *
 * Two operators writing at the same instant could both take the same next version; the
 * records still apply, only the version numbers then coincide.
 */
import { createProducer, produce } from '../connectors/kafka';
import { loadConfig, type CrawlConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import type { OptOutMsg, OptOutPurpose, OptOutScope } from '../lib/messages';
import { isRegisteredDomain, OptOutRegistry, optOutWrite, PURPOSES, type OptOutRecord } from '../lib/optout-registry';
import { encodeRecords, type KafkaRuntime } from '../runtime/kafka-runner';
import { kafkaEnv, latestRows, runtimeFor, type KafkaEnv } from './kafka-commands';

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

export function parseScope(subject: string, scope: string | undefined): OptOutScope | undefined {
  if (scope === undefined) return undefined;
  if (scope !== 'host' && scope !== 'registered_domain') throw new Error(`scope "${scope}" must be host or registered_domain`);
  if (scope === 'registered_domain' && !isRegisteredDomain(subject)) throw new Error(`${subject} is not a registered domain: scope registered_domain needs one (e.g. example.co.uk)`);
  return scope;
}

/** The whole registry as it stands in crawl.optout (latest record per key). */
export async function readRegistry(rt: KafkaRuntime): Promise<OptOutRegistry> {
  const registry = new OptOutRegistry();
  for (const [key, value] of await latestRows<OptOutMsg>(rt, 'optout')) registry.apply(key, value);
  return registry;
}

export interface SetOptOut {
  subject: string;
  purpose: OptOutPurpose;
  allowed: boolean;
  scope?: OptOutScope;
  verified?: boolean;
}

/** Write one decision with the next registry version; returns the subject's record as written. */
export async function setOptOut(o: SetOptOut, env: KafkaEnv = kafkaEnv(), config: CrawlConfig = loadConfig()): Promise<OptOutMsg> {
  const rt = await runtimeFor(env, config, createLogger());
  const registry = await readRegistry(rt);
  const rows = optOutWrite(
    registry,
    { subject: o.subject, scope: o.scope, purposes: { [o.purpose]: o.allowed ? 'allow' : 'deny' }, source: 'operator_cli', verified: o.verified ?? false },
    registry.nextVersion(), Date.now(),
  );
  const producer = await createProducer(rt.kafka);
  try {
    await produce(producer, await encodeRecords(rt, rows.map((r) => ({ topic: 'optout' as const, key: r.key, host: o.subject, value: r.value }))));
  } finally {
    await producer.disconnect();
  }
  return rows[0].value!;
}

export async function optoutSet(subject: string, purpose: string, decision: string, opts: { scope?: string; verified?: boolean; out?: string } = {}): Promise<void> {
  const s = parseSubject(subject);
  const p = parsePurpose(purpose);
  if (opts.out) {
    const line = await (await import('./operator-commands')).optoutSetEmbedded(opts.out, { subject: s, purpose: p, allowed: parseDecision(decision), scope: parseScope(s, opts.scope), verified: opts.verified });
    return void process.stdout.write(`${line}\n`);
  }
  const v = await setOptOut({ subject: s, purpose: p, allowed: parseDecision(decision), scope: parseScope(s, opts.scope), verified: opts.verified });
  process.stdout.write(`${v.subject} ${p} ${v.purposes![p]}: registry version ${v.registry_version} (scope ${v.scope})\n`);
}

/** One line of `crawl optout list`. */
export function recordLine(r: OptOutRecord): string {
  const purposes = PURPOSES.map((p) => `${p}=${r.purposes[p]}`).join(' ');
  return `${r.subject}\t${r.scope}\t${purposes}\t${r.source}${r.verified ? ' verified' : ''}\t${new Date(r.effective_at).toISOString()}\tv${r.registry_version}\n`;
}

export async function optoutList(out?: string): Promise<void> {
  const registry = out ? (await import('./operator-commands')).journaledRegistry(out) : await readRegistry(await runtimeFor(kafkaEnv(), loadConfig(), createLogger()));
  const records = registry.records().sort((a, b) => a.subject.localeCompare(b.subject));
  for (const r of records) process.stdout.write(recordLine(r));
  process.stdout.write(`registry version ${registry.version}, ${records.length} subject(s)\n`);
}
