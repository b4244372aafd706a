/**
 * The webmaster API, /webmaster/v1 (seed 001, R3.3): a site owner with a webmaster account's
 * bearer token claims a host, proves control of it with a DNS TXT record, then sets our rate for
 * it and its opt-outs, and reads what we fetched from it in the last day.
 *
 * - Every call needs `Authorization: Bearer <account token>`; only the token's SHA-256 is kept.
 * - Each account gets `webmasterRequestsPerMinute` calls a minute (429 and Retry-After past it).
 * - A rate or an opt-out needs a verified site. A rate is a ceiling: the frontier and every fetch
 *   process use it in place of our default least gap (lib/host-policy.ts leastGapMs) until
 *   `until`, and Crawl-delay, slow answers and 429/503 back-off only slow us further.
 * - Every change is written with its audit row (crawl.webmaster-audit: who and when) in the
 *   same produce; a refused request changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TxtLookup } from '../connectors/dns-txt';
import { DnsLookupError } from '../connectors/dns-txt';
import { hostPolicyKey } from '../lib/host-policy';
import type { HostPolicyMsg, WebmasterAccountMsg, WebmasterSiteMsg } from '../lib/messages';
import { optOutWrite, PURPOSES } from '../lib/optout-registry';
import { auditRow, newVerificationToken, siteKey, tokenHash, verificationRecord } from '../lib/webmaster';
import type { OutRecord } from '../runtime/stage';
import type { CrawlView } from './crawl-view';
import { readChecked, sendJson, type Router } from './http';
import type { RateLimiter } from './rate-limit';
import { ApiError, parseHost, parseOptOut, parseSiteHost, parseWebmasterRate } from './validate';

/** Most sites one account may claim. */
export const MAX_SITES_PER_ACCOUNT = 1000;
/** Most TXT records quoted back when verification fails. */
const FOUND_SHOWN = 10;

export interface WebmasterDeps {
  view: CrawlView;
  /** Produce records durably to the log (Kafka, or `crawl run`'s embedded log). */
  send: (outs: OutRecord[]) => Promise<void>;
  now: () => number;
  maxBodyBytes: number;
  lookupTxt: TxtLookup;
  /** The name in the TXT record, `<name>-verify=<token>` (CRAWL_WEBMASTER_TXT_NAME). */
  txtName: string;
  /** Our default least gap between two requests to a host (CRAWL_MIN_HOST_DELAY_MS). */
  defaultGapMs: number;
  maxRequestsPerSecond: number;
  limiter: RateLimiter;
}

export function webmasterRoutes(router: Router, d: WebmasterDeps): void {
  const defaultRps = 1000 / d.defaultGapMs;

  /** The caller's account, or a 401/403/429. Counted against its rate before anything else. */
  const account = (req: IncomingMessage, res: ServerResponse): WebmasterAccountMsg => {
    const header = req.headers.authorization;
    if (!header) throw new ApiError(401, 'missing_token', 'the webmaster API needs Authorization: Bearer <webmaster account token>');
    const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
    const a = m ? d.view.webmaster.accountByTokenHash(tokenHash(m[1])) : undefined;
    if (!a) throw new ApiError(403, 'invalid_token', 'the bearer token is not a webmaster account token');
    if (a.disabled_at !== null) throw new ApiError(403, 'account_disabled', 'this webmaster account is disabled');
    const wait = d.limiter.take(a.id, d.now());
    if (wait > 0) {
      res.setHeader('retry-after', String(wait));
      throw new ApiError(429, 'rate_limited', `too many requests for this account; try again in ${wait} s`, { retry_after_s: wait });
    }
    return a;
  };
  const body = <T>(req: IncomingMessage, check: (v: unknown) => T): Promise<T> => readChecked(req, d.maxBodyBytes, check);
  const siteOf = (a: WebmasterAccountMsg, rawHost: string): WebmasterSiteMsg => {
    const host = parseHost(rawHost);
    const site = d.view.webmaster.site(host, a.id);
    if (!site) throw new ApiError(404, 'unknown_site', `${host} is not one of this account's sites; add it with POST /webmaster/v1/sites`);
    return site;
  };
  const verified = (site: WebmasterSiteMsg, what: string): void => {
    if (site.status !== 'VERIFIED') {
      throw new ApiError(403, 'site_not_verified', `${what} needs a verified site: publish the TXT record ${site.record} at ${site.host}, then POST /webmaster/v1/sites/${site.host}/verify`);
    }
  };
  const write = async (outs: OutRecord[]): Promise<void> => {
    await d.send(outs);
    d.view.applyOwn(outs);
  };
  const audit = (a: WebmasterAccountMsg, action: string, host: string, detail: Record<string, unknown>): OutRecord =>
    ({ topic: 'webmasterAudit', key: host, host, value: auditRow(`account:${a.id}`, action, host, detail, d.now()) });
  const siteRow = (s: WebmasterSiteMsg): OutRecord => ({ topic: 'webmasterSites', key: siteKey(s.host, s.account), host: s.host, value: s });
  const verification = (s: WebmasterSiteMsg): { method: 'dns_txt'; record: string } => ({ method: 'dns_txt', record: s.record });

  router
    .add('POST', '/webmaster/v1/sites', async (req, res) => {
      const a = account(req, res);
      const host = await body(req, parseSiteHost);
      const existing = d.view.webmaster.site(host, a.id);
      if (existing) return sendJson(res, 200, { host, verification: verification(existing), status: existing.status });
      if (d.view.webmaster.sitesOf(a.id) >= MAX_SITES_PER_ACCOUNT) throw new ApiError(409, 'too_many_sites', `an account may claim at most ${MAX_SITES_PER_ACCOUNT} sites`);
      const token = newVerificationToken();
      const site: WebmasterSiteMsg = {
        host, account: a.id, token, record: verificationRecord(d.txtName, token), status: 'PENDING', created_at: d.now(), verified_at: null,
      };
      await write([siteRow(site), audit(a, 'add-site', host, { record: site.record })]);
      sendJson(res, 201, { host, verification: verification(site), status: site.status });
    })
    .add('GET', '/webmaster/v1/sites', (req, res) => {
      const a = account(req, res);
      sendJson(res, 200, { sites: d.view.webmaster.sitesFor(a.id).map((s) => ({ host: s.host, status: s.status, verification: verification(s) })) });
    })
    .add('POST', '/webmaster/v1/sites/{host}/verify', async (req, res, m) => {
      const a = account(req, res);
      const site = siteOf(a, m.params.host);
      if (site.status === 'VERIFIED') return sendJson(res, 200, { host: site.host, status: 'VERIFIED', verified_at: iso(site.verified_at), verification: verification(site) });
      let found: string[];
      try {
        found = await d.lookupTxt(site.host);
      } catch (err) {
        const code = err instanceof DnsLookupError ? err.code : 'EUNKNOWN';
        throw new ApiError(502, 'dns_unavailable', `could not look up TXT records of ${site.host} (${code}); nothing changed, try again later`);
      }
      if (!found.includes(site.record)) {
        const why = found.length === 0 ? `${site.host} has no TXT record` : `none of the ${found.length} TXT record(s) at ${site.host} is ${site.record}`;
        throw new ApiError(422, 'verification_failed', `${why}; publish it and try again (DNS changes can take a while to appear). Still PENDING`, {
          expected: site.record, found: found.slice(0, FOUND_SHOWN).map((t) => t.slice(0, 255)), status: 'PENDING',
        });
      }
      const done: WebmasterSiteMsg = { ...site, status: 'VERIFIED', verified_at: d.now() };
      await write([siteRow(done), audit(a, 'verify-site', site.host, { record: site.record })]);
      sendJson(res, 200, { host: site.host, status: 'VERIFIED', verified_at: iso(done.verified_at), verification: verification(done) });
    })
    .add('PUT', '/webmaster/v1/sites/{host}/crawl-rate', async (req, res, m) => {
      const a = account(req, res);
      const site = siteOf(a, m.params.host);
      const r = await body(req, (v) => parseWebmasterRate(v, d.now(), d.maxRequestsPerSecond));
      verified(site, r.max_requests_per_second > defaultRps ? `raising our rate above the default (${defaultRps} requests/s)` : 'setting a crawl rate');
      const gapMs = Math.ceil(1000 / r.max_requests_per_second);
      const row: HostPolicyMsg = {
        host: site.host, field: 'webmaster-rate', updated_at: d.now(), blocked_until: null, reason: `webmaster account ${a.id}`,
        min_delay_ms: gapMs, expires_at: r.until, max_requests_per_second: r.max_requests_per_second,
      };
      await write([
        { topic: 'hostPolicy', key: hostPolicyKey(site.host, 'webmaster-rate'), host: site.host, value: row },
        audit(a, 'set-crawl-rate', site.host, { max_requests_per_second: r.max_requests_per_second, until: r.until }),
      ]);
      sendJson(res, 200, {
        host: site.host, max_requests_per_second: r.max_requests_per_second, until: iso(r.until), min_gap_ms: gapMs,
        applies: 'by every frontier and fetch process within 60 s, until `until`; robots.txt Crawl-delay, slow answers and 429/503 can only slow us further',
      });
    })
    .add('DELETE', '/webmaster/v1/sites/{host}/crawl-rate', async (req, res, m) => {
      const a = account(req, res);
      const site = siteOf(a, m.params.host);
      verified(site, 'removing a crawl rate');
      if (!d.view.policy.get(site.host, 'webmaster-rate')) throw new ApiError(404, 'no_crawl_rate', `${site.host} has no webmaster crawl rate`);
      await write([
        { topic: 'hostPolicy', key: hostPolicyKey(site.host, 'webmaster-rate'), host: site.host, value: null },
        audit(a, 'remove-crawl-rate', site.host, {}),
      ]);
      sendJson(res, 200, { host: site.host, max_requests_per_second: null, default_max_requests_per_second: defaultRps });
    })
    .add('PUT', '/webmaster/v1/sites/{host}/opt-outs', async (req, res, m) => {
      const a = account(req, res);
      const site = siteOf(a, m.params.host);
      const o = await body(req, (v) => parseOptOut(v, site.host));
      verified(site, 'an opt-out');
      const rows = optOutWrite(d.view.optouts, { subject: site.host, ...o, source: 'webmaster_console', verified: true }, d.view.issueOptOutVersion(), d.now());
      const value = rows[0].value!;
      await write([
        ...rows.map((r): OutRecord => ({ topic: 'optout', key: r.key, host: site.host, value: r.value })),
        audit(a, 'set-opt-out', site.host, { scope: value.scope, purposes: value.purposes, registry_version: value.registry_version }),
      ]);
      sendJson(res, 200, {
        host: site.host, opt_out: d.view.optouts.record(site.host), registry_version: value.registry_version,
        applies: 'to handoff events and the frontier from the registry version given, within 60 s',
      });
    })
    .add('GET', '/webmaster/v1/sites/{host}', (req, res, m) => {
      const a = account(req, res);
      const site = siteOf(a, m.params.host);
      sendJson(res, 200, siteView(d, site, defaultRps));
    });
}

/** What GET /webmaster/v1/sites/{host} answers: status, rate, opt-outs and the last day's fetches. */
function siteView(d: WebmasterDeps, site: WebmasterSiteMsg, defaultRps: number): Record<string, unknown> {
  const now = d.now();
  const policy = d.view.policy;
  const wm = policy.webmasterRate(site.host, now);
  const operatorGap = policy.minDelayMs(site.host);
  const block = policy.block(site.host, now);
  const robots = policy.get(site.host, 'robots');
  const day = d.view.hostDays.summary(site.host, now);
  return {
    host: site.host,
    status: site.status,
    verification: { method: 'dns_txt', record: site.record },
    created_at: iso(site.created_at),
    verified_at: iso(site.verified_at),
    rate: {
      default_max_requests_per_second: defaultRps,
      webmaster: wm ? { max_requests_per_second: wm.maxRequestsPerSecond, until: iso(wm.until) } : null,
      operator_min_gap_ms: operatorGap,
      /** The fastest we may go now; Crawl-delay, response times and back-off can only slow us further. */
      max_requests_per_second: 1000 / policy.leastGapMs(site.host, now, d.defaultGapMs),
      crawl_delay_ms: robots?.min_delay_ms ?? null,
    },
    blocked: block ? { until: iso(block.until), reason: block.reason } : null,
    opt_outs: {
      decisions: Object.fromEntries(PURPOSES.map((p) => [p, d.view.optouts.decisionFor(site.host, p)])),
      records: d.view.optouts.entriesFor(site.host).map((r) => ({ ...r, effective_at: iso(r.effective_at) })),
      registry_version: d.view.optouts.version,
    },
    last_day: {
      ...day, from: iso(day.from), to: iso(day.to), first_request_at: iso(day.first_request_at), last_request_at: iso(day.last_request_at),
    },
  };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
