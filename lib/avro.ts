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
