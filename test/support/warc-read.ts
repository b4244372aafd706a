/**
 * Reads WARC files back with an independent reader (warcio), checking every record's block
 * digest and, for HTTP records, the payload digest. Shared by the e2e tests.
 */
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { WARCParser } from 'warcio';

export interface ReadRecord {
  type: string;
  targetUri: string | null;
  headers: Map<string, string>;
  /** HTTP payload for request/response records, else the whole block. */
  payload: Buffer;
  httpStatus: number | null;
}

const sha256 = (b: Uint8Array): string => 'sha256:' + createHash('sha256').update(b).digest('hex');

export async function readWarc(file: Buffer): Promise<ReadRecord[]> {
  const out: ReadRecord[] = [];
  for await (const record of new WARCParser([file], { parseHttp: false })) {
    const block = Buffer.from(await record.readFully(false));
    const h = record.warcHeaders.headers as unknown as Map<string, string>;
    const headers = new Map<string, string>([...h.entries()].map(([k, v]) => [k.toLowerCase(), v]));
    if (headers.get('warc-block-digest') !== sha256(block)) throw new Error(`block digest mismatch in ${record.warcType} ${record.warcTargetURI}`);
    let payload = block;
    let httpStatus: number | null = null;
    if (record.warcType === 'request' || record.warcType === 'response') {
      const sep = block.indexOf('\r\n\r\n');
      payload = block.subarray(sep + 4);
      if (record.warcType === 'response') httpStatus = Number(block.toString('latin1', 0, sep).split(' ')[1]);
      if (headers.get('warc-payload-digest') !== sha256(payload)) throw new Error(`payload digest mismatch in ${record.warcTargetURI}`);
    }
    out.push({ type: record.warcType ?? '', targetUri: record.warcTargetURI ?? null, headers, payload, httpStatus });
  }
  return out;
}

/** One record read alone: gunzip just [offset, offset+length) and parse it. */
export async function readOneRecord(file: Buffer, offset: number, length: number): Promise<ReadRecord> {
  const member = file.subarray(offset, offset + length);
  gunzipSync(member); // throws unless the slice is exactly one whole gzip member
  const [rec] = await readWarc(member);
  if (!rec) throw new Error(`no record at ${offset}+${length}`);
  return rec;
}
