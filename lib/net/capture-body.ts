/**
 * A capture's body as its parts: the chunks it arrived in (HttpCapture.bodyParts) where the
 * client kept them, else the one `body`. Reading a page through these never joins its chunks
 * into a fresh copy of the page; fetch hashes them and the WARC writer gzips them as they are.
 */
import { createHash } from 'node:crypto';
import type { HttpCapture } from '../../connectors/types';

export function bodyParts(c: Pick<HttpCapture, 'body' | 'bodyParts'>): readonly Buffer[] {
  return c.bodyParts ?? [c.body];
}

export function bodyLength(c: Pick<HttpCapture, 'body' | 'bodyParts'>): number {
  if (!c.bodyParts) return c.body.length;
  let n = 0;
  for (const p of c.bodyParts) n += p.length;
  return n;
}

/** The body's first `max` bytes (fewer if it is shorter), joining only the parts they span. */
export function bodyHead(c: Pick<HttpCapture, 'body' | 'bodyParts'>, max: number): Buffer {
  const parts = bodyParts(c);
  if (parts.length === 0) return Buffer.alloc(0);
  if (parts[0].length >= max || parts.length === 1) return parts[0].subarray(0, max);
  const head: Buffer[] = [];
  let n = 0;
  for (const p of parts) {
    if (n >= max) break;
    head.push(p.subarray(0, max - n));
    n += head[head.length - 1].length;
  }
  return Buffer.concat(head);
}

/** Hex SHA-256 of the body, over its parts. */
export function bodySha256(c: Pick<HttpCapture, 'body' | 'bodyParts'>): string {
  const h = createHash('sha256');
  for (const p of bodyParts(c)) h.update(p);
  return h.digest('hex');
}
