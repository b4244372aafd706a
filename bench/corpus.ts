/**
 * The real pages the benchmark web is made of: `shared/corpus/realpages/` (66 pages saved by
 * their publishers, from mozilla/readability's test pages; its README has the cautions this
 * module and bench/real-web.ts follow).
 *
 * Which pages are templates: every .html file of at least 8 KiB but one. The 20 files under
 * 3.4 KiB are readability's test fixtures of a few hundred bytes to 3 KiB (a paragraph or two
 * written to test one rule, `base-url.html`, `rtl-1.html`, ...): no site serves pages like
 * them. `data-url-image.html` (64 KiB) is lorem ipsum around a base64 image, written for a test
 * too. That leaves 44 real pages, 12-1,593 KiB, 273 KiB on average, in English, Czech, German,
 * French, Spanish, Chinese and Japanese.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const MIN_TEMPLATE_BYTES = 8 * 1024;
/** Files of the corpus that are not real pages although big enough (see above). */
export const NOT_REAL_PAGES: readonly string[] = ['data-url-image.html'];

/**
 * The corpus folder: CRAWL_CORPUS_DIR, or `shared/corpus/realpages` beside the checkout or a
 * folder or two above it (a worktree's checkout sits deeper than main's).
 */
export function corpusDir(env: NodeJS.ProcessEnv = process.env, from = join(__dirname, '..', '..')): string {
  if (env.CRAWL_CORPUS_DIR) return env.CRAWL_CORPUS_DIR;
  for (const up of ['..', join('..', '..'), join('..', '..', '..')]) {
    const dir = resolve(from, up, 'shared', 'corpus', 'realpages');
    if (existsSync(dir)) return dir;
  }
  throw new Error(`the real-page corpus was not found (shared/corpus/realpages above ${resolve(from)}); set CRAWL_CORPUS_DIR`);
}

export interface CorpusPage {
  name: string;
  html: string;
}

/** The template pages, by name. */
export function templatePages(dir = corpusDir()): CorpusPage[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.html') && !NOT_REAL_PAGES.includes(f) && statSync(join(dir, f)).size >= MIN_TEMPLATE_BYTES)
    .sort()
    .map((name) => ({ name, html: readFileSync(join(dir, name), 'utf8') }));
}

/** Every page of the corpus, readability's small test fixtures included (#35's SimHash target is "every page"). */
export function corpusPages(dir = corpusDir()): CorpusPage[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.html'))
    .sort()
    .map((name) => ({ name, html: readFileSync(join(dir, name), 'utf8') }));
}
