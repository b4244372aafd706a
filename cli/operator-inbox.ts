/**
 * The operator's changes to an embedded crawl (`crawl run --out DIR`) from another process:
 * `crawl seed … --out DIR`, `crawl block HOST --out DIR`, `crawl optout set … --out DIR` drop a
 * request file in <DIR>/inbox; the running crawl takes each one up within a second (at its start
 * when none runs), appends its records to its journal (the same rows Kafka mode's commands and
 * `crawl serve` write: crawl.links seeds, crawl.host-policy, crawl.optout, the audit topic), and
 * answers in a reply file. A record in the journal survives a restart like any other.
 *
 * Files, not a socket: no port or token to find, the folder's permissions are the access
 * control, and a request made while no crawl runs waits for the next one. A request is written
 * whole (a temporary name, then a rename) and removed only after its records are appended and
 * flushed: a crash in between applies it again (a seed passes the seen filter; a policy row is
 * the same row).
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { userInfo } from 'node:os';
import { avroType } from '../lib/avro';
import type { HostPolicyMsg, LinkMsg } from '../lib/messages';
import type { OutRecord } from '../runtime/stage';
import { topics, type TopicId } from '../topologies/crawl';

/** A request: records to append, and optionally a host the crawl must know unless forced. */
export interface InboxRequest {
  /** Who and what, for the log and the reply (`crawl block example.com`). */
  what: string;
  records: OutRecord[];
  /** Refused unless the crawl knows this host (an operator typo must not block a host nobody crawls), as `crawl serve` does without "force". */
  knownHost?: string;
}

export interface InboxReply {
  ok: boolean;
  message: string;
  at: number;
}

/** Topics a request may write, and what may be in them. */
const ALLOWED: ReadonlySet<TopicId> = new Set<TopicId>(['links', 'hostPolicy', 'optout', 'webmasterAudit']);
const OPERATOR_FIELDS: ReadonlySet<string> = new Set(['block', 'crawl-rate']);

export const inboxDir = (out: string): string => join(out, 'inbox');
const pidFile = (out: string): string => join(out, 'crawl.pid');

/** Who made a change, for the audit topic: the machine's user name. */
export function operatorName(): string {
  try {
    return `operator:${userInfo().username}`;
  } catch {
    return 'operator:unknown';
  }
}

/** Why a request's records may not be appended, or null. Pure. */
export function refusal(req: unknown): string | null {
  if (typeof req !== 'object' || req === null) return 'not a request object';
  const r = req as Partial<InboxRequest>;
  if (typeof r.what !== 'string' || !Array.isArray(r.records) || r.records.length === 0) return 'no records';
  if (r.knownHost !== undefined && typeof r.knownHost !== 'string') return 'knownHost is not a host name';
  for (const rec of r.records) {
    if (typeof rec !== 'object' || rec === null || !ALLOWED.has(rec.topic) || typeof rec.key !== 'string' || typeof rec.host !== 'string') return 'a record of a topic operators do not write';
    if (rec.topic === 'links' && (rec.value === null || (rec.value as LinkMsg).is_seed !== true)) return 'a crawl.links record that is not a seed';
    if (rec.topic === 'hostPolicy' && !OPERATOR_FIELDS.has(rec.key.slice(rec.key.lastIndexOf('|') + 1))) return 'a host-policy row the operator does not set';
    if (rec.topic === 'hostPolicy' && rec.value !== null && !OPERATOR_FIELDS.has((rec.value as HostPolicyMsg).field)) return 'a host-policy row the operator does not set';
    if (rec.value !== null && !avroType(topics[rec.topic].valueSchema).isValid(rec.value)) return `a ${topics[rec.topic].name} record that does not fit its schema`;
  }
  return null;
}

/** Whether a crawl runs on `out` now (its pid file names a live process). */
export function crawlRunning(out: string): boolean {
  try {
    const pid = Number(readFileSync(pidFile(out), 'utf8').trim());
    if (!Number.isInteger(pid) || pid <= 0) return false;
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, another user's.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Drop a request in the inbox; returns its id. */
export function submit(out: string, req: InboxRequest): string {
  if (!existsSync(out)) throw new Error(`--out ${out}: no such folder (give the --out of a \`crawl run\`)`);
  const why = refusal(req);
  if (why) throw new Error(`cannot send ${req.what}: ${why}`);
  const dir = inboxDir(out);
  mkdirSync(dir, { recursive: true });
  const id = `${Date.now().toString().padStart(15, '0')}-${randomBytes(4).toString('hex')}`;
  const tmp = join(dir, `${id}.tmp`);
  writeFileSync(tmp, JSON.stringify(req));
  renameSync(tmp, join(dir, `${id}.json`));
  return id;
}

/**
 * Submit and, when a crawl runs on `out`, wait (at most `waitMs`) for its reply. Returns the
 * line to print; throws with the crawl's reason when it refused the request.
 */
export async function submitAndWait(out: string, req: InboxRequest, waitMs = 15_000): Promise<string> {
  const id = submit(out, req);
  const where = `the crawl on ${out}`;
  if (!crawlRunning(out)) return `${req.what}: queued in ${inboxDir(out)}; no crawl runs on ${out} now: the next \`crawl run --out ${out}\` applies it as it starts`;
  const replyFile = join(inboxDir(out), `${id}.reply.json`);
  const until = Date.now() + waitMs;
  while (Date.now() < until) {
    if (existsSync(replyFile)) {
      const reply = JSON.parse(readFileSync(replyFile, 'utf8')) as InboxReply;
      unlinkSync(replyFile);
      if (!reply.ok) throw new Error(`${where} refused ${req.what}: ${reply.message}`);
      return `${req.what}: applied by ${where} (${reply.message})`;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return `${req.what}: queued in ${inboxDir(out)}; ${where} has not taken it up within ${Math.round(waitMs / 1000)} s: it will when it next looks (or the next run as it starts)`;
}

/** The crawl's side: requests waiting, in the order they were made. */
export class OperatorInbox {
  private readonly dir: string;

  constructor(private readonly out: string) {
    this.dir = inboxDir(out);
    mkdirSync(this.dir, { recursive: true });
  }

  /** Say a crawl runs here (for `submitAndWait`); `release` at the end. */
  claim(): void {
    writeFileSync(pidFile(this.out), `${process.pid}\n`);
  }

  release(): void {
    try {
      if (readFileSync(pidFile(this.out), 'utf8').trim() === String(process.pid)) unlinkSync(pidFile(this.out));
    } catch {
      // already gone
    }
  }

  /**
   * Apply every waiting request: `apply` appends its records (and flushes) or throws a reason it
   * is refused. Each gets a reply file; a file that is not a request is set aside as `.bad`.
   */
  async take(apply: (req: InboxRequest) => Promise<string>, onDone: (req: InboxRequest | null, reply: InboxReply, file: string) => void = () => undefined): Promise<number> {
    let names: string[];
    try {
      names = readdirSync(this.dir).filter((f) => /^\d{15}-[0-9a-f]{8}\.json$/.test(f)).sort();
    } catch {
      return 0;
    }
    for (const f of names) {
      const path = join(this.dir, f);
      let req: InboxRequest | null = null;
      let reply: InboxReply;
      try {
        const parsed = JSON.parse(readFileSync(path, 'utf8')) as unknown;
        const why = refusal(parsed);
        if (why) throw new Error(why);
        req = parsed as InboxRequest;
        reply = { ok: true, message: await apply(req), at: Date.now() };
      } catch (err) {
        reply = { ok: false, message: (err as Error).message, at: Date.now() };
      }
      writeFileSync(path.replace(/\.json$/, '.reply.json'), JSON.stringify(reply));
      if (req === null) renameSync(path, `${path}.bad`);
      else unlinkSync(path);
      onDone(req, reply, f);
    }
    return names.length;
  }
}
