/**
 * A kept frontier-scale folder (`--keep DIR`) stays as the full run left it: `--restart-only` and
 * `--rebuild-only` run on a scratch view of it, `DIR/scratch/state`, removed afterwards. Before,
 * each such run wrote into the kept folder itself: its leases' records appended to the journal's
 * open segments (crawl.urls, crawl.frontier, crawl.fetch, crawl.fetch-status), new offsets, a
 * store moved on by the leases (a rebuild replaced it), so the folder grew and every A/B run
 * started from a state the previous run had left.
 *
 * The view costs no copy of the big files: a file that is never written in place once it exists
 * is hard-linked (LevelDB's tables `*.ldb`/`*.sst`, a cleaned journal segment `*.cseg`: their
 * writers make new files and unlink old ones, which unlinks only the view's name). A journal
 * segment `*.seg` is hard-linked too but is appended to while it is the partition's last, so its
 * size is recorded in `DIR/scratch/sizes.json` and the file is cut back to it when the run ends
 * (or, if a run was killed before that, when the next one starts). Every other file (offsets,
 * checkpoints, LevelDB's write-ahead log, MANIFEST, CURRENT, LOCK and LOG) is small and is
 * copied. What the view adds of its own (the store's new tables, a rebuilt store, sorted runs)
 * goes when the view is removed.
 */
import { copyFileSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** How the view holds a kept file: its own copy, a hard link, or a hard link cut back to its size at the end. */
export type KeepHow = 'copy' | 'link' | 'append';

/** By name: a file its writers never change in place is linked, a journal segment is linked and cut back, the rest copied. */
export function keepHow(name: string): KeepHow {
  if (name.endsWith('.ldb') || name.endsWith('.sst') || name.endsWith('.cseg')) return 'link';
  if (name.endsWith('.seg')) return 'append';
  return 'copy';
}

const SIZES = 'sizes.json';

/** Cut the kept journal segments back to their sizes before a view's run and remove the view (a run killed before its end is undone here). */
export function dropScratch(dir: string): void {
  const scratch = join(dir, 'scratch');
  const sizesFile = join(scratch, SIZES);
  if (existsSync(sizesFile)) {
    const sizes = JSON.parse(readFileSync(sizesFile, 'utf8')) as Record<string, number>;
    for (const [rel, size] of Object.entries(sizes)) {
      const path = join(dir, rel);
      // Only ever shorter: what is past the recorded size is the view's appends. (Had the view's
      // process cut a torn tail off first, the cut leaves a torn tail again, which the next start cuts.)
      if (existsSync(path) && statSync(path).size > size) truncateSync(path, size);
    }
  }
  rmSync(scratch, { recursive: true, force: true });
}

/**
 * Make `DIR/scratch/state` a view of `DIR/state` (without `skip`, paths relative to `DIR/state`,
 * e.g. the store a rebuild deletes anyway) and return `DIR/scratch`, the folder to run in.
 */
export function makeScratch(dir: string, skip: string[] = []): string {
  dropScratch(dir);
  const scratch = join(dir, 'scratch');
  const from = join(dir, 'state');
  const sizes: Record<string, number> = {};
  const walk = (src: string): void => {
    const rel = relative(from, src);
    if (skip.includes(rel)) return;
    const dst = join(scratch, 'state', rel);
    if (statSync(src).isDirectory()) {
      mkdirSync(dst, { recursive: true });
      for (const name of readdirSync(src)) walk(join(src, name));
      return;
    }
    const how = keepHow(src);
    if (how === 'copy') copyFileSync(src, dst);
    else linkSync(src, dst);
    if (how === 'append') sizes[relative(dir, src)] = statSync(src).size;
  };
  mkdirSync(scratch, { recursive: true });
  walk(from);
  // Before any process runs in the view: nothing has been appended through its links yet.
  writeFileSync(join(scratch, SIZES), JSON.stringify(sizes));
  return scratch;
}
