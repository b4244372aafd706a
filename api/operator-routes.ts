/**
 * The routes that change the crawl. Each validates, turns the request into records of the
 * crawl's own topics (the same rows `crawl seed` and `crawl optout` write) and answers 202 once
 * the log has them durably. Processes apply them from the log: blocks and crawl rates through
 * their host-policy table, opt-outs through their registry.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostPolicyKey } from '../lib/host-policy';
import type { HostPolicyMsg } from '../lib/messages';
import { optOutWrite } from '../lib/optout-registry';
import { seedLink } from '../lib/seed-source';
import { auditRow } from '../lib/webmaster';
import type { OutRecord } from '../runtime/stage';
import type { CrawlView } from './crawl-view';
import { readChecked, sendJson, type Router } from './http';
import { ApiError, parseBlock, parseCrawlRate, parseHost, parseOptOut, parseSeeds } from './validate';

export interface OperatorDeps {
  view: CrawlView;
  send: (outs: OutRecord[]) => Promise<void>;
  now: () => number;
  maxBodyBytes: number;
}

/** Normalised URLs as crawl.links seed records (they pass the seen filter again); `priorityClass` 1 for feeds. */
export function seedRecords(urls: readonly string[], now: number, priorityClass?: 1): OutRecord[] {
  return urls.map((url): OutRecord => {
    const host = new URL(url).hostname;
    return { topic: 'links', key: host, host, value: seedLink({ url }, now, priorityClass) };
  });
}

/** A crawl.host-policy row set by the operator (`block`, `crawl-rate`). */
export function hostPolicyRecord(host: string, field: string, v: Partial<HostPolicyMsg>, now: number): OutRecord {
  return {
    topic: 'hostPolicy', key: hostPolicyKey(host, field), host,
    value: { host, field, updated_at: now, blocked_until: null, reason: null, min_delay_ms: null, ...v } satisfies HostPolicyMsg,
  };
}

/** Removes the operator's row of `field` for `host`. */
export function hostPolicyTombstone(host: string, field: string): OutRecord {
  return { topic: 'hostPolicy', key: hostPolicyKey(host, field), host, value: null };
}

/** The operator's changes a webmaster may ask about go to the audit log too. */
export function operatorAudit(actor: string, action: string, host: string, detail: Record<string, unknown>, at: number): OutRecord {
  return { topic: 'webmasterAudit', key: host, host, value: auditRow(actor, action, host, detail, at) };
}

export function operatorRoutes(router: Router, d: OperatorDeps): void {
  const body = <T>(req: IncomingMessage, check: (v: unknown) => T): Promise<T> => readChecked(req, d.maxBodyBytes, check);
  const accepted = async (res: ServerResponse, outs: OutRecord[], extra: Record<string, unknown>): Promise<void> => {
    await d.send(outs);
    sendJson(res, 202, { accepted: true, ...extra });
  };
  // An operator typo must not silently block or slow a host nobody crawls: known hosts only,
  // unless the request says force (a webmaster asking before we ever visited).
  const knownOrForced = async (host: string, value: unknown): Promise<void> => {
    const force = typeof value === 'object' && value !== null && (value as { force?: unknown }).force === true;
    if (!force && !(await d.view.hostKnown(host))) throw new ApiError(404, 'unknown_host', `the crawl does not know ${host}; send "force": true to set it anyway`);
  };
  const policyRow = (host: string, field: string, v: Partial<HostPolicyMsg>): OutRecord => hostPolicyRecord(host, field, v, d.now());
  const tombstone = hostPolicyTombstone;
  const audit = (action: string, host: string, detail: Record<string, unknown>, at: number): OutRecord => operatorAudit('operator:api', action, host, detail, at);

  router
    .add('POST', '/seeds', async (req, res) => {
      const urls = await body(req, parseSeeds);
      await accepted(res, seedRecords(urls, d.now()), { seeded: urls.length, urls });
    }, { operator: true })
    .add('POST', '/hosts/{host}/block', async (req, res, m) => {
      const host = parseHost(m.params.host);
      const { b, raw } = await body(req, (v) => ({ b: parseBlock(v, d.now()), raw: v }));
      await knownOrForced(host, raw);
      const row = policyRow(host, 'block', { blocked_until: b.blocked_until, reason: b.reason });
      await accepted(res, [row, audit('block', host, { until: b.blocked_until, reason: b.reason }, d.now())], { host, block: { until: new Date(b.blocked_until).toISOString(), reason: b.reason } });
    }, { operator: true })
    .add('DELETE', '/hosts/{host}/block', async (_req, res, m) => {
      const host = parseHost(m.params.host);
      if (!d.view.policy.get(host, 'block')) throw new ApiError(404, 'unknown_host', `${host} has no block`);
      await accepted(res, [tombstone(host, 'block'), audit('remove-block', host, {}, d.now())], { host, block: null });
    }, { operator: true })
    .add('PUT', '/hosts/{host}/crawl-rate', async (req, res, m) => {
      const host = parseHost(m.params.host);
      const { r, raw } = await body(req, (v) => ({ r: parseCrawlRate(v), raw: v }));
      await knownOrForced(host, raw);
      const row = policyRow(host, 'crawl-rate', { min_delay_ms: r.min_delay_ms, reason: r.reason });
      await accepted(res, [row, audit('set-crawl-rate', host, { min_delay_ms: r.min_delay_ms, reason: r.reason }, d.now())], { host, min_delay_ms: r.min_delay_ms });
    }, { operator: true })
    .add('DELETE', '/hosts/{host}/crawl-rate', async (_req, res, m) => {
      const host = parseHost(m.params.host);
      if (!d.view.policy.get(host, 'crawl-rate')) throw new ApiError(404, 'unknown_host', `${host} has no crawl-rate rule`);
      await accepted(res, [tombstone(host, 'crawl-rate'), audit('remove-crawl-rate', host, {}, d.now())], { host, min_delay_ms: null });
    }, { operator: true })
    .add('PUT', '/optout/{subject}', async (req, res, m) => {
      const subject = parseHost(m.params.subject);
      const o = await body(req, (v) => parseOptOut(v, subject, { legacy: true }));
      const now = d.now();
      const rows = optOutWrite(d.view.optouts, { subject, ...o, source: 'operator_api', verified: false }, d.view.issueOptOutVersion(), now);
      const outs: OutRecord[] = rows.map((r) => ({ topic: 'optout', key: r.key, host: subject, value: r.value }));
      const value = rows[0].value!;
      outs.push(audit('set-opt-out', subject, { scope: value.scope, purposes: value.purposes, registry_version: value.registry_version }, now));
      await accepted(res, outs, { ...value });
      d.view.applyOwn(outs);
    }, { operator: true });
}
