/** lib/redirect-hops: the hop counter that travels with redirect targets (#5: at most 5 redirects). */
import { MAX_REDIRECTS, nextRedirectHop, redirectField } from '../../lib/redirect-hops';

describe('redirect hop limit', () => {
  it.each([
    [undefined, 1],
    [0, 1],
    [1, 2],
    [4, 5],
    [5, null],
    [9, null],
  ])('a redirect answered at hop %p gives its target hop %p', (hops, next) => {
    expect(nextRedirectHop(hops)).toBe(next);
  });

  it('allows exactly MAX_REDIRECTS hops, so a chain costs at most MAX_REDIRECTS + 1 requests', () => {
    let hops: number | undefined;
    let requests = 0;
    for (let i = 0; i < 100; i++) {
      requests++;
      const next = nextRedirectHop(hops);
      if (next === null) break;
      hops = next;
    }
    expect(MAX_REDIRECTS).toBe(5);
    expect(requests).toBe(6);
  });

  it('adds the field only for redirect targets, so other messages stay as they were', () => {
    expect(redirectField(undefined)).toEqual({});
    expect(redirectField(0)).toEqual({});
    expect(redirectField(3)).toEqual({ redirects: 3 });
  });
});
