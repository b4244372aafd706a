/**
 * connectors/kafka-health.ts: kafkajs's log entries as state changes (one line when the brokers
 * stop answering, a reminder a minute, one when they answer again), other lines at most once a
 * minute per kind; answers read off real loopback sockets made by its socket factory.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { logLevel } from 'kafkajs';
import pino from 'pino';
import { isOutageCrash } from '../../connectors/kafka';
import { CONFIRM_MS, entryKind, isOutageError, KafkaHealth, LATE_ERRORS_MS, REMINDER_EVERY_MS } from '../../connectors/kafka-health';

interface Line {
  level: number;
  msg: string;
  [k: string]: unknown;
}

function capture(): { log: pino.Logger; lines: Line[] } {
  const lines: Line[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
  return { log, lines };
}

const refused = (h: KafkaHealth): void => h.entry('Connection', logLevel.ERROR, '[Connection] Connection error: connect ECONNREFUSED 127.0.0.1:29092', { broker: '127.0.0.1:29092' });

async function server(): Promise<{ srv: Server; port: number; peers: Socket[] }> {
  const peers: Socket[] = [];
  const srv = createServer((s) => peers.push(s));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  return { srv, port: (srv.address() as AddressInfo).port, peers };
}

function connect(h: KafkaHealth, port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const s: Socket = h.socketFactory({ host: '127.0.0.1', port, ssl: null as never, onConnect: () => resolve(s) });
  });
}

describe('KafkaHealth', () => {
  it('an outage is three lines however many requests fail: unreachable, a reminder a minute, answering again', async () => {
    let clock = 0;
    const { log, lines } = capture();
    const h = new KafkaHealth(log, () => clock);
    const { srv, port, peers } = await server();
    const sock = await connect(h, port);
    for (let i = 0; i < 150; i++) {
      clock += 100;
      refused(h);
      h.entry('BrokerPool', logLevel.ERROR, '[BrokerPool] Failed to connect to seed broker, trying another broker from the list: Connection error: connect ECONNREFUSED 127.0.0.1:29092');
      h.entry('Producer', logLevel.ERROR, '[Producer] Failed to send messages: This server is not the leader for that topic-partition');
    }
    expect(h.down).toBe(true);
    clock += REMINDER_EVERY_MS;
    refused(h);
    // The broker answers: bytes arrive on a socket kafkajs was given.
    peers[0]!.write('x');
    await new Promise((r) => sock.once('data', r));
    expect(h.down).toBe(false);
    // A retry that started in the outage and fails just after: no new outage.
    clock += LATE_ERRORS_MS - 1;
    refused(h);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [40, 'Kafka unreachable: retrying until a broker answers (one line then, none per failed request)'],
      [40, 'Kafka still unreachable'],
      [30, 'Kafka answering again'],
    ]);
    expect(lines[0]).toMatchObject({ broker: '127.0.0.1:29092', error: expect.stringContaining('ECONNREFUSED'), sinceMs: 1000 });
    expect(lines[2]).toMatchObject({ failures: 451, downMs: 15_000 + REMINDER_EVERY_MS - 100 });
    expect(Object.keys(lines[2]!.kinds as object)).toHaveLength(3);
    // Past the late window, failures for a second are a new outage.
    clock += 2;
    refused(h);
    clock += CONFIRM_MS;
    refused(h);
    expect(lines).toHaveLength(4);
    expect(h.closeLeftovers()).toBe(1);
    srv.close();
  });

  it('a request failed and answered again within a second is no outage: no line', async () => {
    let clock = 0;
    const { log, lines } = capture();
    const h = new KafkaHealth(log, () => clock);
    const { srv, port, peers } = await server();
    const sock = await connect(h, port);
    h.entry('Connection', logLevel.ERROR, '[Connection] Response Heartbeat(key: 12, version: 3)', { error: 'This is not the correct coordinator for this group' });
    clock += 60;
    peers[0]!.write('x');
    await new Promise((r) => sock.once('data', r));
    expect(h.down).toBe(false);
    expect(lines).toEqual([]);
    h.closeLeftovers();
    srv.close();
  });

  it('other kafkajs lines: JSON through the logger, each kind at most once a minute with a count of those left out', () => {
    let clock = 0;
    const { log, lines } = capture();
    const h = new KafkaHealth(log, () => clock);
    const warn = (id: number): void => h.entry('Consumer', logLevel.WARN, `[Consumer] something odd about member ${id}`, { groupId: 'g', stack: 'long' });
    warn(1);
    warn(2);
    warn(3);
    clock += 60_000;
    warn(4);
    h.entry('Runner', logLevel.INFO, '[Runner] consumer joined');
    h.entry('Connection', logLevel.ERROR, '[Connection] Response Heartbeat(key: 12, version: 3)', { error: 'The group is rebalancing, so a rejoin is needed' });
    h.entry('Runner', logLevel.WARN, '[Runner] The group is rebalancing, re-joining');
    expect(lines.map((l) => [l.level, l.msg, l.repeated])).toEqual([
      [40, 'kafkajs: [Consumer] something odd about member 1', undefined],
      [40, 'kafkajs: [Consumer] something odd about member 4', 2],
      [30, 'kafkajs: [Runner] consumer joined', undefined],
    ]);
    expect(lines[0]).toMatchObject({ kafkajs: 'Consumer', groupId: 'g' });
    expect(lines[0]!.stack).toBeUndefined();
  });

  it('classifies outage errors by message or by the error a response carried', () => {
    expect(isOutageError('[Connection] Response Produce(key: 0, version: 7)', 'This server is not the leader for that topic-partition')).toBe(true);
    expect(isOutageError('[Connection] Response GroupCoordinator(key: 10, version: 2)', 'The group coordinator is not available')).toBe(true);
    expect(isOutageError('[Connection] Connection timeout')).toBe(true);
    expect(isOutageError('[Connection] Response Produce(key: 0, version: 7)', 'The request included a message larger than the max message size the server will accept')).toBe(false);
    expect(entryKind('Connection', '[Connection] Connection error: connect ECONNREFUSED 127.0.0.1:29092')).toBe('[Connection] Connection error: connect ECONNREFUSED N.N.N.N:N');
  });

  it('closeLeftovers ends the sockets still open, and only those', async () => {
    const { log } = capture();
    const h = new KafkaHealth(log);
    const { srv, port } = await server();
    const a = await connect(h, port);
    await connect(h, port);
    a.destroy();
    await new Promise((r) => a.once('close', r));
    expect(h.openSockets).toBe(1);
    expect(h.closeLeftovers()).toBe(1);
    expect(h.openSockets).toBe(0);
    srv.close();
  });

  it('a consumer crash from brokers being away is joined again; any other ends the process', () => {
    const named = (name: string, extra: Record<string, unknown> = {}): Error => Object.assign(new Error(name), { name, ...extra });
    // kafkajs calls this one non-retriable: it would leave the stage without a consumer.
    expect(isOutageCrash(named('KafkaJSGroupCoordinatorNotFound', { retriable: false }))).toBe(true);
    expect(isOutageCrash(named('KafkaJSNonRetriableError', { retriable: false, cause: named('KafkaJSConnectionError', { retriable: true }) }))).toBe(true);
    expect(isOutageCrash(named('KafkaJSNonRetriableError', { retriable: false, cause: named('KafkaJSProtocolError', { retriable: false }) }))).toBe(false);
    expect(isOutageCrash(new TypeError('x is undefined'))).toBe(false);
  });
});
