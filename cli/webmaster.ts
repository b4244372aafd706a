/**
 * `crawl webmaster add-account | list-accounts | disable-account`: the operator's side of the
 * webmaster API's accounts. add-account prints the new bearer token once; only its SHA-256 is
 * written (crawl.webmaster-accounts), with an audit row naming the operator (the machine's user
 * name) and the time.
 *
 * Kafka mode by default; with `--out DIR`, the journal of an embedded crawl (`crawl run --out
 * DIR --status-port N` then serves the API for it). That journal must not be written while a
 * crawl runs on it: add accounts before starting the run.
 */
import { join } from 'node:path';
import { createProducer, produce } from '../connectors/kafka';
import { loadConfig } from '../lib/config';
import { createLogger } from '../lib/logger';
import type { WebmasterAccountMsg } from '../lib/messages';
import { auditRow, newAccountId, newAccountToken, tokenHash } from '../lib/webmaster';
import { FileLog } from '../runtime/file-log';
import { encodeRecords, type KafkaRuntime } from '../runtime/kafka-runner';
import type { OutRecord } from '../runtime/stage';
import { readJournaledTable } from './explain-state';
import { kafkaEnv, latestRows, runtimeFor } from './kafka-commands';
import { operatorName } from './operator-inbox';

export interface Where {
  /** An embedded crawl's folder (`crawl run --out`); absent = Kafka mode. */
  out?: string;
}

const operator = operatorName;

function accountRows(account: WebmasterAccountMsg, action: string, at: number): OutRecord[] {
  return [
    { topic: 'webmasterAccounts', key: account.id, host: account.id, value: account },
    { topic: 'webmasterAudit', key: account.id, host: account.id, value: auditRow(operator(), action, null, { account: account.id, name: account.name }, at) },
  ];
}

/** The Kafka runtime, made once per command (disable-account reads the accounts, then writes). */
let kafkaRuntime: Promise<KafkaRuntime> | null = null;
const runtime = (): Promise<KafkaRuntime> => (kafkaRuntime ??= runtimeFor(kafkaEnv(), loadConfig(), createLogger()));

async function write(outs: OutRecord[], where: Where): Promise<void> {
  const config = loadConfig();
  if (where.out) {
    const log = new FileLog({ dir: join(where.out, 'state'), partitions: config.partitions });
    try {
      log.append(outs);
    } finally {
      log.close();
    }
    return;
  }
  const rt = await runtime();
  const producer = await createProducer(rt.kafka);
  try {
    await produce(producer, await encodeRecords(rt, outs));
  } finally {
    await producer.disconnect();
  }
}

export async function readAccounts(where: Where): Promise<Map<string, WebmasterAccountMsg>> {
  if (where.out) return readJournaledTable<WebmasterAccountMsg>(join(where.out, 'state'), 'webmasterAccounts');
  const rt = await runtime();
  const rows = new Map<string, WebmasterAccountMsg>();
  for (const [key, value] of await latestRows<WebmasterAccountMsg>(rt, 'webmasterAccounts')) if (value) rows.set(key, value);
  return rows;
}

/** Make an account; returns its id and token (the token is not kept anywhere). */
export async function addAccount(name: string, where: Where = {}): Promise<{ id: string; token: string }> {
  const clean = name.trim();
  if (clean === '' || clean.length > 200 || /[\x00-\x1f]/.test(clean)) throw new Error('give the account a name of 1-200 printable characters (who it is for)');
  const token = newAccountToken();
  const now = Date.now();
  const account: WebmasterAccountMsg = { id: newAccountId(), name: clean, token_sha256: tokenHash(token), created_at: now, created_by: operator(), disabled_at: null };
  await write(accountRows(account, 'add-account', now), where);
  return { id: account.id, token };
}

export async function disableAccount(id: string, where: Where = {}): Promise<void> {
  const account = (await readAccounts(where)).get(id);
  if (!account) throw new Error(`no webmaster account ${id} (see crawl webmaster list-accounts)`);
  if (account.disabled_at !== null) return;
  const now = Date.now();
  await write(accountRows({ ...account, disabled_at: now }, 'disable-account', now), where);
}

export async function addAccountCommand(name: string, o: Where): Promise<void> {
  const { id, token } = await addAccount(name, o);
  process.stdout.write(
    `webmaster account ${id} (${name.trim()})\n` +
      `token: ${token}\n` +
      'The token is shown this once and not stored (only its SHA-256 is): hand it to the webmaster over a safe channel.\n' +
      'They call the webmaster API with  Authorization: Bearer <token>\n',
  );
}

export async function listAccountsCommand(o: Where): Promise<void> {
  const accounts = [...(await readAccounts(o)).values()].sort((a, b) => a.created_at - b.created_at);
  for (const a of accounts) {
    const state = a.disabled_at === null ? 'active' : `disabled ${new Date(a.disabled_at).toISOString()}`;
    process.stdout.write(`${a.id}\t${a.name}\t${state}\tcreated ${new Date(a.created_at).toISOString()} by ${a.created_by}\n`);
  }
  process.stdout.write(`${accounts.length} account(s)\n`);
}

export async function disableAccountCommand(id: string, o: Where): Promise<void> {
  await disableAccount(id, o);
  process.stdout.write(`webmaster account ${id} disabled: its token is refused from now on\n`);
}
