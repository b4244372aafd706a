/** avroFieldsReader: the named fields as avroReader reads them, from current and earlier versions' bytes. */
import * as avro from 'avsc';
import { avroFieldsReader, avroReader, avroType, loadSchema, schemaBefore } from '../../lib/avro';
import { INDEX_FIELDS } from '../../processors/frontier-restore';

const NAME = 'crawl.UrlState.v1';

function pick(o: Record<string, unknown>, fields: readonly string[]): Record<string, unknown> {
  return Object.fromEntries(fields.map((f) => [f, o[f]]));
}

describe('avroFieldsReader', () => {
  const full = avroReader(NAME);
  const fields = avroFieldsReader(NAME, INDEX_FIELDS);

  it('reads exactly the named fields, equal to the whole decode, of random rows', () => {
    const type = avroType(NAME);
    for (let i = 0; i < 300; i++) {
      const b = type.toBuffer(type.random());
      const got = fields(b) as Record<string, unknown>;
      expect(Object.keys(got).sort()).toEqual([...INDEX_FIELDS].sort());
      expect(got).toEqual(pick(full(b) as Record<string, unknown>, INDEX_FIELDS));
    }
  });

  it('reads bytes written before priority_class (version 1) with it null, as avroReader does', () => {
    const v1 = avro.Type.forSchema(schemaBefore(loadSchema(NAME), 2) as avro.Schema);
    for (let i = 0; i < 100; i++) {
      const b = v1.toBuffer(v1.random());
      const got = fields(b) as Record<string, unknown>;
      expect(got.priority_class).toBeNull();
      expect(got).toEqual(pick(full(b) as Record<string, unknown>, INDEX_FIELDS));
    }
  });

  it('fails on bytes of no version, and on a field the schema lacks', () => {
    expect(() => fields(Buffer.from([1, 2, 3]))).toThrow();
    expect(() => avroFieldsReader(NAME, ['url', 'no_such_field'])).toThrow(/no_such_field/);
  });
});
