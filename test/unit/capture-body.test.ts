/**
 * A capture's body read as its parts (lib/net/capture-body.ts): the WARC records and digests of
 * a page kept as chunks are those of the same page as one buffer, and building them never asks
 * for the joined `body`.
 */
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import type { HttpCapture } from '../../connectors/types';
import { bodyHead, bodyLength, bodyParts, bodySha256 } from '../../lib/net/capture-body';
import { exchangeRecords, revisitRecord } from '../../lib/warc/record';
import { capture } from './warc-fixtures';

const BODY = Buffer.from(Array.from({ length: 70_000 }, (_, i) => 32 + ((i * 31) % 90)));
/** BODY in chunks of these sizes (an empty chunk included, as a decoder may hand one over). */
const chunked = (sizes: number[]): Buffer[] => {
  const out: Buffer[] = [];
  let at = 0;
  for (const n of sizes) out.push(BODY.subarray(at, (at += n)));
  out.push(BODY.subarray(at));
  return out;
};

/** A capture whose `body` throws: what reads it would have joined the chunks. */
function partsOnly(parts: Buffer[], over: Partial<HttpCapture> = {}): HttpCapture {
  const c = capture('http://example.com/page', over);
  const out = { ...c, bodyParts: parts } as HttpCapture;
  Object.defineProperty(out, 'body', { get: () => { throw new Error('body joined'); } });
  return out;
}

/** A record's text with its random record ids made equal. */
const text = (gz: Buffer): string => gunzipSync(gz).toString('latin1').replace(/urn:uuid:[0-9a-f-]+/g, 'urn:uuid:x');

describe('capture body parts', () => {
  it('length, head and SHA-256 over the parts are those of the joined body', () => {
    for (const sizes of [[], [1], [3, 0, 500], [511, 1, 2], [65_536], [100, 200, 300, 400]]) {
      const c = partsOnly(chunked(sizes));
      expect(bodyLength(c)).toBe(BODY.length);
      expect(bodySha256(c)).toBe(createHash('sha256').update(BODY).digest('hex'));
      for (const n of [0, 1, 512, 600, 70_000, 80_000]) expect(bodyHead(c, n).equals(BODY.subarray(0, n))).toBe(true);
    }
    const plain = capture('http://example.com/', { body: BODY });
    expect(bodyParts(plain)).toEqual([BODY]);
    expect(bodyHead(partsOnly([]), 512)).toEqual(Buffer.alloc(0));
  });

  it('builds the same response and revisit records from parts as from one buffer, without joining them', () => {
    const date = new Date(Date.UTC(2026, 11, 6, 9, 0, 0));
    const ctx = { warcinfoId: '<urn:uuid:info>', date };
    const joined = capture('http://example.com/page', { body: BODY });
    const parts = partsOnly(chunked([1000, 0, 30_000, 7]));
    for (const payloadSha256 of [undefined, bodySha256(joined)]) {
      const [, a] = exchangeRecords(joined, { ...ctx, payloadSha256 });
      const [, b] = exchangeRecords(parts, { ...ctx, payloadSha256 });
      expect(text(b.gz)).toBe(text(a.gz));
      expect(b.index).toEqual(a.index);
    }
    const revisit = { ...ctx, profile: 'identical-payload-digest' as const, refersToTargetUri: joined.url, refersToDate: date };
    expect(text(revisitRecord(parts, revisit).gz)).toBe(text(revisitRecord(joined, revisit).gz));
  });
});
