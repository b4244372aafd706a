/**
 * crawl.fetched on the embedded log's disk without the page body. Fetch announces a page only
 * once its WARC file is stored, so by then the body is on disk already, gzipped, in that file;
 * the log's own copy was 50 KiB a page (231 MB of log against 21 MB of WARC for 4,602 pages)
 * and about 5% of the crawl's one thread in writes. In memory, parse gets the page as its gzipped
 * response record (`record_gz`, lib/fetched-body), which is not written here either; after a
 * restart the body is read back from the WARC record the message points to, when parse first
 * reads it, and checked against the message's SHA-256.
 */
import { createHash } from 'node:crypto';
import type { FetchedPageMsg } from '../lib/messages';
import { readLocalRecordSync } from '../lib/warc/read';
import type { DiskForm } from './file-log';

const EMPTY = Buffer.alloc(0);
const EMPTY_SHA256 = createHash('sha256').update(EMPTY).digest('hex');

export const fetchedWithoutBody: DiskForm = {
  toDisk(value) {
    const page = value as FetchedPageMsg;
    return page.body.length === 0 && !page.record_gz ? page : { ...page, body: EMPTY, record_gz: null };
  },
  fromDisk(value) {
    const page = value as FetchedPageMsg;
    // Written with its body (an earlier release), or empty to begin with: as it is.
    if (page.body.length > 0 || page.sha256 === EMPTY_SHA256) return page;
    const where = `${page.warc.uri} at offset ${page.warc.offset}`;
    let body: Buffer;
    try {
      const rec = readLocalRecordSync(page.warc);
      if (rec.warcHeaders.get('warc-type') !== 'response') throw new Error(`a ${rec.warcHeaders.get('warc-type')} record, not a response`);
      body = rec.payload;
    } catch (err) {
      throw new Error(`crawl.fetched: the body of ${page.url} is to be read back from ${where}, which cannot be read (${(err as Error).message}); the crawl state refers to a WARC file that is gone or damaged`);
    }
    if (createHash('sha256').update(body).digest('hex') !== page.sha256) {
      throw new Error(`crawl.fetched: the body of ${page.url} read back from ${where} does not match its SHA-256: the WARC file was changed`);
    }
    return { ...page, body };
  },
};
