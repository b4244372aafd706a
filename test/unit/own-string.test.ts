/**
 * lib/own-string.ts: a copy that holds nothing else. A host name cut from a URL is a slice of it
 * in V8 and keeps the whole URL alive; its ownString copy does not (a heap snapshot of a child
 * process tells: test/support/heap-holds.ts).
 */
import { join } from 'node:path';
import { ownString } from '../../lib/own-string';
import { heapHolds } from '../support/heap-holds';

describe('ownString', () => {
  it('gives the same text', () => {
    for (const s of ['', 'a.test', 'www.example-thirteen.com', 'xn--bcher-kva.example', 'é'.repeat(20), 'ü'.repeat(3)]) expect(ownString(s)).toBe(s);
  });

  it('a host cut from a URL keeps the URL alive; its own copy does not', () => {
    const held = heapHolds(
      { 'own-string': join(__dirname, '..', '..', 'lib', 'own-string.ts') },
      `const { ownString } = require('./own-string');
const hostOf = (u) => u.slice(8, u.indexOf('/', 8));
const kept = [];
(() => {
  kept.push(hostOf('https://www.sliced-host-kept.com/' + 'k'.repeat(300)));
  kept.push(ownString(hostOf('https://www.own-copy-kept.com/' + 'o'.repeat(300))));
})();
if (kept.join() !== 'www.sliced-host-kept.com,www.own-copy-kept.com') throw new Error(kept.join());`,
      `() => ['sliced-host-kept.com/' + 'k'.repeat(300), 'own-copy-kept.com/' + 'o'.repeat(300)]`,
    );
    // The first shows the snapshot finds a slice's parent: without it the second would prove nothing.
    expect(held).toEqual([true, false]);
  });
});
