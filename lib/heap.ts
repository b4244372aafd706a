/** A binary min-heap keyed by a number; entries may go stale and are skipped by the caller. */
export class MinHeap<T> {
  private readonly keys: number[] = [];
  private readonly items: T[] = [];

  get size(): number {
    return this.items.length;
  }

  push(key: number, item: T): void {
    this.keys.push(key);
    this.items.push(item);
    let i = this.items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.keys[parent] <= this.keys[i]) break;
      this.swap(i, parent);
      i = parent;
    }
  }

  peekKey(): number | undefined {
    return this.keys[0];
  }

  pop(): T | undefined {
    if (this.items.length === 0) return undefined;
    const top = this.items[0];
    const lastKey = this.keys.pop()!;
    const lastItem = this.items.pop()!;
    if (this.items.length > 0) {
      this.keys[0] = lastKey;
      this.items[0] = lastItem;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < this.keys.length && this.keys[l] < this.keys[m]) m = l;
        if (r < this.keys.length && this.keys[r] < this.keys[m]) m = r;
        if (m === i) break;
        this.swap(i, m);
        i = m;
      }
    }
    return top;
  }

  private swap(a: number, b: number): void {
    [this.keys[a], this.keys[b]] = [this.keys[b], this.keys[a]];
    [this.items[a], this.items[b]] = [this.items[b], this.items[a]];
  }
}
