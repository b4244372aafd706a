import { CompressionCodecs, CompressionTypes } from 'kafkajs';
import { lz4Compress, lz4Decompress, lz4Stats } from '../../connectors/kafka-lz4';

const page = Buffer.from('<html><body>' + Array.from({ length: 400 }, (_, i) => `<a href="/p${i}">page ${i}</a>`).join('') + '</body></html>');

test('an LZ4 frame (the format Kafka reads) that decompresses to the same bytes', () => {
  const frame = lz4Compress(page);
  // LZ4 frame magic number 0x184D2204, little-endian.
  expect([...frame.subarray(0, 4)]).toEqual([0x04, 0x22, 0x4d, 0x18]);
  expect(frame.length).toBeLessThan(page.length / 2);
  expect(lz4Decompress(frame).equals(page)).toBe(true);
  expect(lz4Decompress(lz4Compress(Buffer.alloc(0))).length).toBe(0);
});

test('a truncated or corrupt frame throws rather than returning short bytes', () => {
  const frame = lz4Compress(page);
  expect(() => lz4Decompress(frame.subarray(0, frame.length - 10))).toThrow();
  expect(() => lz4Decompress(Buffer.from('not an lz4 frame at all'))).toThrow();
});

test('kafkajs uses it for LZ4 batches, and it counts what it did', async () => {
  const codec = (CompressionCodecs[CompressionTypes.LZ4] as () => { compress(e: { buffer: Buffer }): Promise<Buffer>; decompress(b: Buffer): Promise<Buffer> })();
  const before = lz4Stats();
  const frame = await codec.compress({ buffer: page });
  expect((await codec.decompress(frame)).equals(page)).toBe(true);
  const after = lz4Stats();
  expect(after.compressed - before.compressed).toBe(1);
  expect(after.decompressed - before.decompressed).toBe(1);
  expect(after.bytesIn - before.bytesIn).toBe(page.length);
  expect(after.bytesOut - before.bytesOut).toBe(frame.length);
});
