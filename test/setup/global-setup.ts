/**
 * Jest globalSetup for the `integration` project.
 *
 * For every service whose variable is not already set (CRAWL_KAFKA_BROKERS, CRAWL_REGISTRY_URL,
 * CRAWL_REDIS_URL, CRAWL_S3_ENDPOINT), it starts the local stack once with
 * `bash stack/stack.sh up` (idempotent: services already healthy are left alone), then reads
 * `bash stack/stack.sh env` into process.env, which jest hands to the test workers.
 *
 * It never stops the stack: leaving it up makes the next run fast (`crawl stack down`, or
 * `bash stack/stack.sh down`, stops it). If the stack cannot be started it throws, naming what
 * is missing: integration tests must never skip silently.
 *
 * First, whatever the environment gives, it makes sure Debian's Chromium is there for the
 * status-page test (`bash stack/stack.sh browser`: apt-get, as for redis-server), so that
 * `npm install && npm test` pass on a fresh machine with no other step. If it cannot be
 * installed, the run goes on and that one test fails, saying why.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import * as path from 'node:path';

/** Which variables each stack service provides; the first one says whether it is given. */
const SERVICES: ReadonlyArray<{ service: string; primary: string; prefix: string }> = [
  { service: 'kafka', primary: 'CRAWL_KAFKA_BROKERS', prefix: 'CRAWL_KAFKA_' },
  { service: 'registry', primary: 'CRAWL_REGISTRY_URL', prefix: 'CRAWL_REGISTRY_' },
  { service: 'redis', primary: 'CRAWL_REDIS_URL', prefix: 'CRAWL_REDIS_' },
  { service: 's3', primary: 'CRAWL_S3_ENDPOINT', prefix: 'CRAWL_S3_' },
];

export function parseExports(text: string): Map<string, string> {
  const vars = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^\s*export\s+([A-Za-z_][A-Za-z0-9_]*)=(.*?)\s*$/.exec(line);
    if (!m) continue;
    let value = m[2];
    if (value.length >= 2 && ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))) {
      value = value.slice(1, -1);
    }
    vars.set(m[1], value);
  }
  return vars;
}

/** Where the status-page test finds Chromium (Debian's package puts it there). */
export const CHROMIUM = '/usr/bin/chromium';

function ensureBrowser(script: string, root: string): void {
  if (existsSync(CHROMIUM)) return;
  process.stderr.write(`[global-setup] ${CHROMIUM} is missing: installing Debian's chromium for the status-page test\n`);
  const r = spawnSync('bash', [script, 'browser'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (r.error || r.status !== 0) process.stderr.write(`[global-setup] chromium was not installed (${r.error?.message ?? `exit code ${r.status}`}); the status-page test will fail\n`);
}

export default async function globalSetup(): Promise<void> {
  const root = path.resolve(__dirname, '..', '..');
  const script = path.join(root, 'stack', 'stack.sh');
  ensureBrowser(script, root);

  const missing = SERVICES.filter((s) => !process.env[s.primary]);
  if (missing.length === 0) return;
  const what = missing.map((s) => `${s.service} (${s.primary})`).join(', ');
  const env = { ...process.env, CRAWL_STACK_SERVICES: missing.map((s) => s.service).join(' ') };

  process.stderr.write(`[global-setup] starting local stack for: ${what}\n`);
  const up = spawnSync('bash', [script, 'up'], { cwd: root, env, stdio: ['ignore', 2, 2] });
  if (up.error || up.status !== 0) {
    const why = up.error ? up.error.message : up.signal ? `killed by ${up.signal}` : `exit code ${up.status}`;
    throw new Error(
      `integration tests need ${what}, which are not set in the environment, and \`bash stack/stack.sh up\` failed (${why}); ` +
        'see its output above, or set those variables to running services',
    );
  }

  const out = spawnSync('bash', [script, 'env'], { cwd: root, env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (out.error || out.status !== 0) {
    throw new Error(`\`bash stack/stack.sh env\` failed (${out.error?.message ?? `exit code ${out.status}`}); missing: ${what}`);
  }
  const vars = parseExports(out.stdout);
  for (const s of missing) {
    for (const [name, value] of vars) {
      if (name.startsWith(s.prefix) && process.env[name] === undefined) process.env[name] = value;
    }
  }
  const still = missing.filter((s) => !process.env[s.primary]).map((s) => s.primary);
  if (still.length > 0) throw new Error(`local stack started but did not describe: ${still.join(', ')}`);
}
