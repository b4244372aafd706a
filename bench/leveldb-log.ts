/**
 * What LevelDB 1.20 wrote, from its `LOG` (its info log, one per database, started afresh at
 * each open): bytes flushed from memtables into level 0, bytes each level's compactions wrote
 * into the level below, how many of level 0's compactions took a single file (seek
 * compactions: docs/frontier-store.md, "Seek compactions"), and the writes that waited. Pure.
 */

export interface LevelDbWrites {
  /** Memtables flushed to level-0 tables, and their bytes. */
  flushes: number;
  flushedBytes: number;
  /** By source level (index 0: level 0 into level 1, ...): compactions and the bytes they wrote. */
  compactions: number[];
  compactedBytes: number[];
  /** Level-0 compactions that took one level-0 file. */
  singleFileL0: number;
  /** Files moved down a level without being rewritten. */
  moves: number;
  /** Writes that waited on a full memtable, and on too many level-0 files. */
  memtableWaits: number;
  l0Waits: number;
}

export function emptyWrites(): LevelDbWrites {
  return { flushes: 0, flushedBytes: 0, compactions: [], compactedBytes: [], singleFileL0: 0, moves: 0, memtableWaits: 0, l0Waits: 0 };
}

const FLUSH = /Level-0 table #\d+: (\d+) bytes/;
const COMPACTED = /Compacted (\d+)@(\d+) \+ \d+@\d+ files => (\d+) bytes/;

/** Add one LOG's lines to `into` (several stores' LOGs summed). */
export function addLevelDbLog(text: string, into: LevelDbWrites = emptyWrites()): LevelDbWrites {
  for (const line of text.split('\n')) {
    let m = FLUSH.exec(line);
    if (m) {
      into.flushes++;
      into.flushedBytes += Number(m[1]);
      continue;
    }
    m = COMPACTED.exec(line);
    if (m) {
      const level = Number(m[2]);
      while (into.compactions.length <= level) {
        into.compactions.push(0);
        into.compactedBytes.push(0);
      }
      into.compactions[level]++;
      into.compactedBytes[level] += Number(m[3]);
      if (level === 0 && m[1] === '1') into.singleFileL0++;
      continue;
    }
    if (line.includes('Moved #')) into.moves++;
    else if (line.includes('Current memtable full; waiting')) into.memtableWaits++;
    else if (line.includes('Too many L0 files; waiting')) into.l0Waits++;
  }
  return into;
}

const mb = (b: number): string => `${(b / 1e6).toFixed(0)} MB`;

/** One line: flushed, written by level, bytes written a byte flushed, the waits. */
export function describeWrites(w: LevelDbWrites): string {
  const compacted = w.compactedBytes.reduce((a, b) => a + b, 0);
  const levels = w.compactedBytes.map((b, l) => `${l}->${l + 1} ${mb(b)} (${w.compactions[l]}${l === 0 ? `, ${w.singleFileL0} of one file` : ''})`);
  const amp = w.flushedBytes > 0 ? ((w.flushedBytes + compacted) / w.flushedBytes).toFixed(1) : '-';
  return `flushed ${mb(w.flushedBytes)} in ${w.flushes} memtables; compactions wrote ${mb(compacted)}: ${levels.join(', ') || 'none'}; ${amp} bytes written a byte flushed; ${w.moves} files moved; writes waited on a full memtable ${w.memtableWaits}, on level 0 ${w.l0Waits} times`;
}
