/**
 * Charset of an HTML body: the WHATWG encoding sniffing algorithm, simplified (BOM, then the
 * Content-Type charset, then a prescan of the first 1024 bytes for <meta charset> or
 * http-equiv), and decoding with Node's TextDecoder.
 */
import { TextDecoder } from 'node:util';

/** The charset parameter of a Content-Type value or a meta content attribute. */
export function charsetParam(value: string): string | null {
  const m = /charset[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r ;"']+))/i.exec(value);
  return m ? (m[1] ?? m[2] ?? m[3]) : null;
}

const encodingCache = new Map<string, string | null>();
/** WHATWG "get an encoding": Node's TextDecoder implements the label table (latin1 → windows-1252). */
function getEncoding(label: string): string | null {
  const key = label.trim().toLowerCase();
  let enc = encodingCache.get(key);
  if (enc === undefined) {
    // x-user-defined is WHATWG's for meta-declared labels; Node cannot decode it, and 1252 is the nearest.
    if (key === 'x-user-defined') enc = 'windows-1252';
    else try { enc = new TextDecoder(key).encoding; } catch { enc = null; }
    if (encodingCache.size < 256) encodingCache.set(key, enc);
  }
  return enc;
}

/** The meta prescan over the first 1024 bytes; a regex scan, not the byte-level state machine. */
function prescan(head: Buffer): string | null {
  const s = head.toString('latin1').replace(/<!--[\s\S]*?(?:-->|$)/g, '');
  for (const tag of s.match(/<meta[\t\n\f\r \/][^>]*>/gi) ?? []) {
    const attrs = new Map<string, string>();
    for (const m of tag.slice(5).matchAll(/([^\t\n\f\r \/>="']+)(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >]+)))?/g)) {
      const k = m[1].toLowerCase();
      if (!attrs.has(k)) attrs.set(k, m[2] ?? m[3] ?? m[4] ?? '');
    }
    let label = attrs.get('charset') ?? null;
    if (label === null && attrs.get('http-equiv')?.toLowerCase() === 'content-type') label = charsetParam(attrs.get('content') ?? '');
    const enc = label === null ? null : getEncoding(label);
    if (enc === null) continue; // unknown label: keep looking, as the spec does
    // A document that could be read as ASCII to find this tag is not UTF-16.
    if (enc === 'utf-16le' || enc === 'utf-16be') return 'utf-8';
    return enc;
  }
  return null;
}

export function sniffCharset(body: Buffer, contentTypeHeader: string | null): string {
  if (body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf) return 'utf-8';
  if (body[0] === 0xff && body[1] === 0xfe) return 'utf-16le';
  if (body[0] === 0xfe && body[1] === 0xff) return 'utf-16be';
  const header = contentTypeHeader === null ? null : charsetParam(contentTypeHeader);
  const fromHeader = header === null ? null : getEncoding(header);
  if (fromHeader !== null) return fromHeader;
  return prescan(body.subarray(0, 1024)) ?? 'utf-8';
}

// Node 20's windows-1252 decoder is really ISO-8859-1 (0x80 -> U+0080, not the euro sign). Where that
// is so, map the C1 range through the windows-1252 table ourselves (5 bytes are unassigned: kept).
const CP1252 = '\u20ac\x81\u201a\u0192\u201e\u2026\u2020\u2021\u02c6\u2030\u0160\u2039\u0152\x8d\u017d\x8f' +
  '\x90\u2018\u2019\u201c\u201d\u2022\u2013\u2014\u02dc\u2122\u0161\u203a\u0153\x9d\u017e\u0178';
const CP1252_BROKEN = new TextDecoder('windows-1252').decode(new Uint8Array([0x80])) !== '\u20ac';

const decoders = new Map<string, TextDecoder>();
/** `body` decoded as `charset` (a name sniffCharset gives), whole. */
function decodeAs(body: Buffer, charset: string): string {
  let d = decoders.get(charset);
  if (!d) { d = new TextDecoder(charset); decoders.set(charset, d); }
  // TextDecoder drops a BOM that matches the encoding and replaces invalid bytes with U+FFFD.
  const text = d.decode(body);
  return charset === 'windows-1252' && CP1252_BROKEN ? text.replace(/[\x80-\x9f]/g, (c) => CP1252[c.charCodeAt(0) - 0x80]) : text;
}

export function decodeBody(body: Buffer, contentTypeHeader: string | null): { text: string; charset: string } {
  const charset = sniffCharset(body, contentTypeHeader);
  return { text: decodeAs(body, charset), charset };
}

/**
 * The largest page scanned as its UTF-8 bytes (scanForm): twice fetch's default body cap (config
 * maxBodyBytes, 2 MiB), so every page fetch keeps by default is scanned so. A bigger page is
 * decoded whole, on the heap, where a parse worker's heap limit counts it
 * (test/embedded/parse-pool.test.ts): scanned as its bytes, a page takes little of the heap
 * whatever its size.
 */
export const BYTES_SCAN_MAX = 4 * 1024 * 1024;

/**
 * The body as extract() scans it: a UTF-8 page (the web's usual) as its bytes, which
 * tag-scanner.ts reads in Latin-1 pieces of SCAN_CHUNK bytes and decodes only where it keeps
 * something (names, values, text); any other charset, and a page past BYTES_SCAN_MAX, decoded
 * whole as `charset` (the one found here: the page is not sniffed twice). Decoding a page whole
 * made a string of up to twice its size (UTF-16 once any character is past U+00FF), and a page
 * read as one Latin-1 string (branch i45cpu) still made one of its size: any string past 128 KiB
 * is a large object to V8, mapped fresh for each page and unmapped when it dies, about 65 page
 * faults and 0.17 ms of CPU (0.11 of it the kernel's) a 288 KiB page, against 0.05 ms and none
 * for its pieces (docs/performance.md, "The page as its bytes").
 * A BOM is dropped, as TextDecoder drops it. `html` (the bytes) must stay unchanged while extract() reads them.
 */
export function scanForm(body: Buffer, contentTypeHeader: string | null): { html: string | Buffer; charset: string } {
  const charset = sniffCharset(body, contentTypeHeader);
  if (charset !== 'utf-8' || body.length > BYTES_SCAN_MAX) return { html: decodeAs(body, charset), charset };
  return { html: body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? body.subarray(3) : body, charset };
}

/**
 * The page decoded whole from what scanForm made of it, as decodeBody gives it: the string where
 * scanForm decoded the page already, else its bytes decoded as the charset scanForm found (not
 * sniffed or decoded a second time). For the benchmark's parser floors (bench/stage-cpu.ts).
 */
export function wholeText(scanned: { html: string | Buffer; charset: string }): string {
  return typeof scanned.html === 'string' ? scanned.html : decodeAs(scanned.html, scanned.charset);
}
