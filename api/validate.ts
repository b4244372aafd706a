/**
 * Input checks for the control API, pure: each takes the parsed JSON body (unknown) or a path
 * segment and returns the clean value or throws an ApiError that becomes a 4xx JSON answer
 * `{ error: code, message, details? }`. Nothing here logs: bodies are untrusted.
 */
import type { OptOutDecision, OptOutPurpose, OptOutPurposes, OptOutScope } from '../lib/messages';
import { isRegisteredDomain, PURPOSES } from '../lib/optout-registry';
import { normalizeUrl } from '../lib/url-normalize';

export class ApiError extends Error {
  override name = 'ApiError';
  constructor(readonly status: number, readonly code: string, message: string, readonly details?: unknown) {
    super(message);
  }
}

/** Most seeds one POST /seeds may carry (a bigger list belongs in several requests). */
export const MAX_SEEDS_PER_REQUEST = 10_000;
/** Longest block or crawl-rate rule we accept: a year, after which an operator must renew it. */
export const MAX_BLOCK_MS = 366 * 24 * 3600_000;
export const MAX_MIN_DELAY_MS = 24 * 3600_000;

function object(body: unknown): Record<string, unknown> {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError(400, 'invalid_body', 'expected a JSON object');
  return body as Record<string, unknown>;
}

/**
 * A host as the crawl keys it: lower case, IDNA (punycode) form, no port, no path. Anything
 * the WHATWG URL parser would change (other than case) is refused so keys never diverge.
 */
export function parseHost(raw: string): string {
  let host: string;
  try {
    host = new URL(`http://${raw}/`).hostname;
  } catch {
    throw new ApiError(400, 'invalid_host', `not a host name: ${JSON.stringify(raw.slice(0, 100))}`);
  }
  if (host !== raw.toLowerCase() || host.length > 253 || host === '') {
    throw new ApiError(400, 'invalid_host', `not a host name (no scheme, port or path; IDNs in punycode): ${JSON.stringify(raw.slice(0, 100))}`);
  }
  return host;
}

export interface BlockInput {
  blocked_until: number;
  reason: string | null;
}

/** `{ expires_at: ISO-8601 | epoch ms }` or `{ duration_s }`, plus an optional `reason`. */
export function parseBlock(body: unknown, now: number): BlockInput {
  const b = object(body);
  const reason = optionalString(b.reason, 'reason', 500);
  let until: number;
  if (b.expires_at !== undefined) {
    until = typeof b.expires_at === 'number' ? b.expires_at : typeof b.expires_at === 'string' ? Date.parse(b.expires_at) : NaN;
    if (!Number.isFinite(until)) throw new ApiError(400, 'invalid_expiry', 'expires_at: expected an ISO 8601 time or epoch milliseconds');
  } else if (b.duration_s !== undefined) {
    if (typeof b.duration_s !== 'number' || !Number.isFinite(b.duration_s) || b.duration_s <= 0) {
      throw new ApiError(400, 'invalid_expiry', 'duration_s: expected a number of seconds > 0');
    }
    until = now + Math.round(b.duration_s * 1000);
  } else {
    throw new ApiError(400, 'invalid_expiry', 'give expires_at (ISO 8601 or epoch ms) or duration_s');
  }
  if (until <= now) throw new ApiError(400, 'invalid_expiry', 'the block would already have expired');
  if (until - now > MAX_BLOCK_MS) throw new ApiError(400, 'invalid_expiry', 'a block lasts at most 366 days; renew it later');
  return { blocked_until: until, reason };
}

export function parseCrawlRate(body: unknown): { min_delay_ms: number; reason: string | null } {
  const b = object(body);
  const d = b.min_delay_ms;
  if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > MAX_MIN_DELAY_MS) {
    throw new ApiError(400, 'invalid_crawl_rate', `min_delay_ms: expected a whole number of ms from 0 to ${MAX_MIN_DELAY_MS}`);
  }
  return { min_delay_ms: d, reason: optionalString(b.reason, 'reason', 500) };
}

export interface OptOutInput {
  scope?: OptOutScope;
  purposes: Partial<OptOutPurposes>;
}

/**
 * An opt-out change for `subject`: `{ purposes: { crawl?, search_index?, ai_training?: "allow" |
 * "deny" }, scope?: "host" | "registered_domain" }` (the registry record's own shape), or, for
 * the operator's API, the first version's `{ purpose, allowed }`.
 */
export function parseOptOut(body: unknown, subject: string, opts: { legacy?: boolean } = {}): OptOutInput {
  const b = object(body);
  if (opts.legacy && b.purposes === undefined) {
    if (typeof b.purpose !== 'string' || !PURPOSES.includes(b.purpose as OptOutPurpose)) {
      throw new ApiError(400, 'invalid_purpose', `purpose: expected one of ${PURPOSES.join(', ')} (or give purposes: {…})`);
    }
    if (typeof b.allowed !== 'boolean') throw new ApiError(400, 'invalid_body', 'allowed: expected true or false');
    return { purposes: { [b.purpose]: b.allowed ? 'allow' : 'deny' } };
  }
  const p = b.purposes;
  if (typeof p !== 'object' || p === null || Array.isArray(p) || Object.keys(p).length === 0) {
    throw new ApiError(400, 'invalid_purposes', `purposes: expected an object of ${PURPOSES.join(', ')} to "allow" or "deny"`);
  }
  const purposes: Partial<OptOutPurposes> = {};
  for (const [k, v] of Object.entries(p as Record<string, unknown>)) {
    if (!PURPOSES.includes(k as OptOutPurpose)) throw new ApiError(400, 'invalid_purpose', `purposes.${k.slice(0, 40)}: not one of ${PURPOSES.join(', ')}`);
    if (v !== 'allow' && v !== 'deny') throw new ApiError(400, 'invalid_purposes', `purposes.${k}: expected "allow" or "deny"`);
    purposes[k as OptOutPurpose] = v as OptOutDecision;
  }
  const out: OptOutInput = { purposes };
  if (b.scope !== undefined) {
    if (b.scope !== 'host' && b.scope !== 'registered_domain') throw new ApiError(400, 'invalid_scope', 'scope: expected "host" or "registered_domain"');
    if (b.scope === 'registered_domain' && !isRegisteredDomain(subject)) {
      throw new ApiError(400, 'invalid_scope', `scope registered_domain needs a registered domain; ${subject} is not one`);
    }
    out.scope = b.scope;
  }
  return out;
}

/** `{ "host": … }` of POST /webmaster/v1/sites. */
export function parseSiteHost(body: unknown): string {
  const b = object(body);
  if (typeof b.host !== 'string' || b.host === '') throw new ApiError(400, 'invalid_host', 'host: expected a host name such as shop.example.com');
  return parseHost(b.host);
}

export interface WebmasterRate {
  max_requests_per_second: number;
  until: number;
}

/** `{ "max_requests_per_second": 2, "until": "2026-10-31T00:00:00Z" }`: a rate in (0, max] and an end within 366 days. */
export function parseWebmasterRate(body: unknown, now: number, maxRps: number): WebmasterRate {
  const b = object(body);
  const r = b.max_requests_per_second;
  const slowest = 1000 / MAX_MIN_DELAY_MS;
  if (typeof r !== 'number' || !Number.isFinite(r) || r < slowest || r > maxRps) {
    throw new ApiError(400, 'invalid_crawl_rate', `max_requests_per_second: expected a number from ${slowest.toPrecision(2)} (one a day) to ${maxRps}`);
  }
  if (typeof b.until !== 'string') throw new ApiError(400, 'invalid_until', 'until: expected an ISO 8601 time such as 2026-10-31T00:00:00Z (the rate is dropped then)');
  const until = Date.parse(b.until);
  if (!Number.isFinite(until) || !/^\d{4}-\d{2}-\d{2}T/.test(b.until)) throw new ApiError(400, 'invalid_until', 'until: expected an ISO 8601 time such as 2026-10-31T00:00:00Z');
  if (until <= now) throw new ApiError(400, 'invalid_until', 'until: the time has already passed');
  if (until - now > MAX_BLOCK_MS) throw new ApiError(400, 'invalid_until', 'until: at most 366 days ahead; set it again later');
  return { max_requests_per_second: r, until };
}

/** All seeds normalised, or a 400 naming every bad one (nothing is sent unless all are good). */
export function parseSeeds(body: unknown): string[] {
  const b = object(body);
  if (!Array.isArray(b.urls) || b.urls.length === 0) throw new ApiError(400, 'invalid_body', 'urls: expected a non-empty array of URLs');
  if (b.urls.length > MAX_SEEDS_PER_REQUEST) throw new ApiError(400, 'too_many_urls', `at most ${MAX_SEEDS_PER_REQUEST} URLs per request`);
  const urls: string[] = [];
  const invalid: Array<{ index: number; reason: string; detail: string }> = [];
  b.urls.forEach((u: unknown, index) => {
    if (typeof u !== 'string') return void invalid.push({ index, reason: 'invalid-url', detail: 'not a string' });
    const n = normalizeUrl(u);
    if (n.ok) urls.push(n.url);
    else invalid.push({ index, reason: n.reason, detail: n.detail });
  });
  if (invalid.length) throw new ApiError(400, 'invalid_url', `${invalid.length} invalid URL(s); nothing was seeded`, { invalid: invalid.slice(0, 100) });
  return urls;
}

function optionalString(v: unknown, name: string, max: number): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > max) throw new ApiError(400, 'invalid_body', `${name}: expected a string of at most ${max} characters`);
  return v;
}
