/**
 * The HTML tokenizer's rules that htmlparser2's tokenizer does not follow and tag-scanner.ts
 * applies on top of it: where raw text ends (script data with its escaped states, RAWTEXT,
 * RCDATA), RCDATA's character references, and the namespace rules of parse5's parser-feedback
 * simulator (which start tags leave SVG/MathML, which elements in them hold HTML again).
 */
import { Tokenizer } from 'htmlparser2';

export interface Attr { name: string; value: string }

/** RAWTEXT elements (parse5's feedback simulator switches the tokenizer for these in HTML content). */
export const RAWTEXT = new Set(['style', 'xmp', 'iframe', 'noembed', 'noframes', 'noscript']);
/** RCDATA elements: raw text with character references decoded. */
export const RCDATA = new Set(['title', 'textarea']);
/** Elements htmlparser2's tokenizer reads as raw text, wherever they are (even in SVG, where HTML does not). */
export const SPECIAL = new Set(['script', 'style', 'title', 'textarea']);

// parse5's feedback simulator's namespace rules (parse5/dist/common/foreign-content.js).
export const enum Ns { Html, Svg, MathMl }
/** Start tags that end SVG/MathML content (`font` too, with a color, face or size attribute). */
export const EXITS_FOREIGN = new Set([
  'b', 'big', 'blockquote', 'body', 'br', 'center', 'code', 'dd', 'div', 'dl', 'dt', 'em', 'embed', 'h1', 'h2', 'h3',
  'h4', 'h5', 'h6', 'head', 'hr', 'i', 'img', 'li', 'listing', 'menu', 'meta', 'nobr', 'ol', 'p', 'pre', 'ruby', 's',
  'small', 'span', 'strong', 'strike', 'sub', 'sup', 'table', 'tt', 'u', 'ul', 'var',
]);
const MATHML_TEXT_POINTS = new Set(['mi', 'mo', 'mn', 'ms', 'mtext']);
/** Foreign start tags whose attributes the namespace rules read. */
export const NS_ATTR_TAGS = new Set(['font', 'annotation-xml']);

/** Does element `name` of namespace `ns` hold HTML (an HTML or MathML text integration point)? */
export function integrationPoint(name: string, ns: Ns | undefined, attrs: readonly Attr[]): boolean {
  if (ns === Ns.Svg) return name === 'foreignobject' || name === 'desc' || name === 'title';
  if (ns !== Ns.MathMl) return false;
  if (MATHML_TEXT_POINTS.has(name)) return true;
  if (name !== 'annotation-xml') return false;
  const encoding = attrs.find((a) => a.name === 'encoding')?.value.toLowerCase();
  return encoding === 'text/html' || encoding === 'application/xhtml+xml';
}

/** Tokenizer callbacks that do nothing, for the decoders below to override the ones they read. */
const IGNORE = {
  ontext() {}, ontextentity() {}, onattribdata() {}, onattribentity() {}, onattribend() {}, onattribname() {}, oncdata() {}, onclosetag() {},
  oncomment() {}, ondeclaration() {}, onend() {}, onopentagend() {}, onopentagname() {}, onprocessinginstruction() {}, onselfclosingtag() {},
};

/** What the decoders below are reading (`raw`, the offset of its first character in what the tokenizer was given) and have decoded. */
let raw = '';
let rawAt = 0;
let out = '';

/**
 * One tokenizer for each decoder, reset before each use (a decode runs to its end before the next
 * starts: the decoders call no code that could decode meanwhile). Every use writes a whole tag
 * before the value, so no state a use left (a special element's, an entity's) reaches the next.
 */
const attributeTokenizer = new Tokenizer({ decodeEntities: true }, {
  ...IGNORE,
  onattribdata: (a, b) => { out += raw.slice(a - rawAt, b - rawAt); },
  onattribentity: (cp) => { out += String.fromCodePoint(cp); },
});
const rcdataTokenizer = new Tokenizer({ decodeEntities: true }, {
  ...IGNORE,
  ontext: (a, b) => { out += raw.slice(a - rawAt, b - rawAt); },
  ontextentity: (cp) => { out += String.fromCodePoint(cp); },
});

/** `t` reading `value` written after `before`: what its callbacks decoded of `value`. */
function decodeWith(t: Tokenizer, before: string, value: string, after: string): string {
  raw = value;
  rawAt = before.length;
  out = '';
  t.reset();
  t.write(before + value + after);
  t.end();
  const decoded = out;
  raw = out = '';
  return decoded;
}

/**
 * Character references of an attribute value decoded as htmlparser2's tokenizer decodes them in
 * one (its attribute mode: `&amp=` and `&ampx` stay as written), by that tokenizer reading `value`
 * as a double-quoted value. A `"` in it (the value was single-quoted or unquoted) ends no reference
 * differently from any other character that is neither `=` nor alphanumeric, so the pieces
 * between are decoded apart.
 */
export function decodeAttribute(value: string): string {
  if (!value.includes('&')) return value;
  if (value.includes('"')) return value.split('"').map(decodeAttribute).join('"');
  return decodeWith(attributeTokenizer, '<a v="', value, '">');
}

/** Character references decoded as in RCDATA, by htmlparser2's tokenizer reading `value` as a title's text. */
export function decodeRcdata(value: string): string {
  if (!value.includes('&')) return value;
  // A reference never spans a `<`; pieces without one cannot end the title early.
  if (value.includes('<')) return value.split('<').map(decodeRcdata).join('<');
  return decodeWith(rcdataTokenizer, '<title>', value, '');
}

/**
 * A page as the raw-text searches below read it: its characters by index, or, for a UTF-8 page
 * scanned as its bytes (tag-scanner.ts), its bytes. HTML's syntax is all ASCII, and no byte of a
 * UTF-8 sequence is ASCII, so both give the same indexes for the same markup.
 */
export interface PageChars {
  readonly length: number;
  /** The character (byte) at `i`: NaN or undefined past the end, which no test below accepts. */
  code(i: number): number;
  /** The index of ASCII `needle` at or after `from`, or -1. */
  indexOf(needle: string, from: number): number;
}

/** A character that ends a tag name: tab, LF, FF, CR, space, `/`, `>`. */
const endsName = (c: number): boolean => c === 0x20 || c === 0x2f || c === 0x3e || c === 0x0a || c === 0x09 || c === 0x0c || c === 0x0d;

/** Is lowercase ASCII `name` at `i`, in any ASCII case, followed by a character that ends a name? */
function nameAt(p: PageChars, i: number, name: string): boolean {
  // `| 0x20` lowercases exactly the ASCII capitals among the codes that can equal a lowercase letter.
  for (let k = 0; k < name.length; k++) if ((p.code(i + k) | 0x20) !== name.charCodeAt(k)) return false;
  return endsName(p.code(i + name.length));
}

/** The index of the end tag (`</name` then a character that ends a name) that closes RAWTEXT/RCDATA element `name` whose text starts at `from` (or the page's length). */
export function rawTextEnd(p: PageChars, from: number, name: string): number {
  for (let i = p.indexOf('</', from); i >= 0; i = p.indexOf('</', i + 2)) if (nameAt(p, i + 2, name)) return i;
  return p.length;
}

/** The first `<script` (`slash`: `</script`) then a character that ends a name, at or after `from` and before `before` (-1: anywhere), or -1. */
function scriptTag(p: PageChars, from: number, before: number, slash: 'either' | 'end'): number {
  for (let i = p.indexOf('<', from); i >= 0 && (before < 0 || i < before); i = p.indexOf('<', i + 1)) {
    const s = p.code(i + 1) === 0x2f ? 1 : 0;
    if ((s === 1 || slash === 'either') && nameAt(p, i + 1 + s, 'script')) return i;
  }
  return -1;
}

/**
 * The index of the `</script` that ends a script whose text starts at `from` (or the page's
 * length): script data and its escaped and double-escaped states (HTML 13.2.5.4-13.2.5.31), by
 * what ends each.
 */
export function scriptEnd(p: PageChars, from: number): number {
  let pos = from;
  for (;;) {
    // Script data: `</script` ends the script, `<!--` enters escaped.
    let i = p.indexOf('<', pos);
    for (; i >= 0; i = p.indexOf('<', i + 1)) {
      const c = p.code(i + 1);
      if (c === 0x2f && nameAt(p, i + 2, 'script')) return i;
      if (c === 0x21 && p.code(i + 2) === 0x2d && p.code(i + 3) === 0x2d) break;
    }
    if (i < 0) return p.length;
    pos = i + 4;
    // `<!-->`, `<!--->`: escaped and out again.
    let j = pos;
    while (p.code(j) === 0x2d) j++;
    if (p.code(j) === 0x3e) { pos = j + 1; continue; }
    // Escaped: `-->` leaves, `</script` ends the script, `<script` enters double-escaped, where
    // `-->` leaves to script data and `</script` returns to escaped.
    for (;;) {
      const dashes = p.indexOf('-->', pos);
      const tag = scriptTag(p, pos, dashes, 'either');
      if (tag < 0) {
        if (dashes < 0) return p.length;
        pos = dashes + 3;
        break;
      }
      if (p.code(tag + 1) === 0x2f) return tag;
      const after = tag + 8; // `<script` and the character that ended its name
      const out = p.indexOf('-->', after);
      const end = scriptTag(p, after, out, 'end');
      if (end >= 0) { pos = end + 9; continue; }
      if (out < 0) return p.length;
      pos = out + 3;
      break;
    }
  }
}
