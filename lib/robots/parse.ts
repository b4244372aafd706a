// robots.txt parser (RFC 9309 §2.1, §2.2). Pure: bytes or text in, rule groups out.

import { canonicalOctets, compilePattern } from './match';

export interface Rule {
  directive: 'allow' | 'disallow';
  /** The pattern as written in the file (for `crawl explain`). */
  pattern: string;
  /** 1-based line number in the file. */
  line: number;
  /** Canonical octet form; its length is the rule's specificity (RFC 9309 §2.2.2). */
  canonical: string;
  parts: string[];
  anchored: boolean;
}

export interface Group {
  /** Lower-cased product tokens of the group's user-agent lines; "*" for the global group. */
  agents: string[];
  rules: Rule[];
  /** Crawl-delay in seconds (not RFC 9309: a widespread extension, honoured as policy). */
  crawlDelaySec: number | null;
}

/**
 * Parsed robots.txt. Treat as opaque: build it with `parseRobots`, read it with
 * `isAllowed`, `crawlDelayMs` and `sitemaps`. The fields may change without notice.
 */
export interface RobotsRules {
  readonly groups: readonly Group[];
  readonly sitemaps: readonly string[];
}

/** RFC 9309 §2.5: "The parsing limit MUST be at least 500 kibibytes." */
export const DEFAULT_MAX_BYTES = 500 * 1024;

type Directive = 'user-agent' | 'allow' | 'disallow' | 'sitemap' | 'crawl-delay';

// Directive names are case-insensitive (RFC 9309 §2.1). RFC §2.2.4 lets crawlers be lenient
// with records; we accept the misspellings google/robotstxt accepts (robots.cc), because a
// typo in "disallow" would otherwise silently open a site up.
const DIRECTIVES: ReadonlyMap<string, Directive> = new Map<string, Directive>([
  ['user-agent', 'user-agent'],
  ['useragent', 'user-agent'],
  ['user agent', 'user-agent'],
  ['allow', 'allow'],
  ['disallow', 'disallow'],
  ['dissallow', 'disallow'],
  ['dissalow', 'disallow'],
  ['disalow', 'disallow'],
  ['diasllow', 'disallow'],
  ['disallaw', 'disallow'],
  ['sitemap', 'sitemap'],
  ['site-map', 'sitemap'],
  ['crawl-delay', 'crawl-delay'],
  ['crawldelay', 'crawl-delay'],
]);

const LINE_BREAK = /\r\n|\r|\n/;
const CRAWL_DELAY = /^(?:\d+(?:\.\d*)?|\.\d+)$/;
const PRODUCT_TOKEN_PREFIX = /^[A-Za-z_-]+/;

function isWs(c: number): boolean {
  // RFC 9309 WS is space and tab; \v and \f are trimmed too, like isspace() in google/robotstxt.
  // Not String#trim: it would also strip U+FEFF, which is only a BOM at the start of the file.
  return c === 0x20 || c === 0x09 || c === 0x0b || c === 0x0c;
}

function trimWs(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && isWs(s.charCodeAt(a))) a++;
  while (b > a && isWs(s.charCodeAt(b - 1))) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

function hasWs(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (isWs(s.charCodeAt(i))) return true;
  return false;
}

/**
 * Token a user-agent line's value names: "*" for the global group, otherwise the leading
 * run of [A-Za-z_-] lower-cased ("FooBot/2.1" and "Foo Bar" name "foobot" / "foo", as in
 * google/robotstxt). A value with no such prefix yields "" and matches no crawler.
 */
function agentOfLine(value: string): string {
  if (value === '*' || (value.charCodeAt(0) === 0x2a && isWs(value.charCodeAt(1)))) return '*';
  const m = PRODUCT_TOKEN_PREFIX.exec(value);
  return m ? m[0].toLowerCase() : '';
}

/** Splits a line into key and value; null when the line is not a key-value pair. */
function splitLine(line: string): { key: Directive | null; value: string } | null {
  const colon = line.indexOf(':');
  if (colon >= 0) {
    return {
      key: DIRECTIVES.get(trimWs(line.slice(0, colon)).toLowerCase()) ?? null,
      value: trimWs(line.slice(colon + 1)),
    };
  }
  // Missing colon, handled like google/robotstxt: "disallow /path" means "disallow: /path",
  // but only when the key is a known directive and the value is a single word; anything
  // else is unparseable and ignored (RFC 9309 §2.3.1.5: use the parseable rules).
  let sp = 0;
  while (sp < line.length && !isWs(line.charCodeAt(sp))) sp++;
  if (sp === line.length) return null;
  const key = DIRECTIVES.get(line.slice(0, sp).toLowerCase()) ?? null;
  const value = trimWs(line.slice(sp));
  if (key === null || hasWs(value)) return null;
  return { key, value };
}

/** Bytes to text: partial or full UTF-8 BOM skipped, content past `maxBytes` ignored. */
function decode(body: string | Buffer, maxBytes: number): string {
  let buf: Buffer;
  if (typeof body === 'string') {
    // Cheap path: a string whose UTF-16 length * 3 fits cannot exceed the limit in UTF-8.
    if (body.length * 3 <= maxBytes || Buffer.byteLength(body, 'utf8') <= maxBytes) {
      return body.charCodeAt(0) === 0xfeff ? body.slice(1) : body;
    }
    buf = Buffer.from(body, 'utf8');
  } else {
    buf = body;
  }
  // google/robotstxt also accepts a truncated BOM ("\xEF", "\xEF\xBB").
  let start = 0;
  if (buf[0] === 0xef) {
    start = 1;
    if (buf[1] === 0xbb) {
      start = 2;
      if (buf[2] === 0xbf) start = 3;
    }
  }
  if (buf.length - start <= maxBytes) return buf.toString('utf8', start);
  let text = buf.toString('utf8', start, start + maxBytes);
  // The limit may cut a line in two. Drop the partial line: a cut "Allow: /public-files"
  // reads as "Allow: /pub" and would allow more than the site owner wrote.
  const lastBreak = Math.max(text.lastIndexOf('\n'), text.lastIndexOf('\r'));
  text = lastBreak >= 0 ? text.slice(0, lastBreak + 1) : '';
  return text;
}

export function parseRobotsText(body: string | Buffer, maxBytes: number = DEFAULT_MAX_BYTES): RobotsRules {
  const text = decode(body, maxBytes);
  const lines = text.split(LINE_BREAK);
  const groups: Group[] = [];
  const sitemaps: string[] = [];
  const seenSitemaps = new Set<string>();
  let current: Group | null = null;
  // True while we are in the run of user-agent lines that opens a group (RFC 9309 ABNF:
  // startgroupline *(startgroupline / emptyline)). A rule ends the run; the next user-agent
  // line then starts a new group. Empty, unknown and sitemap lines neither end the run nor
  // the group (RFC 9309 §2.2.4: "a Sitemaps record MUST NOT terminate a group").
  let inAgentRun = false;

  for (let idx = 0; idx < lines.length; idx++) {
    let line = lines[idx];
    const hash = line.indexOf('#');
    if (hash >= 0) line = line.slice(0, hash);
    line = trimWs(line);
    if (line === '') continue;
    const kv = splitLine(line);
    if (kv === null || kv.key === null) continue;
    const lineNo = idx + 1;

    switch (kv.key) {
      case 'user-agent': {
        if (current === null || !inAgentRun) {
          current = { agents: [], rules: [], crawlDelaySec: null };
          groups.push(current);
          inAgentRun = true;
        }
        current.agents.push(agentOfLine(kv.value));
        break;
      }
      case 'allow':
      case 'disallow': {
        // Rules before the first user-agent line belong to no group: ignored (RFC 9309 §2.2.2).
        if (current === null) break;
        inAgentRun = false;
        // An empty value matches nothing: "Disallow:" allows everything (RFC 9309 §2.2.2 ABNF
        // empty-pattern), and an empty "Allow:" adds nothing.
        if (kv.value === '') break;
        const canonical = canonicalOctets(kv.value, true);
        const { parts, anchored } = compilePattern(canonical);
        current.rules.push({ directive: kv.key, pattern: kv.value, line: lineNo, canonical, parts, anchored });
        break;
      }
      case 'crawl-delay': {
        if (current === null) break;
        inAgentRun = false;
        if (current.crawlDelaySec === null && CRAWL_DELAY.test(kv.value)) {
          const sec = Number(kv.value);
          if (Number.isFinite(sec)) current.crawlDelaySec = sec;
        }
        break;
      }
      case 'sitemap': {
        // Sitemap records are global wherever they appear (RFC 9309 §2.2.4).
        if (kv.value !== '' && !seenSitemaps.has(kv.value)) {
          seenSitemaps.add(kv.value);
          sitemaps.push(kv.value);
        }
        break;
      }
    }
  }
  return { groups, sitemaps };
}
