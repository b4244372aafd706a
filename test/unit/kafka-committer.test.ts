/**
 * connectors/kafka.ts Committer: a group's offsets go out together, at most one request at a
 * time and one per interval, each partition at the highest offset asked. The request itself is
 * a function here (Kafka's OffsetCommit in runGroup); the integration and e2e suites commit
 * through the real broker.
 */
import { Committer } from '../../connectors/kafka';

type Offsets = Array<{ topic: string; partition: number; offset: string }>;

function recorder(): { sent: Offsets[]; answer: () => void; send: (o: Offsets) => Promise<void>; failNext: (e: Error) => void } {
  const sent: Offsets[] = [];
  let release: (() => void) | null = null;
  let fail: Error | null = null;
  return {
    sent,
    // Each request stays in flight until answer() (or fails at once after failNext()).
    send: (o) => {
      sent.push(o);
      if (fail) {
        const e = fail;
        fail = null;
        return Promise.reject(e);
      }
      return new Promise<void>((r) => (release = r));
    },
    answer: () => {
      const r = release;
      release = null;
      r?.();
    },
    failNext: (e) => (fail = e),
  };
}

const tick = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const byPartition = (o: Offsets): Record<string, string> => Object.fromEntries(o.map((x) => [`${x.topic}/${x.partition}`, x.offset]));

describe('Committer', () => {
  it('sends every partition asked within the interval in one request, each at its highest offset', async () => {
    const r = recorder();
    const c = new Committer(r.send, () => undefined, 20);
    c.commit('t', 0, 5);
    c.commit('t', 1, 3);
    c.commit('t', 0, 9);
    c.commit('t', 0, 7); // lower than asked: ignored
    c.commit('u', 0, 2);
    expect(r.sent).toHaveLength(0);
    await tick(60);
    expect(r.sent).toHaveLength(1);
    expect(byPartition(r.sent[0])).toEqual({ 't/0': '9', 't/1': '3', 'u/0': '2' });
    r.answer();
  });

  it('keeps one request in flight; what is asked meanwhile goes in the next one', async () => {
    const r = recorder();
    const c = new Committer(r.send, () => undefined, 10);
    c.commit('t', 0, 1);
    await tick(40);
    expect(r.sent).toHaveLength(1);
    c.commit('t', 0, 2);
    c.commit('t', 1, 4);
    await tick(40);
    expect(r.sent).toHaveLength(1); // still waiting for the first answer
    r.answer();
    await tick(40);
    expect(r.sent).toHaveLength(2);
    expect(byPartition(r.sent[1])).toEqual({ 't/0': '2', 't/1': '4' });
    r.answer();
    c.commit('t', 0, 2); // already sent: nothing new
    await tick(40);
    expect(r.sent).toHaveLength(2);
  });

  it('flush sends what is asked at once and waits for the answers', async () => {
    const r = recorder();
    const c = new Committer(r.send, () => undefined, 60_000);
    c.commit('t', 3, 11);
    let flushed = false;
    const f = c.flush().then(() => (flushed = true));
    await tick(5);
    expect(r.sent).toHaveLength(1);
    expect(byPartition(r.sent[0])).toEqual({ 't/3': '11' });
    expect(flushed).toBe(false);
    r.answer();
    await f;
    expect(flushed).toBe(true);
    await c.flush(); // nothing left: returns at once
    expect(r.sent).toHaveLength(1);
  });

  it('reports a refused commit and goes on committing', async () => {
    const r = recorder();
    const errors: unknown[] = [];
    const c = new Committer(r.send, (e) => errors.push(e), 10);
    r.failNext(new Error('REBALANCE_IN_PROGRESS'));
    c.commit('t', 0, 1);
    await tick(40);
    expect(errors).toHaveLength(1);
    c.commit('t', 0, 2);
    await tick(40);
    expect(r.sent).toHaveLength(2);
    expect(byPartition(r.sent[1])).toEqual({ 't/0': '2' });
    r.answer();
  });
});
