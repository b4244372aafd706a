/**
 * What holds a host in the frontier, so it gets no lease at all: an operator block (until it
 * expires) and an opt-out from crawling (crawl=deny in the opt-out registry, for the host or
 * its registered domain). Fetch checks the same again before any request (fetch-gate.ts), for
 * leases already out when the row arrived.
 */
import type { HostPolicyTable } from '../lib/host-policy';
import type { OptOutRegistry } from '../lib/optout-registry';

/**
 * How often a host held by an opt-out is looked at again. A lifted opt-out of the host itself
 * wakes it at once (FrontierState.onPolicyChange); one of its registered domain reaches it here.
 */
export const OPTOUT_RECHECK_MS = 30_000;

/** When to look at a held host again, or null when nothing holds it at `now`. */
export function heldUntil(host: string, now: number, policy: HostPolicyTable, optout: OptOutRegistry): number | null {
  const block = policy.block(host, now);
  if (block) return block.until;
  if (!optout.allows(host, 'crawl')) return now + OPTOUT_RECHECK_MS;
  return null;
}
