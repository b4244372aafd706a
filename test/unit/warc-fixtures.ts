/** HttpCaptures for the WARC tests: a page, a binary body, a truncated one, a 304. */
import type { HttpCapture } from '../../connectors/types';

export function capture(url: string, over: Partial<HttpCapture> = {}): HttpCapture {
  const u = new URL(url);
  const body = over.body ?? Buffer.from(`<html><body><h1>${url}</h1></body></html>`);
  return {
    url,
    ip: '192.0.2.10',
    status: 200,
    statusText: 'OK',
    headers: [
      ['Content-Type', 'text/html; charset=utf-8'],
      ['Content-Encoding', 'gzip'],
      ['Transfer-Encoding', 'chunked'],
      ['Server', 'fixture'],
    ],
    requestHead: `GET ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nUser-Agent: KCrawl/0.1\r\nAccept-Encoding: gzip\r\n\r\n`,
    body,
    truncated: false,
    startedAt: Date.UTC(2026, 8, 27, 3, 14, 7, 250),
    elapsedMs: 42,
    responseMs: 40,
    ...over,
  };
}

/** Every byte value, so any text-mode mangling shows. */
export const BINARY_BODY = Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7 + 3) % 256));
