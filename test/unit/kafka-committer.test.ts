/**
 * connectors/kafka.ts Committer: a group's offsets go out together, at most one request at a
 * time and one per interval, each partition at the highest offset asked. The request itself is
 * a function here (Kafka's OffsetCommit in runGroup); the integration and e2e suites commit
 * through the real broker.
 */
import { Committer } from '../../connectors/kafka';

type Offsets = Array<{ topic: string; partition: number; offset: string }>;

function recorder(): { sent: Offsets[]; answer: () => void; refuse: (e: Error) => void; send: (o: Offsets) => Promise<void> } {
  const sent: Offsets[] = [];
  let release: (() => void) | null = null;
  let refuse: ((e: Error) => void) | null = null;
  return {
    sent,
    // Each request stays in flight until answer() or refuse().
    send: (o) => {
      sent.push(o);
      return new Promise<void>((r, j) => {
        release = r;
        refuse = j;
      });
    },
    refuse: (e) => {
      const j = refuse;
      refuse = null;
      j?.(e);
    },
    answer: () => {
      const r = release;
      release = null;
      r?.();
    },
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

  it('reports a refused commit and sends it again, unless a later offset was asked meanwhile', async () => {
    const r = recorder();
    const errors: unknown[] = [];
    const c = new Committer(r.send, (e) => errors.push(e), 10);
    c.commit('t', 0, 1);
    c.commit('t', 1, 7);
    await tick(30);
    c.commit('t', 0, 2); // asked while the first request is out
    r.refuse(new Error('REBALANCE_IN_PROGRESS'));
    await tick(40);
    expect(errors).toHaveLength(1);
    expect(r.sent).toHaveLength(2);
    expect(byPartition(r.sent[0])).toEqual({ 't/0': '1', 't/1': '7' });
    // t/1's refused 7 goes again; t/0 goes at 2, not at the refused 1.
    expect(byPartition(r.sent[1])).toEqual({ 't/0': '2', 't/1': '7' });
    r.answer();
    await c.flush();
    expect(r.sent).toHaveLength(2);
  });
});
