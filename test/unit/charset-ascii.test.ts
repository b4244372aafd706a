import { TextDecoder } from 'node:util';
import { decodeBody } from '../../lib/html/charset';

describe('decodeBody: ASCII bodies read as Latin-1', () => {
  const ascii = Buffer.from('<!doctype html><title>A &amp; B</title><p>plain text\r\n\t~ {}</p>\x00\x7f', 'latin1');

  it.each(['text/html; charset=utf-8', 'text/html; charset=windows-1252', 'text/html; charset=iso-8859-1', null])('the same text as TextDecoder (%s)', (ct) => {
    const { text, charset } = decodeBody(ascii, ct);
    expect(text).toBe(new TextDecoder(charset).decode(ascii));
  });

  it('bytes past 0x7f still go through the decoder of the charset', () => {
    expect(decodeBody(Buffer.from([0x61, 0x80]), 'text/html; charset=windows-1252').text).toBe('a\u20ac');
    expect(decodeBody(Buffer.from([0x61, 0xc3, 0xa9]), 'text/html; charset=utf-8').text).toBe('aé');
    expect(decodeBody(Buffer.from([0x61, 0xff]), 'text/html; charset=utf-8').text).toBe('a\ufffd');
    expect(decodeBody(Buffer.from([0xef, 0xbb, 0xbf, 0x61]), null).text).toBe('a');
  });
});
