#!/usr/bin/env node
'use strict';
require('../dist/cli/main.js').main(process.argv).catch((err) => {
  process.stderr.write(`crawl: ${err && err.message ? err.message : err}\n`);
  process.exit(1);
});
