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
