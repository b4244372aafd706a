/**
 * connectors/kafka.ts produce: calls on one producer run one after another (an idempotent
 * producer's sequence numbers taken back after a failed request must not go to another call's
 * batch), calls on different producers do not wait for each other, and a failed call does not
 * stop the next. The producer is a stand-in recording its sendBatch calls; the integration and
 * e2e suites produce through the real broker.
 */
import type { Producer } from 'kafkajs';
import { produce, type RawRecord } from '../../connectors/kafka';

function fakeProducer(): { producer: Producer; started: string[]; finish: (ok?: boolean) => void } {
  const started: string[] = [];
  const waiting: Array<[() => void, (e: Error) => void]> = [];
  const producer = {
    sendBatch: (b: { topicMessages: Array<{ topic: string; messages: Array<{ key: string }> }> }) => {
      started.push(b.topicMessages.flatMap((t) => t.messages.map((m) => `${t.topic}:${m.key}`)).join(','));
      return new Promise<void>((resolve, reject) => waiting.push([resolve, reject]));
    },
  } as unknown as Producer;
  return { producer, started, finish: (ok = true) => { const [res, rej] = waiting.shift()!; if (ok) res(); else rej(new Error('refused')); } };
}

const rec = (topic: string, key: string): RawRecord => ({ topic, partition: 0, key, value: Buffer.from(key) });
const turn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('produce', () => {
  it('runs one call at a time per producer, in order; another producer does not wait', async () => {
    const a = fakeProducer();
    const b = fakeProducer();
    const first = produce(a.producer, [rec('t', '1')]);
    const second = produce(a.producer, [rec('t', '2')]);
    const other = produce(b.producer, [rec('t', 'x')]);
    await turn();
    expect(a.started).toEqual(['t:1']);
    expect(b.started).toEqual(['t:x']);
    a.finish(false); // the first fails: the second still goes, after it
    await expect(first).rejects.toThrow('refused');
    await turn();
    expect(a.started).toEqual(['t:1', 't:2']);
    a.finish();
    b.finish();
    await Promise.all([second, other]);
  });
});
