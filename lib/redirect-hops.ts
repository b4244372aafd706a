/**
 * The redirect hop limit (#5: at most 5 redirects). Redirects are not followed inline: a 3xx
 * is stored and its Location goes back through crawl.links, so a hop counter has to travel
 * with the target (Link -> Candidate -> UrlState -> FetchRequest, field `redirects`). The
 * seen test ends a loop that revisits a URL; this counter ends a chain of ever-new URLs
 * (/r/1 -> /r/2 -> …), which the seen test cannot.
 */

export const MAX_REDIRECTS = 5;

export const TOO_MANY_REDIRECTS = 'too-many-redirects';

/**
 * The hop count to give the Location target of a redirect answered to a request that was
 * itself reached after `redirects` hops, or null when following it would exceed the limit.
 * The first request is hop 0, so at most MAX_REDIRECTS + 1 requests are made per chain.
 */
export function nextRedirectHop(redirects: number | undefined, max = MAX_REDIRECTS): number | null {
  const next = (redirects ?? 0) + 1;
  return next > max ? null : next;
}

/** `{ redirects: n }` only when n > 0, so messages of URLs reached without a redirect stay as they were. */
export function redirectField(redirects: number | undefined): { redirects?: number } {
  return redirects ? { redirects } : {};
}
