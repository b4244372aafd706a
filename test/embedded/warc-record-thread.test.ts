/**
 * The WARC record thread (lib/warc/record-thread.ts) over its compiled script (dist/, as
 * `crawl run` uses it): records built there are those built on the calling thread, byte for byte
 * in their gzip members, and a writer using it stores every entry, in order, each record naming
 * its own file's warcinfo record, across rotations, a ring too small for a body, and a thread
 * that has ended.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { LocalPageStore } from '../../connectors/page-store-local';
import { gzipMember } from '../../lib/warc/gzip-member';
import { parseWarcRecord, readLocalRecordSync } from '../../lib/warc/read';
import { DEFAULT_GZIP_LEVEL } from '../../lib/warc/record';
import { entryRecords } from '../../lib/warc/record-job';
import { RecordThread } from '../../lib/warc/record-thread';
import { WarcWriter, type WarcEntry, type WarcPointer } from '../../lib/warc/writer';
import { capture } from '../unit/warc-fixtures';

const ROOT = join(__dirname, '..', '..');
const WORKER = join(ROOT, 'dist', 'lib', 'warc', 'record-worker.js');
const CORPUS = process.env.CRAWL_CORPUS_DIR ?? join(ROOT, '..', '..', 'shared', 'corpus', 'realpages');

/** A real page (the corpus's, when it is there) as a capture whose body came in three chunks. */
function realCapture(n: number): ReturnType<typeof capture> {
  const names = existsSync(CORPUS) ? readdirSync(CORPUS).filter((f) => f.endsWith('.html')).sort() : [];
  const html = names.length ? readFileSync(join(CORPUS, names[n % names.length])) : Buffer.from(`<html><body>${'<p>words and more words</p>'.repeat(4000)}</body></html>`);
  const body = Buffer.concat([html, Buffer.from(`<!-- ${n} -->`)]);
  const a = Math.floor(body.length / 3);
  return capture(`http://site${n}.test/page/${n}`, { body, bodyParts: [body.subarray(0, a), body.subarray(a, 2 * a), body.subarray(2 * a)] });
}

const RECORD_ID = /<urn:uuid:[0-9a-f-]{36}>/g;

let dir: string;
const threads: RecordThread[] = [];
beforeAll(() => {
  if (!existsSync(WORKER)) throw new Error(`${WORKER} missing: build first (npx tsc -p tsconfig.json)`);
});
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'warc-thread-'));
});
afterEach(async () => {
  await Promise.all(threads.splice(0).map((t) => t.close()));
  await rm(dir, { recursive: true, force: true });
});
function thread(ringBytes?: number): RecordThread {
  const t = new RecordThread(WORKER, ringBytes);
  threads.push(t);
  return t;
}

describe('the WARC record thread', () => {
  test('a page\'s records built on the thread are the calling thread\'s: same record bytes, same gzip members', async () => {
    const t = thread();
    const ctx = { warcinfoId: '<urn:uuid:00000000-0000-4000-8000-000000000001>', gzipLevel: DEFAULT_GZIP_LEVEL };
    const entries: WarcEntry[] = [
      { type: 'exchange', capture: realCapture(1), payloadSha256: null },
      { type: 'exchange', capture: realCapture(2) },
      { type: 'revisit', capture: realCapture(3), profile: 'identical-payload-digest', refersToTargetUri: 'http://site3.test/', refersToDate: new Date(0) },
      { type: 'metadata', targetUri: 'http://x.test/a.pdf', fields: [['content-type', 'application/pdf']] },
      { type: 'conversion', targetUri: 'http://x.test/', text: 'text as a string, ünïcode', refersTo: '<urn:uuid:x>' },
      { type: 'conversion', targetUri: 'http://x.test/', text: Buffer.from('text as its bytes, ünïcode'), refersTo: '<urn:uuid:x>' },
    ];
    for (const e of entries) {
      const there = await t.build(e, ctx);
      const here = entryRecords(e, ctx);
      expect(there.warcinfoId).toBe(ctx.warcinfoId);
      expect(there.main).toBe(here.main);
      expect(there.records.map((r) => [r.type, r.targetUri, r.date.getTime(), r.index])).toEqual(here.records.map((r) => [r.type, r.targetUri, r.date.getTime(), r.index]));
      for (let i = 0; i < here.records.length; i++) {
        const plainThere = gunzipSync(there.records[i].gz);
        // The record IDs are random on either side: the rest of the record is the same bytes.
        const ids = plainThere.toString('latin1').match(RECORD_ID) ?? [];
        let plainHere = gunzipSync(here.records[i].gz).toString('latin1');
        const hereIds = plainHere.match(RECORD_ID) ?? [];
        expect(hereIds.length).toBe(ids.length);
        hereIds.forEach((id, k) => (plainHere = plainHere.split(id).join(ids[k])));
        expect(plainThere.equals(Buffer.from(plainHere, 'latin1'))).toBe(true);
        // And the member is the one this thread makes of those bytes.
        expect(Buffer.compare(there.records[i].gz, gzipMember([plainThere], DEFAULT_GZIP_LEVEL))).toBe(0);
      }
    }
    expect(t.inFlight).toBe(0);
  });

  test('a writer on the thread stores every entry in order, each record naming its own file\'s warcinfo, across rotations and a full ring', async () => {
    // A ring of 600 KB holds two or three of these pages: the rest go in copies of their own.
    const w = new WarcWriter({ store: new LocalPageStore(dir), prefix: 't', maxRecords: 7, recordBuilder: thread(600_000) });
    const appended: Array<Promise<WarcPointer>> = [];
    const urls: string[] = [];
    for (let n = 0; n < 60; n++) {
      const c = realCapture(n);
      urls.push(c.url);
      appended.push(w.append({ type: 'exchange', capture: c }));
      if (n % 4 === 0) {
        urls.push(`text:${n}`);
        appended.push(w.append({ type: 'conversion', targetUri: `text:${n}`, text: n % 8 ? `text ${n}` : Buffer.from(`bytes ${n}`), refersTo: '<urn:uuid:x>' }));
      }
    }
    const ptrs = await Promise.all(appended);
    await w.close();
    ptrs.forEach((p, i) => expect(readLocalRecordSync(p).warcHeaders.get('warc-target-uri')).toBe(urls[i]));
    const files = readdirSync(join(dir, 'warc')).filter((f) => f.endsWith('.warc.gz')).sort();
    expect(files.length).toBeGreaterThan(10);
    const order: string[] = [];
    for (const f of files) {
      const whole = gunzipSync(readFileSync(join(dir, 'warc', f)));
      const records = whole.toString('latin1').split(/(?=WARC\/1\.1\r\n)/).map((r) => parseWarcRecord(Buffer.from(r, 'latin1')));
      expect(records[0].warcHeaders.get('warc-type')).toBe('warcinfo');
      const info = records[0].warcHeaders.get('warc-record-id');
      for (const r of records.slice(1)) {
        expect(r.warcHeaders.get('warc-warcinfo-id')).toBe(info);
        if (r.warcHeaders.get('warc-type') !== 'request') order.push(r.warcHeaders.get('warc-target-uri')!);
      }
    }
    expect(order).toEqual(urls);
  });

  test('entries whose thread has ended are built on the calling thread, none lost', async () => {
    const t = thread();
    const w = new WarcWriter({ store: new LocalPageStore(dir), prefix: 't', maxRecords: 5, recordBuilder: t });
    const first = [0, 1, 2].map((n) => w.append({ type: 'exchange', capture: realCapture(n) }));
    const ending = t.close();
    const later = [3, 4, 5].map((n) => w.append({ type: 'exchange', capture: realCapture(n) }));
    await ending;
    const ptrs = await Promise.all([...first, ...later]);
    await w.close();
    ptrs.forEach((p, i) => expect(readLocalRecordSync(p).warcHeaders.get('warc-target-uri')).toBe(`http://site${i}.test/page/${i}`));
  });
});
