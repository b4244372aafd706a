/**
 * The top frames of a `node --cpu-prof` profile, by self time and by total (inclusive) time,
 * grouped by function and file, so a report can name where CPU per page goes.
 *
 *   node dist/bench/profile-top.js <file.cpuprofile> [rows]
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

export interface FrameTime {
  frame: string;
  selfMs: number;
  totalMs: number;
}

function frameName(n: ProfileNode): string {
  const url = n.callFrame.url.replace(/^.*\/(node_modules\/)/, '$1').replace(/^.*\/work\/main\//, '').replace(/^file:\/\//, '');
  return `${n.callFrame.functionName || '(anonymous)'} ${url ? `${url}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
}

/** Self and inclusive ms per frame name (a recursive frame counts once per sample). */
export function topFrames(p: Profile): FrameTime[] {
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  for (let i = 0; i < p.samples.length; i++) {
    const ms = (p.timeDeltas[i] ?? 0) / 1000;
    let id: number | undefined = p.samples[i];
    const name = frameName(byId.get(id!)!);
    self.set(name, (self.get(name) ?? 0) + ms);
    const seen = new Set<string>();
    while (id !== undefined) {
      const f = frameName(byId.get(id)!);
      if (!seen.has(f)) {
        seen.add(f);
        total.set(f, (total.get(f) ?? 0) + ms);
      }
      id = parent.get(id);
    }
  }
  return [...total].map(([frame, totalMs]) => ({ frame, totalMs, selfMs: self.get(frame) ?? 0 }));
}

function main(): void {
  const p = JSON.parse(readFileSync(process.argv[2]!, 'utf8')) as Profile;
  const rows = Number(process.argv[3] ?? 30);
  const frames = topFrames(p);
  const all = p.timeDeltas.reduce((a, b) => a + b, 0) / 1000;
  const idle = frames.find((f) => f.frame.startsWith('(idle)'))?.selfMs ?? 0;
  console.log(`profile: ${(all / 1000).toFixed(1)} s, busy ${((all - idle) / 1000).toFixed(1)} s`);
  const pct = (ms: number): string => `${((100 * ms) / (all - idle)).toFixed(1)}%`.padStart(6);
  console.log('\nby self time (% of busy):');
  for (const f of [...frames].sort((a, b) => b.selfMs - a.selfMs).slice(0, rows)) console.log(`${pct(f.selfMs)}  ${f.frame}`);
  console.log('\nby total time (% of busy):');
  for (const f of [...frames].sort((a, b) => b.totalMs - a.totalMs).slice(0, rows)) console.log(`${pct(f.totalMs)}  ${f.frame}`);
}

if (require.main === module) main();
