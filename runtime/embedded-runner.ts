/**
 * Runs stages over the embedded FileLog in one process: one consumer group per stage, all
 * partitions owned, at-least-once. A record's emits are appended to the log before its offset
 * can be committed, and offsets advance only over a contiguous run of finished records.
 */
import type { Logger } from 'pino';
import type { TopicId } from '../topologies/crawl';
import type { FileLog } from './file-log';
import { AbandonedError, Dispatcher, type InRecord, type Stage, type StageContext, type TableRecord } from './stage';
import { InflightOffsets } from './inflight-offsets';

export const DEFAULT_CHECKPOINT_MS = 5000;

export interface EmbeddedRunnerOptions {
  /**
   * How often each group's offsets journal is folded into its snapshot and fully consumed log
   * segments are deleted (5 s by default). Commits reach the journal at the end of every turn
   * whatever this is; a snapshot is a file replaced by rename, about a millisecond each on
   * ext4, for every group.
   */
  checkpointMs?: number;
  /**
   * Records read ahead per stage and input topic beyond what is running (fetch waits on WARC
   * flushes). Each input topic has its own: the frontier's answers (crawl.fetch-status) are
   * never left unread behind a backlog of candidates (crawl.frontier) that filled it.
   */
  readAhead?: number;
  retryDelayMs?: number;
  /**
   * Per stage id: while this says so, the stage starts no new record (records running finish).
   * `crawl run` holds fetch while parse is far behind, so pages are not fetched faster than
   * they are parsed and pile up in memory.
   */
  holdWhile?: Readonly<Record<string, () => boolean>>;
  /** How often compacted topics are cleaned on disk (COMPACT_EVERY_MS). */
  compactMs?: number;
  /** How long a stopping stage waits for the records it is running (10 s by default; see StageLoop.stop). */
  stopWaitMs?: number;
}

/** How often a held stage looks again. */
const HOLD_RECHECK_MS = 10;
/** Records read from one partition before pump turns to the next. */
const READ_CHUNK = 256;
const DEFAULT_STOP_WAIT_MS = 10_000;

async function until(done: () => boolean, deadline: number): Promise<void> {
  while (!done() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

class StageLoop {
  private readonly group: string;
  private readonly dispatcher: Dispatcher;
  private readonly position = new Map<string, number>();
  private readonly inflight = new InflightOffsets();
  /** Records started and not yet finished, per input topic (each has readAhead of its own). */
  private readonly runningBy = new Map<TopicId, number>();
  /** The input pump reads first: an index over inputs × partitions, topic-major. */
  private cursor = 0;
  private stopped = false;
  /** Set when a stop gave up waiting: results that come in later are dropped (stop()). */
  private letGo = false;
  private tickTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly stage: Stage,
    private readonly log: FileLog,
    private readonly ctx: StageContext,
    private readonly readAhead: number,
    private readonly retryDelayMs: number,
    private readonly stopWaitMs: number,
    private readonly hold?: () => boolean,
  ) {
    this.group = `crawl.${stage.id}`;
    this.dispatcher = new Dispatcher(stage, ctx);
    const offsets = log.subscribe(this.group, stage.inputs);
    for (const t of stage.inputs) {
      for (let p = 0; p < log.partitions; p++) this.position.set(`${t}/${p}`, offsets[t]![p]);
    }
  }

  /** Restore the stage's state; `tables` reads a compacted topic's current rows (TableReads: once for all stages). */
  async start(tables: TableReads): Promise<void> {
    const began = Date.now();
    const all = Array.from({ length: this.log.partitions }, (_, p) => p);
    if (this.stage.changelog && this.stage.restoreChangelog) await this.stage.restoreChangelog(all, this.log.changelog(this.stage.changelog), this.ctx);
    const restored = Date.now();
    for (const topic of this.stage.restoreFrom ?? []) {
      for (const p of all) for (const row of tables.rows(topic, p)) this.stage.restore?.(row, topic);
    }
    for (const topic of this.stage.globalTables ?? []) {
      for (const p of all) for (const row of tables.rows(topic, p)) this.stage.onGlobal?.(row, topic);
    }
    this.stage.assigned?.(all);
    this.ctx.log.info({ changelogMs: restored - began, tablesMs: Date.now() - restored, sinceStartMs: Math.round(performance.now()) }, 'stage state restored');
  }

  /**
   * Start ticking and consuming, once every stage is restored (EmbeddedRunner.begin): a tick
   * that ran while a later stage was still restoring (parse's stores open asynchronously)
   * appended leases before the runner announced appends, and fetch never read them.
   */
  run(): void {
    if (this.stage.tick) {
      this.tickTimer = setInterval(() => this.tick(), this.stage.tickMs ?? 100);
    }
    this.pump();
  }

  /** The tick running, if any: one at a time, and stop() waits for it. */
  private ticking: Promise<void> | null = null;

  /** One tick at a time; its emits are appended as any handler's are. */
  private tick(): void {
    if (this.stopped || this.ticking) return;
    this.ticking = Promise.resolve()
      .then(() => this.stage.tick!(this.ctx))
      .then(async (outs) => {
        this.log.append(outs);
        await this.stage.produced?.(outs);
      })
      .catch((err: unknown) => this.ctx.log.error({ err }, 'tick failed'))
      .finally(() => (this.ticking = null));
  }

  /** Rows appended to a global table reach the stage as they are written. */
  onAppended(recs: readonly InRecord[]): void {
    const globals = this.stage.globalTables;
    if (!globals?.length || this.stopped) return;
    for (const r of recs) {
      if (globals.includes(r.topic)) this.stage.onGlobal?.({ partition: r.partition, key: r.key, value: r.value }, r.topic);
    }
  }

  private pumpScheduled = false;

  /** Whether any of these records is on one of the stage's input topics. */
  reads(recs: readonly InRecord[]): boolean {
    const inputs = this.stage.inputs;
    for (const r of recs) if (inputs.includes(r.topic)) return true;
    return false;
  }

  /** One pump per turn of the event loop, however many records finished or arrived in it. */
  schedulePump(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      this.pump();
    });
  }

  /** Set while a held stage waits to look again. */
  private holdTimer: NodeJS.Timeout | null = null;

  /** Dispatch whatever is available, up to the read-ahead limit, unless the stage is held. */
  pump(): void {
    if (this.stopped) return;
    if (this.hold?.()) {
      this.holdTimer ??= setTimeout(() => {
        this.holdTimer = null;
        this.pump();
      }, HOLD_RECHECK_MS);
      return;
    }
    // Round robin over the (topic, partition) inputs, from the one after the last served: a
    // chunk from each in turn until the read-ahead is full or every input is read. Reading
    // partition 0 first on every pump gave it every slot that freed up, and the last
    // partitions' hosts waited: in a 30 s crawl of 5,000 hosts partition 0 parsed 5,128
    // pages and partition 7 281, and 343 hosts had no page parsed at all.
    const inputs = this.stage.inputs;
    const parts = this.log.partitions;
    const n = inputs.length * parts;
    let empty = 0;
    while (empty < n) {
      const i = this.cursor;
      this.cursor = (i + 1) % n;
      const topic = inputs[Math.floor(i / parts)]!;
      const room = this.readAhead - (this.runningBy.get(topic) ?? 0);
      if (room <= 0) {
        empty++;
        continue;
      }
      const p = i % parts;
      const k = `${topic}/${p}`;
      const recs = this.log.read(topic, p, this.position.get(k)!, Math.min(READ_CHUNK, room));
      if (recs.length === 0) {
        empty++;
        continue;
      }
      empty = 0;
      if (this.stage.handleBatch) this.dispatchBatch(recs);
      else for (const rec of recs) this.dispatch(rec);
      this.position.set(k, recs[recs.length - 1].offset + 1);
    }
  }

  private dispatchBatch(recs: InRecord[]): void {
    const tracked = recs.map((r) => this.track(r));
    const attempt = (): void => {
      Promise.resolve()
        .then(() => this.stage.handleBatch!(recs, this.ctx))
        .then(async (outs) => {
          if (this.letGo) return;
          this.log.append(outs);
          await this.stage.produced?.(outs);
          this.commit(recs[0].topic, recs[0].partition, Math.max(...tracked.map((t) => t.finish())));
          this.schedulePump();
        })
        .catch((err: unknown) => {
          if (this.stopped) {
            for (const t of tracked) t.abandon();
            return;
          }
          this.ctx.log.error({ err, topic: recs[0].topic, partition: recs[0].partition, offset: recs[0].offset }, 'batch handler failed; retrying');
          setTimeout(attempt, this.retryDelayMs).unref();
        });
    };
    attempt();
  }

  private dispatch(rec: InRecord): void {
    const tracked = this.track(rec);
    const attempt = (): void => {
      this.dispatcher.run(rec, (early) => {
        if (!this.letGo) this.log.append(early);
      }).then(
        async (outs) => {
          if (this.letGo) return;
          this.log.append(outs);
          await this.stage.produced?.(outs);
          this.commit(rec.topic, rec.partition, tracked.finish());
          this.schedulePump();
        },
        (err: unknown) => {
          if (err instanceof AbandonedError || this.stopped) {
            // Stopped before it started, or failed while stopping: left uncommitted for the next
            // run, nothing to wait for.
            tracked.abandon();
            return;
          }
          // At-least-once: a failed record is retried; its offset stays uncommitted meanwhile.
          this.ctx.log.error({ err, topic: rec.topic, partition: rec.partition, offset: rec.offset }, 'handler failed; retrying');
          setTimeout(attempt, this.retryDelayMs).unref();
        },
      );
    };
    attempt();
  }

  /** A record started: counted as running in all and for its topic until it finishes or is abandoned. */
  private track(rec: InRecord): { finish(): number; abandon(): void } {
    const t = this.inflight.start(rec.topic, rec.partition, rec.offset);
    this.runningBy.set(rec.topic, (this.runningBy.get(rec.topic) ?? 0) + 1);
    let running = true;
    const ended = (): void => {
      if (!running) return;
      running = false;
      this.runningBy.set(rec.topic, this.runningBy.get(rec.topic)! - 1);
    };
    return {
      finish: () => {
        ended();
        return t.finish();
      },
      abandon: () => {
        ended();
        t.abandon();
      },
    };
  }

  /** Commit up to `next` (-1: nothing new is contiguous yet). */
  private commit(topic: TopicId, partition: number, next: number): void {
    if (next >= 0) this.log.commit(this.group, topic, partition, next);
  }

  /** Nothing to read, nothing running, and the stage itself has no waiting work. */
  idle(): boolean {
    if (this.inflight.running > 0 || this.hasUnread()) return false;
    return (this.stage as { idle?: () => boolean }).idle?.() ?? true;
  }

  /** Records whose handler has not returned yet (a batch stage's are running until they finish). */
  private handling(): number {
    return this.stage.handleBatch ? this.inflight.running : this.dispatcher.busy;
  }

  /**
   * Nothing it can start: no handler running, no record waiting for a slot, and nothing to read
   * or no room to read it. Whatever it has in flight waits on its pending emits (a buffered
   * WARC file): only storing that buffer moves it on.
   */
  stalled(): boolean {
    if (this.handling() > 0 || this.dispatcher.waiting > 0) return false;
    return !this.hasUnread(true);
  }

  /** Records not yet read on any input (`withRoom`: on an input with read-ahead left). */
  private hasUnread(withRoom = false): boolean {
    for (const topic of this.stage.inputs) {
      if (withRoom && (this.runningBy.get(topic) ?? 0) >= this.readAhead) continue;
      for (let p = 0; p < this.log.partitions; p++) {
        if (this.position.get(`${topic}/${p}`)! < this.log.endOffset(topic, p)) return true;
      }
    }
    return false;
  }

  /**
   * Stop: records not started are abandoned; records running finish, append and commit. close()
   * (which stores the stage's buffered WARC file) comes only once every handler has returned, or
   * stopWaitMs has passed: a handler still running (a fetch reading its response, a page in the
   * parse workers) adds its record to the buffer after close() stored it, into a file nothing
   * would store before its age limit, and the stop used to wait for it in vain. Then the records
   * waiting on what close() stored finish, within stopWaitMs again. Whatever is still running is
   * let go: its late result is neither appended nor committed, so the next reader of the group
   * (the drain after a stop, the next run) handles it once, as after a crash.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.holdTimer) clearTimeout(this.holdTimer);
    await this.ticking;
    this.dispatcher.abandonWaiting();
    await until(() => this.handling() === 0, Date.now() + this.stopWaitMs);
    // Handlers that have not returned by now get no more time.
    const stuck = this.handling();
    await this.stage.close?.();
    await until(() => this.inflight.running <= stuck, Date.now() + this.stopWaitMs);
    if (this.inflight.running > 0) {
      this.letGo = true;
      this.ctx.log.warn({ records: this.inflight.running }, 'stopped with records unfinished: left uncommitted for the next run');
    }
  }
}

/**
 * The current rows of the compacted topics stages restore from or follow (crawl.host-policy,
 * crawl.optout, …), read from the journal once and handed to every stage that asks while the
 * runner starts: the frontier, fetch, seen-test and the status page each follow
 * crawl.host-policy, and reading it for each (its segments are cleaned only once closed, at 64
 * MiB) cost a restarted `crawl run` seconds before its first request (docs/frontier-store.md).
 * Stages start one after another with nothing appended in between, so all see the same rows.
 */
export class TableReads {
  private readonly read = new Map<string, TableRecord[]>();

  constructor(private readonly log: Pick<FileLog, 'table'>) {}

  rows(topic: TopicId, partition: number): TableRecord[] {
    const key = `${topic}/${partition}`;
    let rows = this.read.get(key);
    if (!rows) this.read.set(key, (rows = this.log.table(topic, partition)));
    return rows;
  }

  clear(): void {
    this.read.clear();
  }
}

/** How often the journal's compacted topics are cleaned on disk (runtime/log-segments.ts). */
export const COMPACT_EVERY_MS = 30_000;

export class EmbeddedRunner {
  private readonly loops: StageLoop[];
  private checkpointTimer: NodeJS.Timeout | null = null;
  private compactTimer: NodeJS.Timeout | null = null;
  private readonly onAppend = (recs: readonly InRecord[]): void => {
    for (const l of this.loops) {
      l.onAppended(recs);
      // Only stages reading what was appended have anything new; once per turn however many appends.
      if (l.reads(recs)) l.schedulePump();
    }
  };

  constructor(
    private readonly log: FileLog,
    stages: readonly Stage[],
    private readonly logger: Logger,
    private readonly opts: EmbeddedRunnerOptions = {},
  ) {
    this.loops = stages.map(
      (s) =>
        new StageLoop(
          s, log, { now: Date.now, log: logger.child({ stage: s.id }) },
          opts.readAhead ?? 2048, opts.retryDelayMs ?? 1000, opts.stopWaitMs ?? DEFAULT_STOP_WAIT_MS, opts.holdWhile?.[s.id],
        ),
    );
  }

  private starting: Promise<void> | null = null;

  /**
   * Restore every stage's state (a frontier's store first), then start consuming. A stop() called
   * before this settles waits for it.
   */
  start(): Promise<void> {
    return (this.starting ??= this.begin());
  }

  private async begin(): Promise<void> {
    const tables = new TableReads(this.log);
    for (const l of this.loops) await l.start(tables);
    // Read once at the start: the rows that arrive from here on reach stages through onAppended.
    tables.clear();
    this.log.on('append', this.onAppend);
    // Nothing is appended before this: ticks start only now.
    for (const l of this.loops) l.run();
    this.checkpointTimer = setInterval(() => this.log.checkpoint(), this.opts.checkpointMs ?? DEFAULT_CHECKPOINT_MS);
    this.compactTimer = setInterval(() => {
      this.log.compact().catch((err: unknown) => this.logger.error({ err }, 'journal compaction failed'));
    }, this.opts.compactMs ?? COMPACT_EVERY_MS);
  }

  idle(): boolean {
    return this.loops.every((l) => l.idle());
  }

  /** Every stage stalled (StageLoop.stalled): what is in flight waits only on buffered files. */
  stalled(): boolean {
    return this.loops.every((l) => l.stalled());
  }

  async stop(): Promise<void> {
    await this.starting?.catch(() => undefined);
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    if (this.compactTimer) clearInterval(this.compactTimer);
    await this.log.compacting;
    // Stop upstream first so downstream stages drain what upstream emitted while stopping.
    for (const l of this.loops) await l.stop();
    this.log.off('append', this.onAppend);
    this.log.checkpoint();
  }
}
