#!/bin/sh
':' //; n=$(nproc 2>/dev/null) || n=5; [ "$n" -ge 2 ] 2>/dev/null || n=2; [ "$n" -le 5 ] || n=5; export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"; export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-1048576}"; if [ -z "$LD_PRELOAD" ] && [ "${CRAWL_MALLOC:-jemalloc}" = jemalloc ]; then for j in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /usr/lib/aarch64-linux-gnu/libjemalloc.so.2 /usr/lib64/libjemalloc.so.2 /usr/lib/libjemalloc.so.2 /usr/local/lib/libjemalloc.so.2; do if [ -r "$j" ]; then export LD_PRELOAD="$j"; break; fi; done; fi; exec node --max-semi-space-size=32 --heap-growing-percent=50 --v8-pool-size=$((n - 1)) "$0" "$@"
'use strict';
// Line 2 is for the shell (a no-op, then exec) and a string plus a comment for JavaScript: it
// starts node with its flags on any POSIX sh, where `#!/usr/bin/env -S` would fail on BusyBox
// and older coreutils.
//  - 32 MiB semi-spaces (young generation). A crawl allocates fast (bodies, records, strings)
//    and holds pages briefly; with V8's default 16 MiB, while pages were parsed on the event
//    loop, many were promoted and collected again as old objects (`npm run bench`: 64 MiB gave
//    about 18% more pages/s then). With parsing on a worker thread, 32 MiB is as fast as 64 and
//    holds about 80 MiB less.
//  - The old generation may grow to 1.5 times what was live after the last full collection
//    (V8's own factor goes up to 4 when the program allocates fast, as a crawl does). `crawl
//    run` with 2M seeds over 100,000 hosts held 250-430 MiB of live objects and V8 let its heap
//    reach 1.2-1.6 GiB; with 50% it held 680 MiB at 80 s where it held 1,106 MiB without,
//    with no loss of requests beyond the noise of two A/B runs (docs/frontier-store.md, Figures).
//  - V8's helper threads (garbage collection) one fewer than the cores, at most Node's default
//    of 4. The event loop and the parse worker already take two threads; on 2 cores, four
//    helpers taking turns with both did worse than one (bench/HISTORY.md).
//  - MALLOC_ARENA_MAX=2 unless already set (it must be in the environment before node starts).
//    glibc gives each thread that allocates (libuv's pool doing LevelDB reads and writes,
//    LevelDB's compaction thread) an arena of its own, up to 8 per core, and each keeps the
//    memory it once held; the frontier's store held most of its C heap that way
//    (docs/frontier-store.md, Figures).
//  - MALLOC_MMAP_THRESHOLD_=1048576 unless already set: allocations of 1 MiB and more are mapped
//    on their own and unmapped when freed. glibc otherwise raises that threshold to the size of
//    each large block freed (up to 32 MiB), after which the journal's 4 MiB read windows and
//    other large Buffers come from the arenas, which keep the space (the main arena of the
//    frontier-scale benchmark's process went from about 80 to 160-235 MiB with each journal
//    cleaning pass and did not come back).
//  - jemalloc (Debian's libjemalloc2) through LD_PRELOAD where it is installed, unless LD_PRELOAD
//    is already set or CRAWL_MALLOC is not `jemalloc`. glibc keeps in its arenas what LevelDB
//    frees (blocks read, memtables written out): the frontier-scale benchmark's C heap grew about
//    40 MiB per million URLs in the table with glibc (heaptrack: 122 MiB actually in use at its
//    peak), about 14 with jemalloc, which returns freed pages to the system
//    (docs/frontier-store.md, "The C heap at 10M"). Without the library, glibc with the two
//    settings above. jemalloc's own settings are left at Debian's (10 s dirty decay, no
//    background thread, 8 arenas on 2 cores): through a 10M frontier-scale run its statistics
//    put 7-47 MiB in dirty pages, 2-19 in slack inside slabs and 6-13 in metadata (276 MiB in
//    use at the end of the intake), so decay, arena or tcache settings could give back a few
//    tens of MiB at most (docs/frontier-store.md, "The C heap outside V8").
// Run as `node bin/crawl.js`, give the flags yourself (NODE_OPTIONS takes both; set
// MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_ and LD_PRELOAD in the environment).
require('../dist/cli/main.js').main(process.argv).catch((err) => {
  process.stderr.write(`crawl: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
