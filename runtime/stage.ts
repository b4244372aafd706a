/**
 * The shape every processor has: a pure-ish handler over typed input records that returns
 * what to emit, plus optional timer work and state restore. The runtimes (embedded log or
 * Kafka) do all I/O on the log: they produce a batch's emits durably *before* committing the
 * input offsets, which makes every stage at-least-once.
 */
import type { Logger } from 'pino';
import type { TopicId } from '../topologies/crawl';

export interface InRecord<V = unknown> {
  topic: TopicId;
  partition: number;
  offset: number;
  key: string;
  value: V;
  timestamp: number;
}

export interface OutRecord {
  topic: TopicId;
  key: string;
  /** The host: decides the partition (lib/partitioner.ts). */
  host: string;
  value: unknown;
}

/** A row of a compacted table; value null is a tombstone. */
export interface TableRecord<V = unknown> {
  partition: number;
  key: string;
  value: V | null;
}

/**
 * What a handler returns: the emits, or `early` emits to produce at once plus `pending` ones
 * that wait on something slower. The record counts as done (its offset may be committed) only
 * when both are produced.
 */
export type HandleResult = OutRecord[] | { early?: OutRecord[]; pending: Promise<OutRecord[]> };

export interface StageContext {
  now(): number;
  log: Logger;
}

export interface Stage {
  readonly id: string;
  readonly inputs: readonly TopicId[];
  readonly outputs: readonly TopicId[];
  /** How many handle() calls may be in flight at once (async stages such as fetch). */
  readonly concurrency?: number;
  /**
   * Handle one record and say what to emit. Throwing fails the record's batch (it is retried).
   * A handler may return `{ pending }` to free its concurrency slot while the emits wait on
   * something slower (fetch waits for its WARC file to be stored).
   */
  handle(rec: InRecord, ctx: StageContext): HandleResult | Promise<HandleResult>;
  /** Periodic work (the frontier releasing due hosts), every tickMs. */
  readonly tickMs?: number;
  tick?(ctx: StageContext): OutRecord[];
  /** Compacted tables to replay for the owned partitions before consuming any input. */
  readonly restoreFrom?: readonly TopicId[];
  restore?(rec: TableRecord, topic: TopicId): void;
  /** The partitions this instance owns changed (after any restore of newly owned ones). */
  assigned?(partitions: readonly number[]): void;
  /**
   * Handle a whole batch at once, for stages that talk to an external store (one round trip
   * per batch instead of per record). When present, the runtimes call it instead of handle().
   */
  handleBatch?(recs: readonly InRecord[], ctx: StageContext): OutRecord[] | Promise<OutRecord[]>;
  /**
   * Told of a batch's emits once they are durably in the log, before its offsets are
   * committed. seen-test marks URLs seen only here, so a crash between the two costs a
   * duplicate candidate, never a hidden URL.
   */
  produced?(outs: readonly OutRecord[]): void | Promise<void>;
  /**
   * Compacted tables every instance reads whole (all partitions) and keeps following: host
   * policy (blocks, crawl rates) and the opt-out registry. Rows arrive through onGlobal.
   */
  readonly globalTables?: readonly TopicId[];
  onGlobal?(rec: TableRecord, topic: TopicId): void;
  /** Stop: flush buffers (e.g. the WARC writer) so pending handle() calls resolve. */
  close?(): Promise<void>;
}

/**
 * Runs a stage's handler with its concurrency limit. A slot is held while handle() runs and
 * released early when the handler returns `{ pending }`.
 */
export class Dispatcher {
  private inflight = 0;
  private readonly waiters: Array<() => void> = [];
  private readonly limit: number;

  constructor(private readonly stage: Stage, private readonly ctx: StageContext) {
    this.limit = Math.max(1, stage.concurrency ?? 1);
  }

  get busy(): number {
    return this.inflight;
  }

  get hasFreeSlot(): boolean {
    return this.inflight < this.limit;
  }

  /** Run one record; `onEarly` receives early emits as soon as the handler returns them. */
  async run(rec: InRecord, onEarly?: (outs: OutRecord[]) => void): Promise<OutRecord[]> {
    while (this.inflight >= this.limit) await new Promise<void>((r) => this.waiters.push(r));
    this.inflight++;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.inflight--;
      this.waiters.shift()?.();
    };
    try {
      const result = await this.stage.handle(rec, this.ctx);
      if (Array.isArray(result)) return result;
      release();
      if (result.early?.length) {
        if (onEarly) onEarly(result.early);
        else return [...result.early, ...(await result.pending)];
      }
      return await result.pending;
    } finally {
      release();
    }
  }

  /** All records of a batch; emits in input order. */
  async runAll(recs: readonly InRecord[], onEarly?: (outs: OutRecord[]) => void): Promise<OutRecord[]> {
    const results = await Promise.all(recs.map((r) => this.run(r, onEarly)));
    return results.flat();
  }
}
