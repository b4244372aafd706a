/**
 * parse5's spec tokenizer, taking runs of ordinary characters whole.
 *
 * parse5 7 steps its state machine once per character: in the data state each character of
 * text costs a state dispatch, a String.fromCodePoint and a string append, which is most of what
 * a pass over a text-heavy page costs. Where the state machine would do nothing but append
 * character after character (text, title/textarea RCDATA, script and style content, quoted
 * attribute values), this subclass finds the end of the run with charCodeAt and appends the
 * slice in one step. The run stops before any character a state treats specially ('<', '&',
 * NUL, the closing quote), before CR and LF (line bookkeeping and CR/LF normalisation stay in
 * parse5's preprocessor) and before surrogates (pairing), so everything outside a run goes
 * through parse5's own code unchanged and every token has the same content as before.
 *
 * One difference, invisible to a SAX consumer: a text run that starts with a non-space
 * character is one CHARACTER token even where it holds spaces or tabs, where parse5 would
 * alternate CHARACTER and WHITESPACE_CHARACTER tokens. parse5-sax-parser concatenates both
 * kinds into the same text event, and its parser-feedback simulator only looks at a token that
 * starts with a line feed, which a run never does.
 *
 * Source locations are not maintained inside runs: use this tokenizer only without
 * sourceCodeLocationInfo. The overridden methods are parse5 7's internals (the version is pinned
 * in package-lock.json); test/unit/fast-tokenizer.test.ts compares its tokens with parse5's own
 * over hostile and ordinary input so an upgrade that changes them fails loudly.
 */
import { Token, Tokenizer, type TokenHandler, type TokenizerOptions } from 'parse5';

const LT = 0x3c;
const AMP = 0x26;
const QUOTE = 0x22;
const APOS = 0x27;
const SPACE = 0x20;

/** The internals a run touches (present on parse5 7's Tokenizer, not in its public typings). */
interface TokenizerInternals {
  preprocessor: { html: string; pos: number };
  consumedAfterSnapshot: number;
  currentAttr: { value: string };
  _appendCharToCurrentCharacterToken(type: Token.TokenType, chars: string): void;
}
type StateFn = (this: Tokenizer, cp: number) => void;

/**
 * The stop characters of a run as a sticky regular expression: a run is what `[^stops]*` matches
 * from a position. V8 compiles the class to a machine-code loop, which scans a text about twice
 * as fast as a charCodeAt loop in JavaScript (the run scan was the biggest item of a page's pass).
 * Without the `u` flag the class works on UTF-16 code units, so \ud800-\udfff is every surrogate.
 */
function runPattern(stop1: number, stop2: number): RegExp {
  const hex = (c: number): string => `\\u${c.toString(16).padStart(4, '0')}`;
  return new RegExp(`[^${hex(stop1)}${hex(stop2)}\\0\\n\\r\\ud800-\\udfff]*`, 'y');
}

/** First index from `from` holding a stop character of `run` (or the end of the input). */
function runEnd(html: string, from: number, run: RegExp): number {
  run.lastIndex = from;
  run.test(html); // always matches (possibly empty), leaving lastIndex at the run's end
  return run.lastIndex;
}

/** Can a run start at `cp`? Not at whitespace (token typing), a special character, EOF or a non-BMP code point. */
function startsRun(cp: number, stop1: number, stop2: number): boolean {
  return cp > SPACE && cp !== stop1 && cp !== stop2 && (cp < 0xd800 || (cp > 0xdfff && cp <= 0xffff));
}

/**
 * Consume the run that starts at the character just consumed (cp), if it is longer than that
 * character; `append` receives it. Returns false when parse5 should handle cp itself.
 */
function consumeRun(t: TokenizerInternals, cp: number, stop1: number, stop2: number, run: RegExp, append: (t: TokenizerInternals, chars: string) => void): boolean {
  if (!startsRun(cp, stop1, stop2)) return false;
  const pre = t.preprocessor;
  const start = pre.pos;
  const html = pre.html;
  if (html.charCodeAt(start) !== cp) return false; // CR normalised to LF, or anything else unusual
  const end = runEnd(html, start + 1, run);
  if (end === start + 1) return false;
  // The position moves past the run before the run is appended: appending can emit the pending
  // character token of another kind, and parse5 then drops the input read so far (once past its
  // 64 KiB waterline: html = html.substring(pos), pos = 0). Moved afterwards, by offsets into the
  // string as it was, the position jumped as far past the run as was dropped, and the tokenizer
  // skipped that much of the page (cnet.html lost its body). The next _consume() reads the
  // character after the run; the run held no CR, LF or surrogate, so the preprocessor's line and
  // gap bookkeeping has nothing to record for it.
  t.consumedAfterSnapshot += end - 1 - start;
  pre.pos = end - 1;
  append(t, html.slice(start, end));
  return true;
}

const appendText = (t: TokenizerInternals, chars: string): void => t._appendCharToCurrentCharacterToken(Token.TokenType.CHARACTER, chars);
const appendAttr = (t: TokenizerInternals, chars: string): void => { t.currentAttr.value += chars; };

export class FastTokenizer extends Tokenizer {
  constructor(options: TokenizerOptions, handler: TokenHandler) {
    if (options.sourceCodeLocationInfo) throw new Error('FastTokenizer does not track source locations');
    super(options, handler);
  }
}

const base = Tokenizer.prototype as unknown as Record<string, StateFn>;
const fast = FastTokenizer.prototype as unknown as Record<string, StateFn>;

function withRuns(name: string, stop1: number, stop2: number, append: (t: TokenizerInternals, chars: string) => void): void {
  const original = base[name];
  if (typeof original !== 'function') throw new Error(`parse5 Tokenizer has no ${name}: FastTokenizer needs parse5 7`);
  const run = runPattern(stop1, stop2);
  fast[name] = function (this: Tokenizer, cp: number): void {
    if (!consumeRun(this as unknown as TokenizerInternals, cp, stop1, stop2, run, append)) original.call(this, cp);
  };
}

withRuns('_stateData', LT, AMP, appendText);
withRuns('_stateRcdata', LT, AMP, appendText);
withRuns('_stateRawtext', LT, LT, appendText);
withRuns('_stateScriptData', LT, LT, appendText);
withRuns('_stateAttributeValueDoubleQuoted', QUOTE, AMP, appendAttr);
withRuns('_stateAttributeValueSingleQuoted', APOS, AMP, appendAttr);
