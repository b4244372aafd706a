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
const endTagPatterns = new Map<string, RegExp>();

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

/** The index of the end tag that closes RAWTEXT/RCDATA element `name` whose text starts at `from` (or the page's length). */
export function rawTextEnd(html: string, from: number, name: string): number {
  let re = endTagPatterns.get(name);
  if (re === undefined) endTagPatterns.set(name, re = new RegExp(`</${name}[\\t\\n\\f\\r />]`, 'gi'));
  re.lastIndex = from;
  return re.exec(html)?.index ?? html.length;
}

// Script data and its escaped / double-escaped states (HTML 13.2.5.4-13.2.5.31), by what ends each.
const SCRIPT_DATA = /<(?:\/script[\t\n\f\r />]|!--)/gi;
const SCRIPT_ESCAPED = /-->|<(\/?)script[\t\n\f\r />]/gi;
const SCRIPT_DOUBLE_ESCAPED = /-->|<\/script[\t\n\f\r />]/gi;
const DASHES_GT = /-*>/y;

/** The index of the `</script` that ends a script whose text starts at `from` (or the page's length). */
export function scriptEnd(html: string, from: number): number {
  let pos = from;
  for (;;) {
    SCRIPT_DATA.lastIndex = pos;
    let m = SCRIPT_DATA.exec(html);
    if (m === null) return html.length;
    if (m[0][1] === '/') return m.index;
    pos = m.index + 4;
    DASHES_GT.lastIndex = pos;
    if (DASHES_GT.test(html)) { pos = DASHES_GT.lastIndex; continue; } // `<!-->`, `<!--->`: escaped and out again
    // Escaped: `-->` leaves, `</script` ends the script, `<script` enters double-escaped, where
    // `-->` leaves to script data and `</script` returns to escaped.
    for (;;) {
      SCRIPT_ESCAPED.lastIndex = pos;
      m = SCRIPT_ESCAPED.exec(html);
      if (m === null) return html.length;
      if (m[0] === '-->') { pos = m.index + 3; break; }
      if (m[1] === '/') return m.index;
      SCRIPT_DOUBLE_ESCAPED.lastIndex = m.index + m[0].length;
      m = SCRIPT_DOUBLE_ESCAPED.exec(html);
      if (m === null) return html.length;
      pos = m.index + m[0].length;
      if (m[0] === '-->') break;
    }
  }
}
