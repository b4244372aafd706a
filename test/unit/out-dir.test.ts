/** crawl run's --out check (cli/out-dir.ts): made when missing, refused with a plain reason otherwise. */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { outDirError, prepareOutDir } from '../../cli/out-dir';

describe('prepareOutDir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcrawl-out-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('makes a missing folder (parents too) and accepts an existing one', () => {
    const out = join(dir, 'a', 'b');
    prepareOutDir(out);
    expect(statSync(out).isDirectory()).toBe(true);
    expect(() => prepareOutDir(out)).not.toThrow();
  });

  it('names --out and says a file is in the way', () => {
    const file = join(dir, 'afile');
    writeFileSync(file, 'x');
    expect(() => prepareOutDir(file)).toThrow(`--out ${file}: cannot keep the crawl there: a file is in the way (it must be a folder, or not exist yet) (EEXIST)`);
    expect(() => prepareOutDir(join(file, 'sub'))).toThrow(/^--out .*afile\/sub: cannot keep the crawl there: a file is in the way .*\(ENOTDIR\)$/);
  });

  it('says why for a folder it may not write to (the codes root never meets)', () => {
    expect(outDirError('/srv/c', { code: 'EACCES', message: 'x' })).toBe('--out /srv/c: cannot keep the crawl there: this user may not write there (EACCES)');
    expect(outDirError('/srv/c', { code: 'EROFS', message: 'x' })).toBe('--out /srv/c: cannot keep the crawl there: it is on a read-only file system (EROFS)');
    expect(outDirError('/srv/c', { code: undefined, message: 'something else' })).toBe('--out /srv/c: cannot keep the crawl there: something else');
  });
});
