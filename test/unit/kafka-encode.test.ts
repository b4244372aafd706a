import { AvroRegistry } from '../../connectors/registry';
import { avroType } from '../../lib/avro';
import type { UrlStateMsg } from '../../lib/messages';
import { encodeRecords, type KafkaRuntime } from '../../runtime/kafka-runner';
import type { OutRecord } from '../../runtime/stage';

function row(url: string, i: number): UrlStateMsg {
  return {
    url, host: new URL(url).hostname, state: i % 2 ? 'QUEUED' : 'FETCHED', depth: i % 5, discovered_at: 1_700_000_000_000 + i, updated_at: i, lease_id: null,
    lease_expires_at: null, attempts: i % 3, next_due_at: i % 2 ? null : 1_700_000_900_000, fetched_at: null, http_status: i % 2 ? null : 200, sha256: null,
    etag: null, last_modified: null, warc_uri: null, warc_offset: null, warc_length: null, reason: null, redirects: 0, priority: i % 4 ? null : 0.25, priority_class: 2,
  };
}

describe('Kafka mode: a value given already encoded (OutRecord.encoded)', () => {
  it('is produced as the same bytes as the value encoded by the runtime (the Confluent header, then the Avro body)', async () => {
    // No request is made: the registry client is only asked to encode with ids given here.
    const rt = { registry: new AvroRegistry('http://127.0.0.1:9'), schemaIds: new Map([['urls', 4242]]), prefix: 'p.', partitions: 8 } as unknown as KafkaRuntime;
    const type = avroType('crawl.UrlState.v1');
    const rows = Array.from({ length: 50 }, (_, i) => row(`http://h${i % 7}.test/${'ü'.repeat(i)}p${i}`, i));
    const plain: OutRecord[] = rows.map((r) => ({ topic: 'urls', key: r.url, host: r.host, value: r }));
    const given: OutRecord[] = rows.map((r) => ({ topic: 'urls', key: r.url, host: r.host, value: r, encoded: type.toBuffer(r) }));
    const a = await encodeRecords(rt, plain);
    const b = await encodeRecords(rt, given);
    expect(b.length).toBe(rows.length);
    b.forEach((x, i) => {
      expect({ ...x, value: null }).toEqual({ ...a[i], value: null });
      expect(x.value!.equals(a[i].value!)).toBe(true);
      expect(x.value!.readInt32BE(1)).toBe(4242);
    });
  });
});
