/**
 * The `crawl` command. Each subcommand is a thin shell over a module that tests call directly.
 */
import { readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runEmbedded } from './embedded';

const collect = (value: string, previous: string[]): string[] => [...previous, value];
const positiveInt = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a whole number > 0');
  return n;
};

export function seedsFromFile(path: string): string[] {
  return readFileSync(path, 'utf8')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));
}

export function program(): Command {
  const cmd = new Command('crawl').description('A polite, distributed web crawler on Apache Kafka').showHelpAfterError();

  cmd
    .command('run')
    .description('crawl in one process with no services: WARC files and handoff events under --out')
    .option('--seed <url>', 'a seed URL (repeatable)', collect, [])
    .option('--seeds-file <file>', 'a file of seed URLs, one per line (# comments)')
    .option('--out <dir>', 'output folder (WARC files, handoff .avro, journal)', './crawl-out')
    .option('--max-pages <n>', 'stop after this many pages fetched', positiveInt)
    .option('--max-secs <s>', 'stop after this many seconds', positiveInt)
    .addOption(new Option('--scope <scope>', 'stay within the seeds\' registered domains, hosts, or not at all').choices(['domain', 'host', 'any']).default('domain'))
    .option('--allow-private-network', 'allow loopback, private and link-local targets (tests, intranets)', false)
    .option('--allow-cidr <cidr>', 'allow this address range even without --allow-private-network (repeatable)', collect, [])
    .action(async (o: { seed: string[]; seedsFile?: string; out: string; maxPages?: number; maxSecs?: number; scope: 'domain' | 'host' | 'any'; allowPrivateNetwork: boolean; allowCidr: string[] }) => {
      const seeds = [...o.seed, ...(o.seedsFile ? seedsFromFile(o.seedsFile) : [])];
      if (seeds.length === 0) throw new Error('give at least one --seed URL or a --seeds-file');
      const ac = new AbortController();
      const onSignal = (): void => ac.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const s = await runEmbedded(
        {
          seeds, out: o.out, maxPages: o.maxPages, maxSecs: o.maxSecs, scope: o.scope, allowPrivateNetwork: o.allowPrivateNetwork,
          config: o.allowCidr.length ? { allowCidrs: o.allowCidr } : {}, progress: true,
        },
        ac.signal,
      );
      process.stdout.write(
        `crawl ${s.stoppedBy}: ${s.pagesStored} pages stored, ${s.failures} failures, ${s.handoffEvents} handoff events, ` +
          `${s.warcFiles} WARC files, ${s.seconds.toFixed(1)} s (${s.pagesPerSecond.toFixed(2)} pages/s)\n` +
          (s.waitingRetry ? `  ${s.waitingRetry} URL(s) wait for a retry; run the same command again later to retry them\n` : '') +
          `  WARC: ${join(o.out, 'warc')}\n  handoff: ${s.handoffFile}\n  log: ${join(o.out, 'crawl.log')}\n`,
      );
    });

  cmd
    .command('stack')
    .description('the local Kafka, Redis, S3 and schema registry, without Docker')
    .argument('<action>', 'up | down | status | env | install')
    .action((action: string) => {
      if (!['up', 'down', 'status', 'env', 'install'].includes(action)) throw new Error(`unknown stack action "${action}": up, down, status, env or install`);
      const script = join(__dirname, '..', '..', 'stack', 'stack.sh');
      const r = spawnSync('bash', [script, action], { stdio: 'inherit' });
      if (r.status !== 0) process.exitCode = r.status ?? 1;
    });

  registerKafkaCommands(cmd);
  return cmd;
}

/** Kafka-mode commands are loaded lazily so `crawl run` never loads kafkajs. */
function registerKafkaCommands(cmd: Command): void {
  cmd
    .command('init')
    .description('create or update the topics and register the schemas (Kafka mode)')
    .action(async () => (await import('./kafka-commands')).init());
  cmd
    .command('seed')
    .description('send seed URLs to crawl.links (Kafka mode)')
    .argument('<url...>')
    .action(async (urls: string[]) => (await import('./kafka-commands')).seed(urls));
  cmd
    .command('process')
    .description('run processors as consumers: seen-test, frontier, fetch, parse, handoff, or all (Kafka mode)')
    .argument('<name...>')
    .option('--allow-private-network', 'allow loopback, private and link-local targets', false)
    .action(async (names: string[], o: { allowPrivateNetwork: boolean }) => (await import('./kafka-commands')).processes(names, o));
}

export async function main(argv: string[]): Promise<void> {
  await program().parseAsync(argv);
}
