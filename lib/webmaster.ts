/**
 * Webmaster accounts and sites as the API sees them, pure: fed the rows of
 * crawl.webmaster-accounts and crawl.webmaster-sites, asked by token hash and by host. Tokens
 * never reach here, only their SHA-256; a site's verification token is public (it is published
 * in DNS) and only binds the account to the host.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { WebmasterAccountMsg, WebmasterAuditMsg, WebmasterSiteMsg } from './messages';

/** A new bearer token: 32 random bytes, base64url, with a prefix that says what it is. */
export function newAccountToken(): string {
  return `kcw_${randomBytes(32).toString('base64url')}`;
}

export function newAccountId(): string {
  return `wm_${randomBytes(6).toString('hex')}`;
}

/** A site's verification token: 16 hex digits (64 random bits). */
export function newVerificationToken(): string {
  return randomBytes(8).toString('hex');
}

export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The TXT record a webmaster publishes at the host: `<name>-verify=<token>`. */
export function verificationRecord(name: string, token: string): string {
  return `${name}-verify=${token}`;
}

/** One audit row: who changed what, when (`detail` is JSON and must never hold a token). */
export function auditRow(actor: string, action: string, host: string | null, detail: Record<string, unknown>, at: number): WebmasterAuditMsg {
  return { at, actor, action, host, detail: JSON.stringify(detail) };
}

export function siteKey(host: string, account: string): string {
  return `${host}|${account}`;
}

export class WebmasterState {
  private readonly accounts = new Map<string, WebmasterAccountMsg>();
  private readonly byHash = new Map<string, string>();
  private readonly sites = new Map<string, WebmasterSiteMsg>();
  /** Sites per account, to bound how many one account may claim. */
  private readonly perAccount = new Map<string, number>();

  applyAccount(key: string, value: WebmasterAccountMsg | null): void {
    const old = this.accounts.get(key);
    if (old) this.byHash.delete(old.token_sha256);
    if (value === null) this.accounts.delete(key);
    else {
      this.accounts.set(key, value);
      this.byHash.set(value.token_sha256, key);
    }
  }

  applySite(key: string, value: WebmasterSiteMsg | null): void {
    const old = this.sites.get(key);
    if (old) this.count(old.account, -1);
    if (value === null) this.sites.delete(key);
    else {
      this.sites.set(key, value);
      this.count(value.account, 1);
    }
  }

  /** The account a bearer token's hash belongs to, if any (disabled ones too: the caller says why it refuses). */
  accountByTokenHash(hash: string): WebmasterAccountMsg | undefined {
    const id = this.byHash.get(hash);
    return id === undefined ? undefined : this.accounts.get(id);
  }

  account(id: string): WebmasterAccountMsg | undefined {
    return this.accounts.get(id);
  }

  site(host: string, account: string): WebmasterSiteMsg | undefined {
    return this.sites.get(siteKey(host, account));
  }

  /** An account's sites (a scan: only for an account's own listing). */
  sitesFor(account: string): WebmasterSiteMsg[] {
    return [...this.sites.values()].filter((s) => s.account === account).sort((a, b) => a.host.localeCompare(b.host));
  }

  sitesOf(account: string): number {
    return this.perAccount.get(account) ?? 0;
  }

  private count(account: string, by: number): void {
    const n = (this.perAccount.get(account) ?? 0) + by;
    if (n <= 0) this.perAccount.delete(account);
    else this.perAccount.set(account, n);
  }
}
