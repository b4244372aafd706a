/**
 * bench/frontier-scale-keep.ts: `--restart-only` / `--rebuild-only` run in a scratch view of the
 * kept folder, and the kept folder ends as it began (sizes and bytes), whatever the view's
 * process appended, rewrote or deleted.
 */
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { dropScratch, keepHow, makeScratch } from '../../bench/frontier-scale-keep';

/** Every file under `root`, by path relative to it, with its bytes. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out[relative(root, p)] = readFileSync(p, 'latin1');
    }
  };
  walk(root);
  return out;
}

/** A kept run's layout in miniature: journal segments, offsets, a LevelDB store and its checkpoint. */
function keptRun(): string {
  const dir = mkdtempSync(join(tmpdir(), 'fs-keep-'));
  const s = join(dir, 'state');
  mkdirSync(join(s, 'topics', 'crawl.urls', '0'), { recursive: true });
  writeFileSync(join(s, 'topics', 'crawl.urls', '0', '00000000000000000000-00000000000000000100.cseg'), 'cleaned');
  writeFileSync(join(s, 'topics', 'crawl.urls', '0', '00000000000000000100.seg'), 'open segment');
  mkdirSync(join(s, 'offsets'), { recursive: true });
  writeFileSync(join(s, 'offsets', 'crawl.frontier.json'), '{"a":1}');
  writeFileSync(join(s, 'offsets', 'crawl.frontier.log'), 'commits');
  mkdirSync(join(s, 'frontier', 'urls-0'), { recursive: true });
  writeFileSync(join(s, 'frontier', 'urls-0', '000005.ldb'), 'table');
  writeFileSync(join(s, 'frontier', 'urls-0', '000007.log'), 'wal');
  writeFileSync(join(s, 'frontier', 'urls-0', 'MANIFEST-000006'), 'manifest');
  writeFileSync(join(s, 'frontier', 'urls-0.checkpoint.json'), '{"offset":100}');
  return dir;
}

/** What the view's process does to its files, as the frontier child does to the real ones. */
function runIn(scratch: string): void {
  const s = join(scratch, 'state');
  appendFileSync(join(s, 'topics', 'crawl.urls', '0', '00000000000000000100.seg'), ' + leases');
  writeFileSync(join(s, 'topics', 'crawl.urls', '0', '00000000000000000120.seg'), 'next segment');
  appendFileSync(join(s, 'offsets', 'crawl.frontier.log'), ' + more');
  writeFileSync(join(s, 'offsets', 'crawl.frontier.json'), '{"a":2}');
  appendFileSync(join(s, 'frontier', 'urls-0', '000007.log'), ' + writes');
  appendFileSync(join(s, 'frontier', 'urls-0', 'MANIFEST-000006'), ' + edits');
  unlinkSync(join(s, 'frontier', 'urls-0', '000005.ldb'));
  writeFileSync(join(s, 'frontier', 'urls-0', '000009.ldb'), 'compacted');
}

describe('frontier-scale kept folder', () => {
  it('links the files never written in place, links and cuts back journal segments, copies the rest', () => {
    expect(keepHow('000005.ldb')).toBe('link');
    expect(keepHow('000005.sst')).toBe('link');
    expect(keepHow('00000000000000000000-00000000000000000100.cseg')).toBe('link');
    expect(keepHow('00000000000000000100.seg')).toBe('append');
    for (const name of ['000007.log', 'MANIFEST-000006', 'CURRENT', 'LOCK', 'LOG', 'crawl.frontier.json', 'crawl.frontier.log', 'urls-0.checkpoint.json']) expect(keepHow(name)).toBe('copy');
  });

  it('a run in the view leaves the kept folder as it was', () => {
    const dir = keptRun();
    const before = snapshot(join(dir, 'state'));
    const scratch = makeScratch(dir);
    expect(snapshot(join(scratch, 'state'))).toEqual(before);
    runIn(scratch);
    // The segment's appends went through the link into the kept file: cut back below.
    expect(readFileSync(join(dir, 'state', 'topics', 'crawl.urls', '0', '00000000000000000100.seg'), 'utf8')).toBe('open segment + leases');
    dropScratch(dir);
    expect(existsSync(scratch)).toBe(false);
    expect(snapshot(join(dir, 'state'))).toEqual(before);
    rmSync(dir, { recursive: true });
  });

  it('a run killed before its end is undone when the next view is made', () => {
    const dir = keptRun();
    const before = snapshot(join(dir, 'state'));
    runIn(makeScratch(dir));
    const scratch = makeScratch(dir);
    expect(snapshot(join(scratch, 'state'))).toEqual(before);
    dropScratch(dir);
    expect(snapshot(join(dir, 'state'))).toEqual(before);
    rmSync(dir, { recursive: true });
  });

  it('leaves out what it is told to skip (the store a rebuild deletes)', () => {
    const dir = keptRun();
    const scratch = makeScratch(dir, ['frontier']);
    expect(existsSync(join(scratch, 'state', 'frontier'))).toBe(false);
    expect(existsSync(join(scratch, 'state', 'topics', 'crawl.urls', '0', '00000000000000000100.seg'))).toBe(true);
    dropScratch(dir);
    rmSync(dir, { recursive: true });
  });
});
