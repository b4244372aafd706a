/**
 * What kafkajs says, for a person on call: its log entries go through pino (JSON like every
 * other line), and an outage is told as state changes, not as a line per failed request. In a
 * 9-second broker outage a process logged about 150 kafkajs error lines before (a connection
 * refused, a seed broker tried, a send failed: each once per client per retry); now it logs
 *   - "Kafka unreachable" (warn) once requests have failed for a second with no answer, with
 *     the first error (a single failed request answered again at once is a debug line);
 *   - "Kafka still unreachable" (warn) once a minute while it lasts, with the failures so far;
 *   - "Kafka answering again" (info) when a broker answers, with how long it lasted, how many
 *     kafkajs errors were left out and which kinds.
 * Errors that come in the first seconds after a broker answers again (retries that started
 * during the outage and fail late, a coordinator still loading) are a debug line each instead
 * of a new outage. Any other kafkajs line is logged at most once a minute per
 * kind (its text without numbers), with how many were left out; a group rebalancing is a debug
 * line (kafkajs calls it an error; the runner logs the assignment it ends in).
 *
 * "Answers" are read off the sockets: kafkajs is given our socket factory (its documented
 * `socketFactory` option), which notes every byte received from a broker and keeps the open
 * sockets, so a stopping process can close what kafkajs itself left open (closeLeftovers).
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { logLevel, type ISocketFactory, type logCreator } from 'kafkajs';
import type { Logger } from 'pino';

/** An error that says a broker could not be reached or was not ready: part of an outage. */
const OUTAGE = new RegExp(
  [
    'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND',
    'Connection (error|timeout|closed)', 'Closed connection', 'ailed to connect', 'ailed to send messages',
    'not the leader', 'no leader', 'leader is not available', 'coordinator is not available', 'coordinator is loading',
    'not the correct coordinator', 'timed out', 'umber of retries exceeded', 'Restarting the consumer', 'Crash: KafkaJS',
    'is not available', 'Broker not connected', 'not found in the cached metadata', 'No brokers',
  ].join('|'),
);

/** kafkajs's errors for a group rebalancing: an ordinary event (the runner logs "partitions assigned"). */
const REBALANCING = /group is rebalancing/i;

export const REMINDER_EVERY_MS = 60_000;
/**
 * Failures must go on this long with no answer to be an outage: a coordinator moving or still
 * loading fails one request, answered again a few milliseconds later (two lines for nothing).
 */
export const CONFIRM_MS = 1000;
/** Errors this soon after the brokers answered again are counted, not a new outage. */
export const LATE_ERRORS_MS = 10_000;
/** Any other kafkajs line: at most one per kind per this. */
export const SAME_LINE_EVERY_MS = 60_000;

/** A kafkajs entry's kind: its namespace and text without numbers (addresses, ids, sizes). */
export function entryKind(namespace: string, message: string): string {
  return `${namespace ? `[${namespace}] ` : ''}${message.replace(/\[[A-Za-z]+\]\s*/, '')}`.replace(/\d+/g, 'N').slice(0, 160);
}

export function isOutageError(message: string, error?: unknown): boolean {
  return OUTAGE.test(message) || (typeof error === 'string' && OUTAGE.test(error));
}

interface Outage {
  since: number;
  failures: number;
  kinds: Map<string, number>;
  remindedAt: number;
  /** The first failure, told once failures have gone on for CONFIRM_MS with no answer. */
  first: { namespace: string; error: string; broker: unknown };
  reported: boolean;
}

export class KafkaHealth {
  private outage: Outage | null = null;
  /** When the brokers last answered after an outage. */
  private backAt = -Infinity;
  private readonly lines = new Map<string, { at: number; left: number }>();
  private readonly sockets = new Set<net.Socket>();

  constructor(private readonly log: Logger, private readonly now: () => number = Date.now) {}

  get down(): boolean {
    return this.outage !== null;
  }

  /** kafkajs's logCreator: every entry comes here instead of kafkajs's console logger. */
  readonly logCreator: logCreator = () => ({ namespace, level, log }) => {
    const { message, ...extra } = log as { message: string } & Record<string, unknown>;
    this.entry(namespace, level, message, extra);
  };

  /** kafkajs's socketFactory (net or tls, keep-alive as kafkajs's own), noting answers. */
  readonly socketFactory: ISocketFactory = ({ host, port, ssl, onConnect }) => {
    const socket: net.Socket = ssl
      ? tls.connect({ host, port, ...(net.isIP(host) ? {} : { servername: host }), ...ssl }, onConnect)
      : net.connect({ host, port }, onConnect);
    socket.setKeepAlive(true, 60_000);
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('data', () => {
      if (this.outage) this.answered();
    });
    return socket;
  };

  entry(namespace: string, level: logLevel, message: string, extra: Record<string, unknown> = {}): void {
    if (REBALANCING.test(message) || (typeof extra.error === 'string' && REBALANCING.test(extra.error))) {
      this.log.debug({ kafkajs: namespace, ...pick(extra) }, `kafkajs: ${message}`);
      return;
    }
    if (level <= logLevel.WARN && isOutageError(message, extra.error)) {
      this.failed(namespace, message, extra);
      return;
    }
    const kind = entryKind(namespace, message);
    const t = this.now();
    const seen = this.lines.get(kind);
    if (seen && t - seen.at < SAME_LINE_EVERY_MS) {
      seen.left++;
      return;
    }
    this.lines.set(kind, { at: t, left: 0 });
    const fields = { kafkajs: namespace, ...pick(extra), ...(seen?.left ? { repeated: seen.left } : {}) };
    const text = `kafkajs: ${message}`;
    if (level === logLevel.ERROR) this.log.error(fields, text);
    else if (level === logLevel.WARN) this.log.warn(fields, text);
    else if (level === logLevel.INFO) this.log.info(fields, text);
    else this.log.debug(fields, text);
  }

  /** Sockets to brokers not yet closed (kafkajs's own, whichever client opened them). */
  get openSockets(): number {
    return this.sockets.size;
  }

  /**
   * End the sockets kafkajs left open once every client has disconnected: after a broker
   * restart a consumer's coordinator connection is dropped from its broker pool but kept (and
   * reconnected by heartbeats), so disconnect() never closes it and it keeps the process alive.
   * Returns how many there were.
   */
  closeLeftovers(): number {
    // kafkajs ends what it disconnects (socket.end()); those may still be closing.
    let left = 0;
    for (const s of this.sockets) {
      if (!s.writableEnded) left++;
      s.destroy();
    }
    this.sockets.clear();
    return left;
  }

  private failed(namespace: string, message: string, extra: Record<string, unknown>): void {
    const t = this.now();
    const kind = entryKind(namespace, typeof extra.error === 'string' ? `${message}: ${extra.error}` : message);
    let o = this.outage;
    if (!o && t - this.backAt < LATE_ERRORS_MS) {
      this.log.debug({ kafkajs: namespace, error: kind, sinceBackMs: t - this.backAt }, 'Kafka error just after it answered again');
      return;
    }
    if (!o) {
      const error = typeof extra.error === 'string' ? `${message}: ${extra.error}` : message;
      o = this.outage = { since: t, failures: 0, kinds: new Map(), remindedAt: t, first: { namespace, error, broker: extra.broker }, reported: false };
    }
    if (!o.reported && t - o.since >= CONFIRM_MS) {
      o.reported = true;
      o.remindedAt = t;
      this.log.warn(
        { kafkajs: o.first.namespace, error: o.first.error, broker: o.first.broker, sinceMs: t - o.since },
        'Kafka unreachable: retrying until a broker answers (one line then, none per failed request)',
      );
    } else if (o.reported && t - o.remindedAt >= REMINDER_EVERY_MS) {
      o.remindedAt = t;
      this.log.warn({ downMs: t - o.since, failures: o.failures }, 'Kafka still unreachable');
    }
    o.failures++;
    count(o.kinds, kind);
  }

  private answered(): void {
    const o = this.outage!;
    const t = this.now();
    this.outage = null;
    if (!o.reported) {
      this.log.debug({ failures: o.failures, kinds: top(o.kinds, 5), answeredMs: t - o.since }, 'Kafka failed a request and answered again');
      return;
    }
    this.backAt = t;
    this.log.info({ downMs: t - o.since, failures: o.failures, kinds: top(o.kinds, 5) }, 'Kafka answering again');
  }
}

function count(m: Map<string, number>, k: string): void {
  m.set(k, (m.get(k) ?? 0) + 1);
}

function top(m: Map<string, number>, n: number): Record<string, number> {
  return Object.fromEntries([...m].sort((a, b) => b[1] - a[1]).slice(0, n));
}

/** The fields of a kafkajs entry worth a log line (not its stack: the message says it). */
function pick(extra: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ['broker', 'error', 'groupId', 'topic', 'partition', 'retryCount', 'retryTime']) if (extra[k] !== undefined) out[k] = extra[k];
  return out;
}
