import { ProduceQueue } from '../../runtime/produce-queue';

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('records sent in one turn go in one produce; those sent while it is in flight go together in the next', async () => {
  const calls: number[][] = [];
  let release!: () => void;
  const q = new ProduceQueue<number>(async (items) => {
    calls.push(items);
    await new Promise<void>((r) => (release = r));
  });
  const a = q.send([1, 2]);
  const b = q.send([3]);
  await tick();
  expect(calls).toEqual([[1, 2, 3]]);
  // In flight: these wait, and go as one produce after it.
  const c = q.send([4]);
  await tick();
  const d = q.send([5, 6]);
  await tick();
  expect(calls).toHaveLength(1);
  let aDone = false;
  void a.then(() => (aDone = true));
  release();
  await Promise.all([a, b]);
  expect(aDone).toBe(true);
  await tick();
  expect(calls).toEqual([[1, 2, 3], [4, 5, 6]]);
  release();
  await Promise.all([c, d]);
  expect(q.flushes).toBe(2);
  expect(q.records).toBe(6);
  expect(q.waiting).toBe(0);
});

test('a send resolves only once its records are produced; a failed produce rejects exactly its senders', async () => {
  let fail = true;
  const produced: number[] = [];
  const q = new ProduceQueue<number>(async (items) => {
    await tick();
    if (fail) throw new Error('broker away');
    produced.push(...items);
  });
  const first = q.send([1]);
  await expect(first).rejects.toThrow('broker away');
  expect(produced).toEqual([]);
  fail = false;
  let resolved = false;
  const second = q.send([2]).then(() => (resolved = true));
  expect(resolved).toBe(false);
  await second;
  expect(produced).toEqual([2]);
  await expect(q.send([])).resolves.toBeUndefined();
  expect(q.flushes).toBe(2);
});
