/**
 * A Kafka broker and a Redis of a test's own, started with stack/stack.sh on free loopback
 * ports in a directory of their own, for tests that stop, restart, hang or flush them. The
 * stack a run was given (CRAWL_* variables: other test files, other people's runs on a shared
 * machine) is never touched: its registry and S3 are used, not its broker or Redis.
 *
 * Every method waits for what it did to hold (the script waits for health) and fails naming
 * the service, with the script's output. The script runs as a child without blocking: the test
 * process also serves the fixture web, which must keep answering while a broker restarts.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const SCRIPT = join(__dirname, '..', '..', 'stack', 'stack.sh');

async function freePort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as AddressInfo).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

export class PrivateStack {
  private constructor(
    readonly dir: string,
    readonly ports: { kafka: number; controller: number; redis: number },
  ) {}

  /** Start a broker and a Redis (about 5-10 s): `bash stack/stack.sh up` with their own dir and ports. */
  static async start(): Promise<PrivateStack> {
    const dir = mkdtempSync(join(tmpdir(), 'kcrawl-private-stack-'));
    const s = new PrivateStack(dir, { kafka: await freePort(), controller: await freePort(), redis: await freePort() });
    await s.script('up', 'kafka redis');
    return s;
  }

  /** The CRAWL_* variables of this broker and Redis (the given registry and S3 stay). */
  env(): Record<string, string> {
    return { CRAWL_KAFKA_BROKERS: `127.0.0.1:${this.ports.kafka}`, CRAWL_REDIS_URL: `redis://127.0.0.1:${this.ports.redis}` };
  }

  /** Stop the broker, keeping its data (topics, offsets, groups). */
  async stopKafka(): Promise<void> {
    this.resumeKafka(); // a hung broker cannot stop
    await this.script('stop', 'kafka');
  }

  /** Start the broker again on its data and wait until it answers. */
  async startKafka(): Promise<void> {
    await this.script('up', 'kafka');
  }

  /** The broker hangs (SIGSTOP): connections are accepted by the kernel, nothing is answered. */
  pauseKafka(): void {
    process.kill(this.kafkaPid(), 'SIGSTOP');
  }

  resumeKafka(): void {
    const pid = this.kafkaPid(false);
    if (pid) process.kill(pid, 'SIGCONT');
  }

  async flushRedis(): Promise<void> {
    const r = await run('redis-cli', ['-h', '127.0.0.1', '-p', String(this.ports.redis), 'FLUSHALL'], process.env, 10_000);
    if (r.code !== 0 || r.stdout.trim() !== 'OK') throw new Error(`redis-cli FLUSHALL on the private Redis failed: ${r.stderr || r.stdout}`);
  }

  /** Stop both and remove their data; never throws (for afterAll). */
  async down(): Promise<void> {
    try {
      this.resumeKafka();
      await this.script('down', 'kafka redis');
    } catch (err) {
      process.stderr.write(`private stack down: ${String(err)}\n`);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private kafkaPid(required = true): number {
    try {
      const pid = Number(readFileSync(join(this.dir, 'run', 'kafka.pid'), 'utf8').trim());
      if (pid > 0) return pid;
    } catch {
      // no pidfile: not running
    }
    if (required) throw new Error(`the private broker is not running (no pid in ${this.dir}/run/kafka.pid)`);
    return 0;
  }

  private async script(verb: string, services: string): Promise<void> {
    const env = {
      ...process.env, CRAWL_STACK_DIR: this.dir, CRAWL_STACK_SERVICES: services, CRAWL_KAFKA_PORT: String(this.ports.kafka),
      CRAWL_KAFKA_CONTROLLER_PORT: String(this.ports.controller), CRAWL_REDIS_PORT: String(this.ports.redis),
      CRAWL_KAFKA_HEAP_OPTS: '-Xms128m -Xmx384m',
    };
    const r = await run('bash', [SCRIPT, verb], env, 180_000);
    if (r.code !== 0) throw new Error(`stack.sh ${verb} (${services}) in ${this.dir} failed (exit ${r.code}):\n${r.stderr.slice(-3000)}`);
  }
}

/** A command's exit code and output; killed after `ms`. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, ms: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), ms);
    child.on('error', (err) => (stderr += String(err)));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}
