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
 * The largest page scanned as its Latin-1 image (scanForm): twice fetch's default body cap
 * (config maxBodyBytes, 2 MiB), so every page fetch keeps by default is scanned so. An image of
 * more than about 1 MB is an external string (its bytes outside the JavaScript heap: a copy at most
 * this large a page); a bigger page is decoded whole, on the heap, where a parse worker's heap
 * limit counts it.
 */
export const IMAGE_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The body as extract() scans it: a UTF-8 page (the web's usual) as its Latin-1 image, one
 * character a byte, with the bytes beside it (`utf8`: tag-scanner.ts decodes only the names,
 * values and text it keeps); any other charset decoded whole, as decodeBody does. The image
 * costs a copy of the bytes, where decoding the page whole made a string of up to twice its
 * size (UTF-16 once any character is past U+00FF): about 0.55 ms of CPU (0.24 of it the
 * kernel's) and 130 freshly mapped pages of memory a 280 KiB page, against 0.14 ms and 60 for
 * the image (docs/performance.md, "The page as its Latin-1 image").
 * `body` must stay unchanged while the scan reads `utf8`.
 *
 * Only up to IMAGE_MAX_BYTES: Node makes a Latin-1 string of more than about 1 MB external (its
 * bytes outside the JavaScript heap), and a parse worker's heap limit is what stops a huge page
 * (test/embedded/parse-pool.test.ts); a bigger page is decoded whole, on the heap, as before.
 */
export function scanForm(body: Buffer, contentTypeHeader: string | null): { html: string; utf8?: Buffer; charset: string } {
  const charset = sniffCharset(body, contentTypeHeader);
  // Decoded as the charset found here: sniffing again (decodeBody) read the prescan's 1024 bytes a second time.
  if (charset !== 'utf-8' || body.length > IMAGE_MAX_BYTES) return { html: decodeAs(body, charset), charset };
  // TextDecoder drops the BOM: so does the image.
  const utf8 = body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? body.subarray(3) : body;
  return { html: utf8.toString('latin1'), utf8, charset };
}
