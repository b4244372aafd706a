#!/bin/sh
':' //; exec node --max-semi-space-size=32 "$0" "$@"
'use strict';
// Line 2 is for the shell (a no-op, then exec) and a string plus a comment for JavaScript: it
// starts node with 32 MiB semi-spaces (young generation) on any POSIX sh, where
// `#!/usr/bin/env -S` would fail on BusyBox and older coreutils. A crawl allocates fast (bodies,
// records, strings) and holds pages briefly; with V8's default 16 MiB, while pages were parsed
// on the event loop, many were promoted and collected again as old objects (`npm run bench`:
// 64 MiB gave about 18% more pages/s then). With parsing on a worker thread, 32 MiB is as fast
// as 64 and holds about 80 MiB less (README "Performance"). Run as `node bin/crawl.js`, give
// the flag yourself or set NODE_OPTIONS=--max-semi-space-size=32.
require('../dist/cli/main.js').main(process.argv).catch((err) => {
  process.stderr.write(`crawl: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
