/** encodeAvro: the same bytes as avsc's toBuffer, after the reserved header, at any size. */
import { avroType, encodeAvro } from '../../lib/avro';
import type { FetchedPageMsg } from '../../lib/messages';

const type = avroType('crawl.FetchedPage.v1');

function page(bodyBytes: number, fill: number): FetchedPageMsg {
  const body = Buffer.alloc(bodyBytes, fill);
  // Every field of the schema, from avsc's own random value, with the body and URL chosen.
  return { ...(type.random() as unknown as FetchedPageMsg), url: `http://127.0.0.1/${bodyBytes}`, body };
}

describe('encodeAvro', () => {
  it('writes what toBuffer writes, for values smaller and far larger than its scratch buffer', () => {
    for (const size of [0, 10, 70_000, 3 * 1024 * 1024, 100]) {
      const v = page(size, size % 251);
      const ours = encodeAvro(type, v);
      expect(ours.equals(type.toBuffer(v))).toBe(true);
      expect((type.fromBuffer(ours) as FetchedPageMsg).body.equals(v.body)).toBe(true);
    }
  });

  it('leaves the reserved header bytes to the caller and never shares memory between results', () => {
    const [va, vb] = [page(5000, 1), page(5000, 2)];
    const a = encodeAvro(type, va, 5);
    const b = encodeAvro(type, vb, 5);
    expect(a.subarray(5).equals(type.toBuffer(va))).toBe(true);
    expect(b.subarray(5).equals(type.toBuffer(vb))).toBe(true);
    expect(a.buffer === b.buffer && a.byteOffset === b.byteOffset).toBe(false);
  });
});
