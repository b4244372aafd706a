/** An iterator read to its end `chunk` items at a time, the next chunk read while `onChunk` works on the last (KvStore.scan). */
export async function readAhead<T>(it: { nextv(n: number): Promise<T[]>; close(): Promise<void> }, chunk: number, onChunk: (items: T[]) => Promise<void> | void): Promise<number> {
  let n = 0;
  let next: Promise<T[]> | null = it.nextv(chunk);
  try {
    for (;;) {
      const items = await next;
      next = null;
      if (items.length === 0) break;
      n += items.length;
      next = it.nextv(chunk);
      await onChunk(items);
    }
  } finally {
    // A read still in flight (onChunk failed) settles before the iterator closes.
    await next?.catch(() => undefined);
    await it.close();
  }
  return n;
}
