/**
 * The opt-out registry (crawl.optout) as every processor sees it: one decision per subject
 * (a host or a registered domain) and purpose (crawl, search_index, ai_training). A host's
 * answer is its own record if any, else its registered domain's, else allowed. `version` is the
 * highest registry_version applied, which handoff events carry as usage_registry_version.
 */
import type { OptOutMsg, OptOutPurpose } from './messages';
import { registeredDomain } from './url-normalize';

export function optOutKey(subject: string, purpose: OptOutPurpose): string {
  return `${subject}|${purpose}`;
}

export class OptOutRegistry {
  private readonly entries = new Map<string, OptOutMsg>();
  version = 0;

  /** Apply one row of crawl.optout (value null = tombstone: the subject is back to the default). */
  apply(key: string, value: OptOutMsg | null): void {
    if (value === null) this.entries.delete(key);
    else {
      this.entries.set(key, value);
      this.version = Math.max(this.version, value.registry_version);
    }
  }

  allows(host: string, purpose: OptOutPurpose): boolean {
    const own = this.entries.get(optOutKey(host, purpose));
    if (own) return own.allowed;
    const domain = registeredDomain(host);
    const byDomain = domain ? this.entries.get(optOutKey(domain, purpose)) : undefined;
    return byDomain ? byDomain.allowed : true;
  }

  /** The next version a writer should use. */
  nextVersion(): number {
    return this.version + 1;
  }
}
