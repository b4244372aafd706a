/**
 * A WARC file built by us, stored by LocalPageStore, read back by an independent reader
 * (warcio.js). warcio does not verify digests when reading, so the test recomputes them from
 * the blocks and payloads warcio parsed out.
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { CDXIndexer, WARCParser, type WARCRecord as ParsedRecord } from 'warcio';
import { LocalPageStore } from '../../connectors/page-store-local';
import { WarcFileBuilder, type RecordSpan } from '../../lib/warc/file-builder';
import {
  conversionRecord,
  exchangeRecords,
  metadataRecord,
  revisitRecord,
  type WarcRecord,
} from '../../lib/warc/record';
import { BINARY_BODY, capture } from './warc-fixtures';

const FILENAME = 'test-20260927031407-00001-abcd.warc.gz';
const html = capture('http://www.Example.com/a?b=2&a=1');
const binary = capture('https://example.org/logo.png', {
  body: BINARY_BODY,
  headers: [['Content-Type', 'image/png'], ['Content-Length', String(BINARY_BODY.length)]],
});
const truncated = capture('http://example.net/big', { body: Buffer.alloc(1000, 'x'), truncated: 'length' });
const again = capture(html.url, { startedAt: html.startedAt + 86_400_000 });

let dir: string;
let store: LocalPageStore;
let uri: string;
let builder: WarcFileBuilder;
const built: WarcRecord[] = [];
const spans = new Map<string, RecordSpan>();

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'warc-record-'));
  store = new LocalPageStore(dir);
  builder = new WarcFileBuilder(FILENAME, { software: 'kcrawl-test', hostname: 'test-host', operator: 'ops@example.com' });
  const ctx = { warcinfoId: builder.warcinfoId };
  const [htmlRequest, htmlResponse] = exchangeRecords(html, ctx);
  built.push(
    htmlRequest,
    htmlResponse,
    ...exchangeRecords(binary, ctx),
    ...exchangeRecords(truncated, ctx),
    revisitRecord(again, {
      ...ctx,
      profile: 'identical-payload-digest',
      refersToTargetUri: html.url,
      refersToDate: htmlResponse.date,
      refersTo: htmlResponse.id,
    }),
    metadataRecord({
      ...ctx,
      targetUri: 'http://example.com/report.pdf',
      fields: [['outcome', 'NOT_HTML'], ['content-type', 'application/pdf'], ['note', 'two\r\nlines']],
    }),
    conversionRecord({ ...ctx, targetUri: html.url, text: 'Héllo wörld\nsecond line', refersTo: htmlResponse.id }),
  );
  for (const r of built) spans.set(r.id, builder.add(r));
  uri = await store.put(`warc/${FILENAME}`, builder.toBuffer());
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readAll(parseHttp: boolean): Promise<Array<{ record: ParsedRecord; data: Uint8Array }>> {
  const out = [];
  for await (const record of new WARCParser([await store.readAll(uri)], { parseHttp })) {
    out.push({ record, data: await record.readFully(false) });
  }
  return out;
}

const sha256 = (data: Uint8Array) => 'sha256:' + createHash('sha256').update(data).digest('hex');
const header = (r: ParsedRecord, name: string) => r.warcHeaders.headers.get(name);

describe('a WARC file read back by warcio', () => {
  test('has the warcinfo record first, then every record in order, as WARC/1.1', async () => {
    const records = await readAll(true);
    expect(records.map(({ record }) => record.warcType)).toEqual([
      'warcinfo', 'request', 'response', 'request', 'response', 'request', 'response',
      'revisit', 'metadata', 'conversion',
    ]);
    expect(records.map(({ record }) => record.warcHeaders.protocol)).toEqual(Array(10).fill('WARC/1.1'));
    expect(records.slice(1).map(({ record }) => record.warcTargetURI)).toEqual([
      html.url, html.url, binary.url, binary.url, truncated.url, truncated.url,
      html.url, 'http://example.com/report.pdf', html.url,
    ]);
    const info = Buffer.from(records[0]!.data).toString();
    expect(info).toContain('format: WARC File Format 1.1\r\n');
    expect(info).toContain('software: kcrawl-test\r\n');
    expect(info).toContain('operator: ops@example.com\r\n');
    expect(header(records[0]!.record, 'WARC-Filename')).toBe(FILENAME);
  });

  test('every record has the mandatory fields and points at the warcinfo record', async () => {
    const records = await readAll(true);
    const warcinfoId = header(records[0]!.record, 'WARC-Record-ID');
    expect(warcinfoId).toBe(builder.warcinfoId);
    for (const { record } of records) {
      expect(header(record, 'WARC-Record-ID')).toMatch(/^<urn:uuid:[0-9a-f-]{36}>$/);
      expect(header(record, 'WARC-Date')).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
      expect(Number(header(record, 'Content-Length'))).toBeGreaterThan(0);
      if (record.warcType !== 'warcinfo') expect(header(record, 'WARC-Warcinfo-ID')).toBe(warcinfoId);
    }
    const [, request, response] = records;
    expect(header(request!.record, 'WARC-Concurrent-To')).toBe(header(response!.record, 'WARC-Record-ID'));
    expect(header(response!.record, 'WARC-Concurrent-To')).toBe(header(request!.record, 'WARC-Record-ID'));
    expect(header(response!.record, 'WARC-IP-Address')).toBe('192.0.2.10');
  });

  test('block digests match the blocks and payload digests match the HTTP payloads', async () => {
    const blocks = await readAll(false);
    for (const { record, data } of blocks) {
      expect(data.length).toBe(Number(header(record, 'Content-Length')));
      expect(header(record, 'WARC-Block-Digest')).toBe(sha256(data));
    }
    let checked = 0;
    for (const { record, data } of await readAll(true)) {
      if (record.warcType !== 'request' && record.warcType !== 'response') continue;
      expect(record.warcPayloadDigest).toBe(sha256(data));
      checked += 1;
    }
    expect(checked).toBe(6);
  });

  test('responses hold the decoded body, with headers that say so', async () => {
    const responses = (await readAll(true)).filter(({ record }) => record.warcType === 'response');
    const [first, second, third] = responses.map(({ record, data }) => ({ record, data: Buffer.from(data) }));
    const http = first!.record.httpHeaders!;
    expect(http.statusCode).toBe(200);
    expect(http.headers.get('Content-Encoding')).toBeNull();
    expect(http.headers.get('Transfer-Encoding')).toBeNull();
    expect(http.headers.get('X-Crawler-Content-Encoding')).toBe('gzip');
    expect(http.headers.get('X-Crawler-Transfer-Encoding')).toBe('chunked');
    expect(http.headers.get('Content-Length')).toBe(String(html.body.length));
    expect(first!.data.equals(html.body)).toBe(true);
    expect(second!.data.equals(BINARY_BODY)).toBe(true);
    expect(header(second!.record, 'WARC-Truncated')).toBeNull();
    expect(header(third!.record, 'WARC-Truncated')).toBe('length');
    expect(third!.data.length).toBe(1000);
  });

  test('a reader that decodes content gets the same bytes back (nothing left to decode)', async () => {
    for await (const record of new WARCParser([await store.readAll(uri)])) {
      if (record.warcType === 'response' && record.warcTargetURI === binary.url) {
        expect(Buffer.from(await record.readFully(true)).equals(BINARY_BODY)).toBe(true);
      }
    }
  });

  test('revisit, metadata and conversion records carry their specific fields', async () => {
    const records = await readAll(true);
    const response = records[2]!.record;
    const revisit = records[7]!;
    expect(header(revisit.record, 'WARC-Profile')).toBe(
      'http://netpreserve.org/warc/1.1/revisit/identical-payload-digest',
    );
    expect(revisit.record.warcRefersToTargetURI).toBe(html.url);
    expect(revisit.record.warcRefersToDate).toBe(response.warcDate);
    expect(header(revisit.record, 'WARC-Refers-To')).toBe(header(response, 'WARC-Record-ID'));
    expect(revisit.record.warcPayloadDigest).toBe(response.warcPayloadDigest);
    expect(revisit.record.httpHeaders?.statusCode).toBe(200);
    expect(revisit.data.length).toBe(0);

    const metadata = records[8]!;
    expect(metadata.record.warcContentType).toBe('application/warc-fields');
    expect(Buffer.from(metadata.data).toString()).toBe(
      'outcome: NOT_HTML\r\ncontent-type: application/pdf\r\nnote: two lines\r\n',
    );

    const conversion = records[9]!;
    expect(conversion.record.warcContentType).toBe('text/plain');
    expect(header(conversion.record, 'WARC-Refers-To')).toBe(header(response, 'WARC-Record-ID'));
    expect(Buffer.from(conversion.data).toString('utf8')).toBe('Héllo wörld\nsecond line');
  });
});

describe('WarcFileBuilder', () => {
  test('knows its record count, its size and where each record lies', async () => {
    const file = await store.readAll(uri);
    expect(builder.recordCount).toBe(built.length + 1);
    expect(builder.byteLength).toBe(file.length);
    for (const record of built) {
      const { offset, length } = spans.get(record.id)!;
      const raw = gunzipSync(file.subarray(offset, offset + length)).toString('latin1');
      expect(raw.startsWith('WARC/1.1\r\n')).toBe(true);
      expect(raw).toContain(`WARC-Record-ID: ${record.id}\r\n`);
    }
  });
});

describe('the CDXJ index', () => {
  const lines = () => builder.cdxj().trimEnd().split('\n');

  test('lists responses and revisits, sorted, in the pywb format', () => {
    const all = lines();
    expect(all).toHaveLength(4);
    expect([...all].sort()).toEqual(all);
    const [key, timestamp, json] = all[0]!.split(' ', 3);
    expect(key).toBe('com,example)/a?a=1&b=2');
    expect(timestamp).toBe('20260927031407');
    expect(Object.keys(JSON.parse(json!))).toEqual(['url', 'mime', 'status', 'digest', 'length', 'offset', 'filename']);
    expect(JSON.parse(json!)).toMatchObject({ url: html.url, mime: 'text/html', status: '200', filename: FILENAME });
  });

  test('agrees line for line with warcio’s own indexer', async () => {
    const indexer = new CDXIndexer({ format: 'cdxj' });
    const theirs: string[] = [];
    const parser = new WARCParser([await store.readAll(uri)]);
    for await (const cdx of indexer.iterRecords(parser, FILENAME)) {
      theirs.push(indexer.serializeCDXJ(cdx).trimEnd());
    }
    // warcio also lists the conversion record; we leave it out so replay never serves the text.
    const conversionOffset = String(spans.get(built[built.length - 1]!.id)!.offset);
    const comparable = theirs.filter((l) => JSON.parse(l.split(' ').slice(2).join(' ')).offset !== conversionOffset);
    expect(lines()).toEqual(comparable.sort());
  });

  test('offset and length read one record alone', async () => {
    const bodies = new Map([[html.url, html.body], [binary.url, BINARY_BODY], [truncated.url, truncated.body]]);
    for (const line of lines()) {
      const entry = JSON.parse(line.split(' ').slice(2).join(' '));
      const slice = await store.read(uri, Number(entry.offset), Number(entry.length));
      const raw = gunzipSync(slice);
      expect(raw.subarray(0, 10).toString()).toBe('WARC/1.1\r\n');
      const record = await WARCParser.parse([raw]);
      expect(record?.warcTargetURI).toBe(entry.url);
      if (record?.warcType !== 'response') continue;
      expect(Buffer.from(await record.readFully()).equals(bodies.get(entry.url)!)).toBe(true);
    }
  });
});
