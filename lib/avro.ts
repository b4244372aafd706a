/**
 * The Avro schemas in schemas/, loaded once. Kafka mode registers them with the schema
 * registry (Confluent wire format); the embedded log encodes with the same types, so a record
 * is the same bytes after the 5-byte wire header in both modes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as avro from 'avsc';

/** Folder of the .avsc files, found from this file in src and in dist. */
export const SCHEMA_DIR = [join(__dirname, '..', 'schemas'), join(__dirname, '..', '..', 'schemas')].find((d) => {
  try {
    readFileSync(join(d, 'crawl.handoff.v3.avsc'));
    return true;
  } catch {
    return false;
  }
}) ?? join(__dirname, '..', 'schemas');

const schemaCache = new Map<string, object>();
const typeCache = new Map<string, avro.Type>();

/** The parsed JSON of schemas/<name>.avsc. */
export function loadSchema(name: string): object {
  let s = schemaCache.get(name);
  if (!s) {
    s = JSON.parse(readFileSync(join(SCHEMA_DIR, `${name}.avsc`), 'utf8')) as object;
    schemaCache.set(name, s);
  }
  return s;
}

/** The avsc type for schemas/<name>.avsc. */
export function avroType(name: string): avro.Type {
  let t = typeCache.get(name);
  if (!t) {
    t = avro.Type.forSchema(loadSchema(name) as avro.Schema);
    typeCache.set(name, t);
  }
  return t;
}

type RecordSchema = { type: 'record'; fields: Array<{ name: string; 'kcrawl.since'?: number }> };

/**
 * The schema as writers before version `version` wrote it: without the fields added since
 * (`"kcrawl.since": N` on a field added in version N; every such field has a default).
 */
export function schemaBefore(schema: object, version: number): object {
  const r = schema as RecordSchema;
  return { ...r, fields: r.fields.filter((f) => (f['kcrawl.since'] ?? 1) < version) };
}

/** The avsc type of an Avro primitive ('long', 'string', ...). */
export function avroPrimitive(name: 'long' | 'int' | 'string' | 'bytes'): avro.Type {
  return avro.Type.forSchema(name);
}

const tailCache = new Map<string, avro.Type>();

/**
 * The type of a record's fields after its first `skip`: it encodes a value into the bytes the
 * whole record's encoding has after those fields (Avro writes a record's fields one after
 * another), without writing the skipped ones.
 */
export function avroTailType(name: string, skip: number): avro.Type {
  const id = `${name}/${skip}`;
  let t = tailCache.get(id);
  if (!t) {
    const r = loadSchema(name) as RecordSchema;
    t = avro.Type.forSchema({ ...r, fields: r.fields.slice(skip) } as avro.Schema);
    tailCache.set(id, t);
  }
  return t;
}

const readerCache = new Map<string, (buf: Buffer) => unknown>();

/**
 * A decoder for schemas/<name>.avsc that also reads bytes written under its earlier versions.
 * The embedded log keeps records on disk from one release to the next and has no registry to
 * name a record's writer schema; Avro bytes do not say which fields they hold, but bytes of
 * an earlier version always end before a field added since, so they fail to decode as the
 * current version and are read through a resolver from that earlier schema. (Kafka mode needs
 * none of this: each record names its writer schema in the registry.)
 */
export function avroReader(name: string): (buf: Buffer) => unknown {
  let read = readerCache.get(name);
  if (read) return read;
  const current = avroType(name);
  read = firstThatReads([
    (buf) => current.fromBuffer(buf),
    ...earlierWriters(loadSchema(name) as RecordSchema).map((writer) => {
      const resolver = current.createResolver(writer);
      return (buf: Buffer): unknown => current.fromBuffer(buf, resolver);
    }),
  ]);
  readerCache.set(name, read);
  return read;
}

/** Writer types of the schema's earlier versions (before each `kcrawl.since`), newest first. */
function earlierWriters(schema: RecordSchema): avro.Type[] {
  const versions = [...new Set(schema.fields.map((f) => f['kcrawl.since']).filter((v): v is number => v !== undefined))].sort((a, b) => b - a);
  return versions.map((v) => avro.Type.forSchema(schemaBefore(schema, v) as avro.Schema));
}

/** A decoder trying `decoders` in order: the first that reads the bytes; the first one's error if none does. */
function firstThatReads(decoders: ReadonlyArray<(buf: Buffer) => unknown>): (buf: Buffer) => unknown {
  const [first, ...older] = decoders;
  return (buf: Buffer): unknown => {
    try {
      return first(buf);
    } catch (err) {
      for (const decode of older) {
        try {
          return decode(buf);
        } catch {
          // not this version either
        }
      }
      throw err;
    }
  };
}

/**
 * avroReader's decoder for only some of the record's fields (`fields`, by name; the others are
 * skipped in the bytes, no string or object made for them): an object holding those fields,
 * read from bytes of the current version or an earlier one (a field added since takes its
 * default, as avroReader gives it). For a hot loop that needs a few fields of each record.
 */
export function avroFieldsReader(name: string, fields: readonly string[]): (buf: Buffer) => unknown {
  const id = `${name}:${fields.join(',')}`;
  let read = readerCache.get(id);
  if (read) return read;
  const schema = loadSchema(name) as RecordSchema;
  const wanted = new Set(fields);
  const missing = fields.filter((f) => !schema.fields.some((sf) => sf.name === f));
  if (missing.length) throw new Error(`avroFieldsReader: ${name} has no field ${missing.join(', ')}`);
  const reader = avro.Type.forSchema({ ...schema, fields: schema.fields.filter((f) => wanted.has(f.name)) } as avro.Schema);
  read = firstThatReads([avroType(name), ...earlierWriters(schema)].map((writer) => {
    const resolver = reader.createResolver(writer);
    return (buf: Buffer): unknown => reader.fromBuffer(buf, resolver);
  }));
  readerCache.set(id, read);
  return read;
}

/**
 * One value's Avro bytes, after `reserve` bytes left for the caller (a wire-format header).
 *
 * avsc's toBuffer encodes into a 1 KiB scratch, and when the value does not fit (every page,
 * with its body) allocates a zero-filled buffer and encodes all over again. Here the value is
 * encoded once into a scratch buffer that grows to the largest value seen, and copied out.
 */
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

export function encodeAvro(type: avro.Type, value: unknown, reserve = 0): Buffer {
  for (;;) {
    const end = type.encode(value, scratch, reserve);
    if (end >= 0) {
      const out = Buffer.allocUnsafe(end);
      scratch.copy(out, reserve, reserve, end);
      return out;
    }
    // A negative result is the number of bytes missing.
    scratch = Buffer.allocUnsafeSlow(Math.max(2 * scratch.length, scratch.length - end));
  }
}
