/**
 * Appends records to an Avro object container file (Avro 1.11 spec, "Object Container Files",
 * null codec) that any Avro reader opens. Each append writes one whole block with one write
 * call; on reopen, the header's sync marker is reused and any torn final block is cut off, so
 * a killed crawl resumes appending to the same valid file.
 */
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as avro from 'avsc';
import { encodeAvro } from '../lib/avro';

const MAGIC = Buffer.from('Obj\x01', 'latin1');
const HEADER_TYPE = avro.Type.forSchema({
  type: 'record',
  name: 'org.apache.avro.file.Header',
  fields: [
    { name: 'magic', type: { type: 'fixed', name: 'Magic', size: 4 } },
    { name: 'meta', type: { type: 'map', values: 'bytes' } },
    { name: 'sync', type: { type: 'fixed', name: 'Sync', size: 16 } },
  ],
});
const LONG = avro.Type.forSchema('long');

export class AvroFileSink {
  private fd: number;
  private sync: Buffer;
  count = 0;

  constructor(readonly path: string, private readonly type: avro.Type, schema: object) {
    if (existsSync(path) && readFileSync(path).length > 0) {
      const buf = readFileSync(path);
      const { value: header, offset } = HEADER_TYPE.decode(buf, 0) as { value: { magic: Buffer; sync: Buffer }; offset: number };
      if (offset < 0 || !header.magic.equals(MAGIC)) throw new Error(`${path} is not an Avro container file`);
      this.sync = header.sync;
      const end = this.validEnd(buf, offset);
      this.fd = openSync(path, 'r+');
      ftruncateSync(this.fd, end);
      this.fd = (closeSync(this.fd), openSync(path, 'a'));
    } else {
      this.sync = randomBytes(16);
      this.fd = openSync(path, 'w');
      const header = HEADER_TYPE.toBuffer({
        magic: MAGIC,
        meta: { 'avro.schema': Buffer.from(JSON.stringify(schema)), 'avro.codec': Buffer.from('null') },
        sync: this.sync,
      });
      writeSync(this.fd, header);
    }
  }

  /** Offset just past the last complete block (counting its records). */
  private validEnd(buf: Buffer, start: number): number {
    let pos = start;
    for (;;) {
      const n = LONG.decode(buf, pos);
      if (n.offset < 0) return pos;
      const size = LONG.decode(buf, n.offset);
      if (size.offset < 0) return pos;
      const end = size.offset + (size.value as number) + 16;
      if (end > buf.length || !buf.subarray(end - 16, end).equals(this.sync)) return pos;
      this.count += n.value as number;
      pos = end;
    }
  }

  append(values: readonly unknown[]): void {
    if (values.length === 0) return;
    const data = Buffer.concat(values.map((v) => encodeAvro(this.type, v)));
    writeSync(this.fd, Buffer.concat([LONG.toBuffer(values.length), LONG.toBuffer(data.length), data, this.sync]));
    this.count += values.length;
  }

  close(): void {
    closeSync(this.fd);
  }
}
