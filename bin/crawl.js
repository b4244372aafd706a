#!/bin/sh
':' //; exec node --max-semi-space-size=64 "$0" "$@"
'use strict';
// Line 2 is for the shell (a no-op, then exec) and a string plus a comment for JavaScript: it
// starts node with a 64 MiB young generation on any POSIX sh, where `#!/usr/bin/env -S` would
// fail on BusyBox and older coreutils. A crawl allocates fast (bodies, records, strings) and
// holds pages briefly; with V8's default 16 MiB many of them were promoted and collected again
// as old objects. `npm run bench` measured about 18% more pages/s for 12% less CPU per page
// (README "Performance"). Run as `node bin/crawl.js`, give the flag yourself or set
// NODE_OPTIONS=--max-semi-space-size=64.
require('../dist/cli/main.js').main(process.argv).catch((err) => {
  process.stderr.write(`crawl: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
