/**
 * Lets metrics and status views see what a stage emits without the stage knowing: wraps
 * handle() and hands every emitted record to `see` once the handler has produced it (early
 * emits at once, pending ones when they resolve). Emits pass through unchanged.
 */
import type { HandleResult, OutRecord, Stage } from './stage';

export function observeEmits(stage: Stage, see: (out: OutRecord) => void): Stage {
  const tap = (outs: OutRecord[]): OutRecord[] => {
    for (const o of outs) {
      try {
        see(o);
      } catch {
        // An observer must never fail the record it watches.
      }
    }
    return outs;
  };
  return {
    ...stage,
    async handle(rec, ctx): Promise<HandleResult> {
      const r = await stage.handle(rec, ctx);
      if (Array.isArray(r)) return tap(r);
      return { early: r.early ? tap(r.early) : undefined, pending: r.pending.then(tap) };
    },
  };
}
