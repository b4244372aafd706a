/**
 * The schema registry (Confluent REST API; Apicurio's ccompat API or Confluent's own) through
 * @kafkajs/confluent-schema-registry: registers schemas/ under TopicNameStrategy subjects
 * (`<topic>-value`) with BACKWARD compatibility, and encodes/decodes the Confluent wire format
 * (magic byte 0, 4-byte schema id, Avro body).
 */
import { COMPATIBILITY, SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type * as avro from 'avsc';
import { encodeAvro } from '../lib/avro';

export type Compatibility = 'BACKWARD' | 'BACKWARD_TRANSITIVE' | 'FORWARD' | 'FULL' | 'NONE';

export class IncompatibleSchemaError extends Error {
  override name = 'IncompatibleSchemaError';
}

export class AvroRegistry {
  readonly client: SchemaRegistry;

  constructor(readonly url: string) {
    if (!url) throw new Error('no schema registry: set CRAWL_REGISTRY_URL (e.g. http://127.0.0.1:18081/apis/ccompat/v7)');
    this.client = new SchemaRegistry({ host: url.replace(/\/$/, '') });
  }

  /** Set a subject's compatibility level (PUT /config/{subject}). */
  async setCompatibility(subject: string, level: Compatibility): Promise<void> {
    const res = await fetch(`${this.url.replace(/\/$/, '')}/config/${encodeURIComponent(subject)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ compatibility: level }),
    });
    if (!res.ok) throw new Error(`registry: PUT /config/${subject} answered ${res.status}: ${await res.text()}`);
  }

  /** Would this schema be accepted as the subject's next version? (POST /compatibility/…/latest) */
  async isCompatible(subject: string, schema: object): Promise<boolean> {
    const res = await fetch(`${this.url.replace(/\/$/, '')}/compatibility/subjects/${encodeURIComponent(subject)}/versions/latest`, {
      method: 'POST',
      headers: { 'content-type': 'application/vnd.schemaregistry.v1+json' },
      body: JSON.stringify({ schema: JSON.stringify(schema) }),
    });
    if (res.status === 404) return true; // no version yet
    if (!res.ok) throw new Error(`registry: compatibility check for ${subject} answered ${res.status}: ${await res.text()}`);
    return ((await res.json()) as { is_compatible: boolean }).is_compatible;
  }

  /**
   * Register `schema` as the next version of `subject` (idempotent for an identical schema),
   * after setting the subject's compatibility; an incompatible change is refused by the
   * registry and reported as IncompatibleSchemaError.
   */
  async register(subject: string, schema: object, compatibility: Compatibility = 'BACKWARD'): Promise<number> {
    await this.setCompatibility(subject, compatibility);
    try {
      const { id } = await this.client.register({ type: SchemaType.AVRO, schema: JSON.stringify(schema) }, { subject, compatibility: COMPATIBILITY[compatibility] });
      return id;
    } catch (err) {
      const e = err as { status?: number; message?: string };
      if (e.status === 409 || /incompatible/i.test(e.message ?? '')) {
        throw new IncompatibleSchemaError(`registry refused an incompatible change to ${subject}: ${e.message}`);
      }
      throw err;
    }
  }

  encode(schemaId: number, value: unknown): Promise<Buffer> {
    return this.client.encode(schemaId, value);
  }

  /**
   * The wire format of `value` under `schemaId`, encoded with `type`, which must be the schema
   * registered under that id (as `registerSchemas` returns for our own schemas). The same bytes
   * as encode(), without the library's second encoding pass and copies: pages carry their body.
   */
  encodeWith(schemaId: number, type: avro.Type, value: unknown): Buffer {
    const buf = encodeAvro(type, value, 5);
    buf[0] = 0; // magic byte
    buf.writeInt32BE(schemaId, 1);
    return buf;
  }

  decode(buf: Buffer): Promise<unknown> {
    return this.client.decode(buf);
  }
}

export function subjectFor(topic: string): string {
  return `${topic}-value`;
}
