/**
 * crawl.fetched on the embedded log's disk without the page body. Fetch announces a page only
 * once its WARC file is stored, so by then the body is on disk already, gzipped, in that file;
 * the log's own copy was 50 KiB a page (231 MB of log against 21 MB of WARC for 4,602 pages)
 * and about 5% of the crawl's one thread in writes. In memory, parse gets the page as its gzipped
 * response record (`record_gz`, lib/fetched-body), which is not written here either; after a
 * restart the body is read back from the WARC record the message points to, when parse first
 * reads it, and checked against the message's SHA-256.
 */
import { bodyGone, readBackBody } from '../lib/fetched-body';
import type { FetchedPageMsg } from '../lib/messages';
import type { DiskForm } from './file-log';

const EMPTY = Buffer.alloc(0);

export const fetchedWithoutBody: DiskForm = {
  toDisk(value) {
    const page = value as FetchedPageMsg;
    return page.body.length === 0 && !page.record_gz ? page : { ...page, body: EMPTY, record_gz: null };
  },
  fromDisk(value) {
    const page = value as FetchedPageMsg;
    // Written with its body (an earlier release), or empty to begin with: as it is.
    return bodyGone(page) ? { ...page, body: readBackBody(page) } : page;
  },
};
