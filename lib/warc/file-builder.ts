/**
 * One WARC file being assembled in memory: a warcinfo record first, then whatever is added, each
 * record its own gzip member. Knows where each record lands in the file and writes the file's
 * CDXJ index (pywb format) for the records a replay tool looks up.
 */
import { surt } from './surt';
import { warcinfoRecord, type WarcIndexInfo, type WarcinfoOptions, type WarcRecord } from './record';

/** Where a record lies in its file: the gzip member's offset and compressed length. */
export interface RecordSpan {
  offset: number;
  length: number;
}

export class WarcFileBuilder {
  readonly warcinfoId: string;
  private readonly chunks: Buffer[] = [];
  private readonly cdxLines: string[] = [];
  private bytes = 0;
  private records = 0;

  constructor(
    readonly filename: string,
    info: Omit<WarcinfoOptions, 'filename'>,
  ) {
    const warcinfo = warcinfoRecord({ ...info, filename });
    this.warcinfoId = warcinfo.id;
    this.add(warcinfo);
  }

  /** Records in the file, the warcinfo record included. */
  get recordCount(): number {
    return this.records;
  }

  /** Compressed size of the file so far. */
  get byteLength(): number {
    return this.bytes;
  }

  add(record: WarcRecord): RecordSpan {
    const span = { offset: this.bytes, length: record.gz.length };
    this.chunks.push(record.gz);
    this.bytes += record.gz.length;
    this.records += 1;
    if (record.index && record.targetUri) {
      this.cdxLines.push(this.cdxjLine(record.targetUri, record.date, record.index, span));
    }
    return span;
  }

  /** The file's bytes as its records' gzip members, in order (not copied). */
  parts(): readonly Buffer[] {
    return this.chunks;
  }

  toBuffer(): Buffer {
    return Buffer.concat(this.chunks, this.bytes);
  }

  /** The CDXJ index, lines sorted bytewise as pywb expects (`LC_ALL=C sort`). */
  cdxj(): string {
    const lines = [...this.cdxLines].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return lines.map((l) => l + '\n').join('');
  }

  private cdxjLine(url: string, date: Date, index: WarcIndexInfo, span: RecordSpan): string {
    const timestamp = date.toISOString().replace(/[-:T]/g, '').slice(0, 14);
    // Field order and string-typed numbers follow pywb's and warcio's own indexers.
    const fields: Record<string, string> = { url, mime: index.mime, status: String(index.status) };
    if (index.digest) fields.digest = index.digest;
    fields.length = String(span.length);
    fields.offset = String(span.offset);
    fields.filename = this.filename;
    return `${surt(url)} ${timestamp} ${JSON.stringify(fields)}`;
  }
}
