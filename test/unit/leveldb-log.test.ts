import { addLevelDbLog, describeWrites, emptyWrites } from '../../bench/leveldb-log';

// Lines as LevelDB 1.20 writes them (the frontier-scale benchmark's store LOGs), with others between.
const LOG_A = [
  '2026/12/07-07:59:19.388000 7fe35e1ff6c0 Level-0 table #5: started',
  '2026/12/07-07:59:19.389019 7fe35e1ff6c0 Level-0 table #5: 231 bytes OK',
  '2026/12/07-07:59:24.744569 7fe35e1ff6c0 Level-0 table #7: 16790184 bytes OK',
  '2026/12/07-07:59:24.800000 7fe35e1ff6c0 Compacting 1@0 + 3@1 files',
  '2026/12/07-07:59:24.895537 7fe35e1ff6c0 Compacted 1@0 + 3@1 files => 20000000 bytes',
  '2026/12/07-07:59:30.245595 7fe35e1ff6c0 Compacted 1@1 + 8@2 files => 32956640 bytes',
  '2026/12/07-07:59:31.000000 7fe35e1ff6c0 Moved #12 to level-2 1048576 bytes OK: files[ 0 0 3 0 0 0 0 ]',
  '2026/12/07-07:59:32.000000 7fe35e1ff6c0 Current memtable full; waiting...',
  '2026/12/07-07:59:33.000000 7fe35e1ff6c0 Delete type=2 #7',
].join('\n');
const LOG_B = [
  '2026/12/07-08:00:00.000000 7fe35e1ff6c0 Level-0 table #9: 1000 bytes OK',
  '2026/12/07-08:00:01.000000 7fe35e1ff6c0 Compacted 4@0 + 10@1 files => 5000 bytes',
  '2026/12/07-08:00:02.000000 7fe35e1ff6c0 Compacted 1@3 + 11@4 files => 7000 bytes',
  '2026/12/07-08:00:03.000000 7fe35e1ff6c0 Too many L0 files; waiting...',
].join('\n');

test('sums flushes, compactions by source level, single-file level-0 compactions, moves and waits over several LOGs', () => {
  const w = addLevelDbLog(LOG_B, addLevelDbLog(LOG_A));
  expect(w.flushes).toBe(3);
  expect(w.flushedBytes).toBe(231 + 16790184 + 1000);
  expect(w.compactions).toEqual([2, 1, 0, 1]);
  expect(w.compactedBytes).toEqual([20000000 + 5000, 32956640, 0, 7000]);
  expect(w.singleFileL0).toBe(1);
  expect(w.moves).toBe(1);
  expect(w.memtableWaits).toBe(1);
  expect(w.l0Waits).toBe(1);
});

test('describes bytes written a byte flushed', () => {
  const w = addLevelDbLog('x Level-0 table #5: 1000000 bytes OK\nx Compacted 1@0 + 1@1 files => 3000000 bytes\n');
  expect(describeWrites(w)).toBe(
    'flushed 1 MB in 1 memtables; compactions wrote 3 MB: 0->1 3 MB (1, 1 of one file); 4.0 bytes written a byte flushed; 0 files moved; writes waited on a full memtable 0, on level 0 0 times',
  );
  expect(describeWrites(emptyWrites())).toContain('compactions wrote 0 MB: none; - bytes written');
});
