/**
 * runtime/shutdown.ts: stop steps bounded by a deadline, and the process's stop signals (the
 * first starts the orderly stop, a second or the bound exits at once).
 */
import { EventEmitter } from 'node:events';
import pino from 'pino';
import { Deadline, stopSignals } from '../../runtime/shutdown';

function capture(): { log: pino.Logger; msgs: string[] } {
  const msgs: string[] = [];
  const log = pino({ level: 'info' }, { write: (s: string) => void msgs.push((JSON.parse(s) as { msg: string }).msg) });
  return { log, msgs };
}

const never = (): Promise<void> => new Promise<void>(() => undefined);

describe('Deadline.step', () => {
  it('waits for a step that finishes, and a failed step counts as finished (logged)', async () => {
    const { log, msgs } = capture();
    const d = Deadline.in(1000);
    expect(await d.step('quick', async () => undefined, log)).toBe(true);
    expect(await d.step('broken', async () => Promise.reject(new Error('boom')), log)).toBe(true);
    expect(msgs).toEqual(['stop step failed']);
  });

  it('stops waiting at the deadline less what is kept for later steps', async () => {
    const { log, msgs } = capture();
    const d = Deadline.in(2000);
    const t0 = Date.now();
    expect(await d.step('hung', never, log, 1500)).toBe(false);
    const waited = Date.now() - t0;
    expect(waited).toBeGreaterThanOrEqual(450);
    expect(waited).toBeLessThan(1900); // not into the 1.5 s kept
    expect(msgs).toEqual(['stop step cut short by the stop bound']);
    // The time kept is still there for the next step, and nothing after the deadline.
    expect(await d.step('quick', async () => undefined, log)).toBe(true);
    const late = new Deadline(Date.now() - 1);
    expect(late.left()).toBe(0);
    expect(await late.step('hung', never, log)).toBe(false);
  });
});

describe('stopSignals', () => {
  it('the first signal starts the stop; a second one exits at once with 1', async () => {
    const { log } = capture();
    const proc = new EventEmitter();
    const exits: number[] = [];
    const s = stopSignals(log, 10_000, (c) => exits.push(c), proc);
    proc.emit('SIGTERM', 'SIGTERM');
    expect(await s.requested).toBe('SIGTERM');
    expect(exits).toEqual([]);
    proc.emit('SIGINT', 'SIGINT');
    expect(exits).toEqual([1]);
    s.finish(true); // clears the bound
  });

  it('the bound, counted from the first signal, exits with 1 when the stop takes too long; finishing in time exits 0 (or 1 if cut short)', async () => {
    const { log, msgs } = capture();
    const proc = new EventEmitter();
    const exits: number[] = [];
    stopSignals(log, 50, (c) => exits.push(c), proc);
    await new Promise((r) => setTimeout(r, 120));
    expect(exits).toEqual([]); // no signal, no bound
    proc.emit('SIGTERM', 'SIGTERM'); // e.g. still starting, the brokers away: nobody calls finish
    await new Promise((r) => setTimeout(r, 120));
    expect(exits).toEqual([1]);
    expect(msgs).toContain('stop bound reached: exiting now; unfinished records stay uncommitted for the next owner');

    const other = new EventEmitter();
    const t = stopSignals(log, 50, (c) => exits.push(c), other);
    other.emit('SIGINT', 'SIGINT');
    t.finish(true);
    const u = stopSignals(log, 50, (c) => exits.push(c), new EventEmitter());
    u.finish(false);
    await new Promise((r) => setTimeout(r, 100));
    expect(exits).toEqual([1, 0, 1]);
  });
});
