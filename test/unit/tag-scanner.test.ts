import { scanTags, type StartTag, type TagSink } from '../../lib/html/tag-scanner';

/** Records what a scan reports; drops text (wantsText false) inside <script>/<style>, as extract() does. */
class Recorder implements TagSink {
  readonly events: string[] = [];
  private skip = 0;
  readonly done = false;
  constructor(private readonly dropsText: boolean) {}
  get wantsText(): boolean { return !this.dropsText || this.skip === 0; }
  start(t: StartTag): void {
    if (t.tagName === 'script' || t.tagName === 'style') this.skip++;
    this.events.push(`<${t.tagName}${t.attrs.map((a) => ` ${a.name}=${a.value}`).join('')}>`);
  }
  end(name: string): void {
    if ((name === 'script' || name === 'style') && this.skip > 0) this.skip--;
    this.events.push(`</${name}>`);
  }
  text(s: string): void { this.events.push(JSON.stringify(s)); }
}

const scan = (html: string, dropsText = false, attrNames?: ReadonlySet<string>): string[] => {
  const r = new Recorder(dropsText);
  scanTags(html, r, new Set(['a', 'font']), attrNames);
  return r.events;
};

describe('tag-scanner', () => {
  it('keeps only the attributes named in attrNames on HTML elements, all of them on SVG and MathML ones', () => {
    const html = '<a class=x HREF=/a rel=nofollow data-y="&amp;">t</a><svg><a xlink:href=/s class=z>u</a><font color=red></font></svg>';
    expect(scan(html, false, new Set(['href', 'rel']))).toEqual([
      '<a href=/a rel=nofollow>', '"t"', '</a>', '<svg>', '<a href=/s class=z>', '"u"', '</a>', '<font color=red>', '</font>', '</svg>',
    ]);
    expect(scan(html)[0]).toBe('<a class=x href=/a rel=nofollow data-y=&>');
  });

  it('does not report text the sink drops (wantsText false), and reports the rest as before', () => {
    const html = '<p>a &amp; b<script>if (x < 1) s = "\0</p>";</script>c<style>p{}</style>d</p>';
    const all = scan(html);
    expect(all).toContain('"if (x < 1) s = \\"\uFFFD</p>\\";"');
    expect(scan(html, true)).toEqual(all.filter((e) => !e.startsWith('"if') && e !== '"p{}"'));
  });

  it('a dropped text still takes the first line feed after <pre> that parse5 would drop', () => {
    // The script's text is where the pending drop applies (so it is read even though dropped), and the text after it keeps its line feed.
    const html = '<pre><script>\nx</script>\ny</pre>';
    expect(scan(html)).toContain('"\\ny"');
    expect(scan(html, true)).toEqual(scan(html));
  });
});
