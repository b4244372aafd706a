#!/usr/bin/env -S node --max-semi-space-size=64
'use strict';
// The flag on the line above: a 64 MiB young generation. A crawl allocates fast (bodies,
// records, strings) and holds pages briefly; with V8's default 16 MiB most of them were
// promoted and collected again as old objects. `npm run bench` measured about 18% more pages/s
// for 12% less CPU per page (README "Performance"). Run through `node bin/crawl.js`, pass it
// yourself, or set NODE_OPTIONS=--max-semi-space-size=64.
require('../dist/cli/main.js').main(process.argv).catch((err) => {
  process.stderr.write(`crawl: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
