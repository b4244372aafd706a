/**
 * The parse5 reference for extract(): parse5-sax-parser (with its parser-feedback simulator)
 * feeding extract()'s collector, as the crawler's extraction ran until #35 swapped the tokenizer
 * for htmlparser2's (lib/html/tag-scanner.ts). Used only to check that swap: the parity test
 * (test/unit/extract-parse5-parity.test.ts) and bench/extract-parity.ts over the corpus compare
 * extract() with extractWith(parse5Scan, ...).
 */
import { SAXParser, type StartTag, type EndTag } from 'parse5-sax-parser';
import type { TagSink } from '../lib/html/tag-scanner';

/** Text concatenated until the next tag; comments and doctypes end a text, as in extract(). */
class Parse5Scanner extends SAXParser {
  private pending: string | null = null;

  constructor(private readonly sink: TagSink) {
    super();
  }

  run(html: string): void {
    this.tokenizer.write(html, true);
  }

  private check(): void {
    if (this.sink.done) this.stop();
  }

  private flushText(): void {
    if (this.pending === null) return;
    const text = this.pending;
    this.pending = null;
    this.sink.text(text);
    this.check();
  }

  override onCharacter(token: { chars: string }): void {
    this.pending = this.pending === null ? token.chars : this.pending + token.chars;
  }

  override onWhitespaceCharacter(token: { chars: string }): void {
    this.onCharacter(token);
  }

  override onNullCharacter(token: { chars: string }): void {
    this.onCharacter(token);
  }

  override onStartTag(token: StartTag): void {
    this.flushText();
    this.sink.start(token);
    this.check();
  }

  override onEndTag(token: EndTag): void {
    this.flushText();
    this.sink.end(token.tagName);
    this.check();
  }

  override onComment(): void {
    this.flushText();
  }

  override onDoctype(): void {
    this.flushText();
  }

  override onEof(): void {
    this.flushText();
    this.stop();
  }
}

export function parse5Scan(html: string | Buffer, sink: TagSink): void {
  new Parse5Scanner(sink).run(typeof html === 'string' ? html : html.toString('utf8'));
}
