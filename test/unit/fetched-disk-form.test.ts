/**
 * The embedded log keeps crawl.fetched on disk without the body (runtime/fetched-disk-form.ts):
 * a real WARC file on local disk holds it, and a log reopened after a "restart" reads it back
 * from there, checked against the page's SHA-256.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { LocalPageStore } from '../../connectors/page-store-local';
import type { FetchedPageMsg } from '../../lib/messages';
import { partitionForHost } from '../../lib/partitioner';
import { WarcWriter } from '../../lib/warc/writer';
import { fetchedWithoutBody } from '../../runtime/fetched-disk-form';
import { FileLog } from '../../runtime/file-log';
import { topics } from '../../topologies/crawl';
import { capture } from './warc-fixtures';

const P = 4;

describe('crawl.fetched on disk without its body', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'fetched-form-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** n pages stored in one WARC file; `label` goes into every body. */
  async function storedPages(n: number, label = 'page'): Promise<FetchedPageMsg[]> {
    const warc = new WarcWriter({ store: new LocalPageStore(dir), prefix: 'test' });
    const bodies = Array.from({ length: n }, (_, i) => Buffer.from(`<html><body>${'x'.repeat(40_000 + i)} ${label} ${i}</body></html>`));
    // An append resolves once its file is stored: all of them, then the flush that stores it.
    const ptrs = bodies.map((body, i) => warc.append({ type: 'exchange', capture: capture(`http://a.test/p${i}`, { body }), payloadSha256: createHash('sha256').update(body).digest('hex') }));
    await warc.flush();
    const pages: FetchedPageMsg[] = [];
    for (let i = 0; i < n; i++) {
      const url = `http://a.test/p${i}`;
      const body = bodies[i]!;
      const sha256 = createHash('sha256').update(body).digest('hex');
      const ptr = await ptrs[i]!;
      pages.push({
        url, final_url: url, host: 'a.test', depth: 1, fetched_at: 1, http_status: 200, content_type: 'text/html', body, truncated: false, sha256,
        prev_sha256: null, warc: { uri: ptr.uri, offset: ptr.offset, length: ptr.length }, x_robots_tag: null, record_id: ptr.recordId, priority: null, record_gz: null,
      });
    }
    return pages;
  }

  const newLog = (): FileLog => new FileLog({ dir: join(dir, 'state'), partitions: P, diskForms: { fetched: fetchedWithoutBody } });
  const p = partitionForHost('a.test', P);
  const segBytes = (): number => {
    const d = join(dir, 'state', 'topics', topics.fetched.name, String(p));
    return readdirSync(d).reduce((n, f) => n + statSync(join(d, f)).size, 0);
  };

  it('writes no body, keeps it in memory, and reads it back from the WARC file after a reopen', async () => {
    const pages = await storedPages(3);
    const log = newLog();
    log.append(pages.map((page) => ({ topic: 'fetched' as const, key: 'a.test', host: 'a.test', value: page })));
    log.flush();
    expect(log.read('fetched', p, 0, 10).map((r) => r.value)).toEqual(pages);
    expect(segBytes()).toBeLessThan(3 * 2000); // three bodies of 40 KB would be 120 KB
    log.close();
    const again = newLog();
    expect(again.read('fetched', p, 0, 10).map((r) => r.value)).toEqual(pages);
    again.close();
  });

  it('refuses, with the WARC named, a body that is gone or was changed', async () => {
    const [page] = await storedPages(1);
    const log = newLog();
    log.append([{ topic: 'fetched', key: 'a.test', host: 'a.test', value: page! }]);
    log.close();
    const file = fileURLToPath(page!.warc.uri);
    const original = readFileSync(file);
    // Another file in its place, whose record at that offset holds another body (with the same
    // body, a file laid out alike would hold the very same record, and rightly be read).
    const [other] = await storedPages(1, 'other');
    writeFileSync(file, readFileSync(fileURLToPath(other!.warc.uri)));
    expect(() => newLog().read('fetched', p, 0, 10)).toThrow(/does not match its SHA-256|cannot be read/);
    rmSync(file);
    expect(() => newLog().read('fetched', p, 0, 10)).toThrow(new RegExp(`${page!.url}.*cannot be read`));
    writeFileSync(file, original);
    expect((newLog().read('fetched', p, 0, 10)[0]!.value as FetchedPageMsg).body).toEqual(page!.body);
  });
});
