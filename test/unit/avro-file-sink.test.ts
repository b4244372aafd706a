import { mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as avro from 'avsc';
import { AvroFileSink } from '../../runtime/avro-file-sink';
import { avroType, loadSchema } from '../../lib/avro';
import type { HandoffEvent } from '../../lib/messages';

const SCHEMA = 'crawl.handoff.v3';

function event(i: number): HandoffEvent {
  return {
    event_id: `id-${i}`, url: `http://a.test/${i}`, canonical_url: i % 2 ? null : `http://a.test/c${i}`, fetched_at: 1_700_000_000_000 + i,
    change: i % 3 ? 'NEW' : 'CHANGED', simhash64: null, simhash_version: 2, language: 'en', importance: null,
    usage: { search_index: true, ai_training: i % 2 === 0 }, usage_registry_version: 0,
    warc: { uri: 'file:///x.warc.gz', offset: i * 100, length: 100 }, text: null,
  };
}

/** Every record avsc's own container reader finds, with the header it saw. */
function readAll(path: string): Promise<{ records: unknown[]; sync: Buffer | null }> {
  return new Promise((resolve, reject) => {
    const records: unknown[] = [];
    let sync: Buffer | null = null;
    avro
      .createFileDecoder(path)
      .on('metadata', (_type: avro.Type, _codec: string, header: { sync: Buffer }) => (sync = header.sync))
      .on('data', (r: unknown) => records.push(r))
      .on('error', reject)
      .on('end', () => resolve({ records, sync }));
  });
}

/** Records as plain JSON (avsc decodes records to class instances). */
const plain = (xs: unknown[]): unknown => JSON.parse(JSON.stringify(xs));

describe('AvroFileSink', () => {
  let dir: string;
  let path: string;
  const type = avroType(SCHEMA);
  const schema = loadSchema(SCHEMA);
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'avro-sink-'));
    path = join(dir, 'handoff.avro');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('writes a container file avsc reads back with all records', async () => {
    const sink = new AvroFileSink(path, type, schema);
    sink.append([event(1), event(2)]);
    sink.append([]);
    sink.append([event(3)]);
    expect(sink.count).toBe(3);
    sink.close();
    const { records } = await readAll(path);
    expect(plain(records)).toEqual(plain([event(1), event(2), event(3)]));
  });

  it('reopening appends to the same file with the same sync marker', async () => {
    const s1 = new AvroFileSink(path, type, schema);
    s1.append([event(1), event(2)]);
    s1.close();
    const before = await readAll(path);
    const s2 = new AvroFileSink(path, type, schema);
    expect(s2.count).toBe(2);
    s2.append([event(3)]);
    expect(s2.count).toBe(3);
    s2.close();
    const after = await readAll(path);
    expect(after.sync).not.toBeNull();
    expect(after.sync!.equals(before.sync!)).toBe(true);
    expect(plain(after.records)).toEqual(plain([event(1), event(2), event(3)]));
    // The header was not rewritten: the file starts with the first file's bytes.
    expect(readFileSync(path).subarray(0, 4).toString('latin1')).toBe('Obj\x01');
  });

  it.each([1, 3, 17])('cuts a torn final block (%i bytes short) on reopen and stays readable', async (cut) => {
    const s1 = new AvroFileSink(path, type, schema);
    s1.append([event(1)]);
    s1.append([event(2), event(3)]);
    s1.append([event(4)]);
    s1.close();
    truncateSync(path, statSync(path).size - cut);
    const s2 = new AvroFileSink(path, type, schema);
    expect(s2.count).toBe(3);
    s2.append([event(5)]);
    expect(s2.count).toBe(4);
    s2.close();
    const { records } = await readAll(path);
    expect(plain(records)).toEqual(plain([event(1), event(2), event(3), event(5)]));
    const s3 = new AvroFileSink(path, type, schema);
    expect(s3.count).toBe(4);
    s3.close();
  });

  it('a header-only file reopens with count 0; an empty file gets a new header', async () => {
    new AvroFileSink(path, type, schema).close();
    const s = new AvroFileSink(path, type, schema);
    expect(s.count).toBe(0);
    s.append([event(7)]);
    s.close();
    expect(plain((await readAll(path)).records)).toEqual(plain([event(7)]));

    const empty = join(dir, 'empty.avro');
    writeFileSync(empty, '');
    const e = new AvroFileSink(empty, type, schema);
    e.append([event(8)]);
    e.close();
    expect(plain((await readAll(empty)).records)).toEqual(plain([event(8)]));
  });

  it('refuses a file that is not an Avro container', () => {
    const bad = join(dir, 'bad.avro');
    writeFileSync(bad, 'this is not avro at all, just text');
    expect(() => new AvroFileSink(bad, type, schema)).toThrow(/not an Avro container file/);
  });
});
