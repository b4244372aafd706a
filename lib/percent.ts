/** Percent-encoding primitives shared by URL normalisation and robots.txt matching (RFC 3986 §2.1). */

export const HEX = '0123456789ABCDEF';

/** Value of one hex digit's char code, or -1. */
export function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** `%XX` with upper-case hex digits. */
export function pct(byte: number): string {
  return '%' + HEX[byte >> 4] + HEX[byte & 15];
}
