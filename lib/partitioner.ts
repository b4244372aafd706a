/**
 * Kafka's default partitioner (murmur2 of the key bytes, made positive, modulo the partition
 * count), so the embedded log and Kafka choose the same partition number. Records are always
 * routed by their URL's host, whatever the record key, and the partition is chosen from the
 * host's *registered domain* (Public Suffix List; the host itself for IP addresses): one host
 * still lives in exactly one partition of every co-partitioned topic, and so do all the hosts
 * of one domain, which lets the frontier cap a whole domain (a farm of subdomains) without
 * coordinating with other instances.
 */
import { registeredDomain } from './url-normalize';
import { ownString } from './own-string';

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** murmur2 as in org.apache.kafka.common.utils.Utils.murmur2 (32-bit, signed result). */
export function murmur2(data: Buffer): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const tail = length & ~3;
  const rest = length % 4;
  if (rest === 3) h ^= data[tail + 2] << 16;
  if (rest >= 2) h ^= data[tail + 1] << 8;
  if (rest >= 1) {
    h ^= data[tail];
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

const keyCache = new Map<string, string>();
const KEY_CACHE_MAX = 100_000;

/** The routing key of a host: its registered domain, or the host itself (IPs, bare suffixes). */
export function routingKey(host: string): string {
  let key = keyCache.get(host);
  if (key === undefined) {
    // Kept: its own copy, not a slice of the URL the host may have been cut from (lib/own-string.ts).
    const own = ownString(host);
    key = registeredDomain(own) ?? own;
    if (keyCache.size >= KEY_CACHE_MAX) keyCache.clear();
    keyCache.set(own, key);
  }
  return key;
}

/** Positive murmur2 of each host's routing key: every record is routed, few hosts are new. */
const hashCache = new Map<string, number>();

/** Partition for a host: Kafka's default partitioner applied to the host's routing key. */
export function partitionForHost(host: string, partitions: number): number {
  let h = hashCache.get(host);
  if (h === undefined) {
    h = murmur2(Buffer.from(routingKey(host), 'utf8')) & 0x7fffffff;
    if (hashCache.size >= KEY_CACHE_MAX) hashCache.clear();
    hashCache.set(ownString(host), h);
  }
  return h % partitions;
}
