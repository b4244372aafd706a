/**
 * A copy of a string that holds on to nothing else. V8 makes a substring of 13 characters or
 * more as a *slice* of its parent (a pointer and an offset), which keeps the whole parent alive:
 * a host name cut from a URL (lib/url-normalize.ts hostOf, the normaliser's host) kept for the
 * life of a host kept its first URL with it. In the frontier-scale benchmark's child at a million
 * hosts with work, the hosts' names held 136 MiB of the 280 MiB of live heap that way, about 140
 * bytes a host where its own copy takes about 44 (docs/frontier-store.md, Figures). Use it for
 * strings kept long (map keys, the state of a host), not for those that pass through.
 */
export function ownString(s: string): string {
  // Shorter strings are copied by V8 already. Buffer's round trip makes a flat string of its own.
  return s.length < 13 ? s : Buffer.from(s, 'utf8').toString('utf8');
}
