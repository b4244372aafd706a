/**
 * The `crawl` command. Each subcommand is a thin shell over a module that tests call directly.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runEmbedded } from './embedded';
import { summaryText } from './run-summary';

const collect = (value: string, previous: string[]): string[] => [...previous, value];
const positiveInt = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a whole number > 0');
  return n;
};

const port = (v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('expected a port number 0-65535');
  return n;
};

export function program(): Command {
  const cmd = new Command('crawl').description('A polite, distributed web crawler on Apache Kafka').showHelpAfterError();

  cmd
    .command('run')
    .description('crawl in one process with no services: WARC files and handoff events under --out')
    .option('--seed <url>', 'a seed URL (repeatable)', collect, [])
    .option('--seeds-file <file>', 'a file of seed URLs, one per line (# comments; - for standard input), streamed')
    .option('--feed <url>', 'a feed (RSS, Atom, news sitemap) to poll, in priority class 1 (repeatable)', collect, [])
    .option('--keep-running', 'do not stop when the crawl is idle: poll feeds and recrawl what comes due until --max-secs, --max-pages or Ctrl-C', false)
    .option('--out <dir>', 'output folder (WARC files, handoff .avro, journal)', './crawl-out')
    .option('--max-pages <n>', 'stop once this many HTML pages are stored', positiveInt)
    .option('--max-secs <s>', 'stop after this many seconds', positiveInt)
    .addOption(new Option('--scope <scope>', 'stay within the seeds\' registered domains, hosts, or not at all').choices(['domain', 'host', 'any']).default('domain'))
    .option('--allow-private-network', 'allow loopback, private and link-local targets (tests, intranets)', false)
    .option('--allow-cidr <cidr>', 'allow this address range even without --allow-private-network (repeatable)', collect, [])
    .option('--status-port <n>', 'serve the live status page, /stats and /metrics on 127.0.0.1:<n> while crawling (0 = any free port); with CRAWL_API_TOKEN set, the operator\'s endpoints too', port)
    .action(async (o: { seed: string[]; seedsFile?: string; feed: string[]; keepRunning: boolean; out: string; maxPages?: number; maxSecs?: number; scope: 'domain' | 'host' | 'any'; allowPrivateNetwork: boolean; allowCidr: string[]; statusPort?: number }) => {
      if (o.seed.length === 0 && !o.seedsFile && o.feed.length === 0) throw new Error('give at least one --seed URL, a --seeds-file or a --feed URL');
      const apiToken = process.env.CRAWL_API_TOKEN || undefined;
      if (apiToken !== undefined && o.statusPort !== undefined && apiToken.length < 16) throw new Error('CRAWL_API_TOKEN is shorter than 16 characters (e.g. `openssl rand -hex 24`)');
      const ac = new AbortController();
      const onSignal = (): void => ac.abort();
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      const s = await runEmbedded(
        {
          seeds: o.seed, seedsFile: o.seedsFile, feeds: o.feed, keepRunning: o.keepRunning, notice: (line) => process.stderr.write(`crawl run: ${line}\n`), out: o.out, maxPages: o.maxPages, maxSecs: o.maxSecs, scope: o.scope, allowPrivateNetwork: o.allowPrivateNetwork,
          config: o.allowCidr.length ? { allowCidrs: o.allowCidr } : {}, progress: true, statusPort: o.statusPort, apiToken,
        },
        ac.signal,
      );
      process.stdout.write(summaryText(s, o.out));
    });

  cmd
    .command('stack')
    .description('the local Kafka, Redis, S3 and schema registry, without Docker')
    .argument('<action>', 'up | down | stop | restart | status | env | install (stop and restart keep the data; CRAWL_STACK_SERVICES=kafka restarts just the broker)')
    .action((action: string) => {
      const actions = ['up', 'down', 'stop', 'restart', 'status', 'env', 'install'];
      if (!actions.includes(action)) throw new Error(`unknown stack action "${action}": ${actions.join(', ')}`);
      const script = join(__dirname, '..', '..', 'stack', 'stack.sh');
      const r = spawnSync('bash', [script, action], { stdio: 'inherit' });
      if (r.status !== 0) process.exitCode = r.status ?? 1;
    });

  cmd
    .command('explain')
    .description('whether and when a URL would be fetched and, if not, why (robots rule and line, block, trap rule, opt-out, back-off)')
    .argument('<url>')
    .option('--json', 'print JSON', false)
    .option('--out <dir>', 'read the state of an embedded crawl (`crawl run --out DIR`)')
    .option('--kafka', 'read the state from Kafka (CRAWL_KAFKA_BROKERS, CRAWL_REGISTRY_URL)', false)
    .option('--allow-private-network', 'allow fetching robots.txt from loopback and private targets', false)
    .option('--no-robots', 'do not fetch robots.txt live')
    .action(async (url: string, o: { json: boolean; out?: string; kafka: boolean; allowPrivateNetwork: boolean; robots: boolean }) =>
      (await import('./explain')).explainCommand(url, { ...o, noRobots: !o.robots }));

  registerKafkaCommands(cmd);
  return cmd;
}

/** `--out DIR` of the operator's commands: a running embedded crawl (or the next run on DIR) instead of Kafka. */
const onEmbedded = (): Option => new Option('--out <dir>', 'the embedded crawl on DIR (`crawl run --out DIR`) instead of Kafka: a running crawl applies it within a second, else the next run as it starts');

/** Kafka-mode commands are loaded lazily so `crawl run` never loads kafkajs. */
function registerKafkaCommands(cmd: Command): void {
  cmd
    .command('init')
    .description('create or update the topics and register the schemas (Kafka mode)')
    .action(async () => (await import('./kafka-commands')).init());
  cmd
    .command('seed')
    .description('send seed URLs to crawl.links (Kafka mode), or with --out DIR to the embedded crawl on DIR (running, or the next run); a URL without a scheme is taken as https://')
    .argument('[url...]')
    .option('--file <file>', 'a file of seed URLs, one per line (# comments; - for standard input), streamed in batches')
    .option('--feed <url>', 'a feed (RSS, Atom, news sitemap) to poll, in priority class 1 (repeatable)', collect, [])
    .addOption(onEmbedded())
    .action(async (urls: string[], o: { file?: string; feed: string[]; out?: string }) => {
      if (urls.length === 0 && !o.file && o.feed.length === 0) throw new Error('give seed URLs, --file FILE (- for standard input) or --feed URL');
      if (o.out) await (await import('./operator-commands')).seedEmbedded(o.out, urls, { file: o.file, feeds: o.feed });
      else await (await import('./kafka-commands')).seed(urls, { file: o.file, feeds: o.feed });
    });
  cmd
    .command('block')
    .description('block a host: no request to it until the block ends (every fetch applies it within a second embedded, 60 s in Kafka mode); Kafka mode, or --out DIR')
    .argument('<host>')
    .option('--for <seconds>', 'how long the block lasts', '86400')
    .option('--reason <text>', 'why (kept with the block and in the audit topic)')
    .option('--force', 'block a host the crawl does not know (checked with --out only)', false)
    .addOption(onEmbedded())
    .action(async (host: string, o: { for: string; reason?: string; force: boolean; out?: string }) => (await import('./operator-commands')).blockCommand(host, o));
  cmd
    .command('unblock')
    .description('lift a host\'s block (Kafka mode, or --out DIR)')
    .argument('<host>')
    .addOption(onEmbedded())
    .action(async (host: string, o: { out?: string }) => (await import('./operator-commands')).unblockCommand(host, o));
  cmd
    .command('serve')
    .description('control API, Prometheus metrics and the live status page (Kafka mode; needs CRAWL_API_TOKEN)')
    .option('--port <n>', 'listen port (env CRAWL_API_PORT)', port, Number(process.env.CRAWL_API_PORT ?? 8088))
    .option('--host <addr>', 'listen address (env CRAWL_API_HOST)', process.env.CRAWL_API_HOST ?? '127.0.0.1')
    .action(async (o: { port: number; host: string }) => (await import('./serve')).serve(o));
  cmd
    .command('process')
    .description('run processors as consumers: seen-test, frontier, fetch, parse, handoff, or all (Kafka mode)')
    .argument('<name...>')
    .option('--allow-private-network', 'allow loopback, private and link-local targets', false)
    .action(async (names: string[], o: { allowPrivateNetwork: boolean }) => (await import('./kafka-commands')).processes(names, o));
  const optout = cmd.command('optout').description('the opt-out registry, crawl.optout (Kafka mode, or --out DIR for an embedded crawl)');
  optout
    .command('set')
    .description('record a decision with the next registry version: <subject> is a host or registered domain, <purpose> crawl | search_index | ai_training')
    .argument('<subject>')
    .argument('<purpose>')
    .argument('<decision>', 'allow | deny')
    .option('--scope <scope>', 'host (the subject only) or registered_domain (the subject and every host under it); default: as before, else registered_domain for a registered domain')
    .option('--verified', 'the subject\'s owner was verified (recorded with the decision)', false)
    .addOption(onEmbedded())
    .action(async (subject: string, purpose: string, decision: string, o: { scope?: string; verified: boolean; out?: string }) =>
      (await import('./optout')).optoutSet(subject, purpose, decision, o));
  optout
    .command('list')
    .description('print every subject\'s record (scope, purposes, source, effective time, version) and the registry version')
    .option('--out <dir>', 'an embedded crawl\'s folder (`crawl run --out DIR`) instead of Kafka')
    .action(async (o: { out?: string }) => (await import('./optout')).optoutList(o.out));
  const webmaster = cmd.command('webmaster').description('accounts of the webmaster API (/webmaster/v1 on crawl serve; Kafka mode, or --out DIR for `crawl run --out DIR --status-port N`)');
  const where = (): Option => new Option('--out <dir>', 'an embedded crawl\'s folder (write while no crawl runs on it) instead of Kafka');
  webmaster
    .command('add-account')
    .description('make a webmaster account and print its bearer token once (only its SHA-256 is stored)')
    .argument('<name>', 'who the account is for (a person or organisation)')
    .addOption(where())
    .action(async (name: string, o: { out?: string }) => (await import('./webmaster')).addAccountCommand(name, o));
  webmaster
    .command('list-accounts')
    .description('print every webmaster account (id, name, state, who made it and when)')
    .addOption(where())
    .action(async (o: { out?: string }) => (await import('./webmaster')).listAccountsCommand(o));
  webmaster
    .command('disable-account')
    .description('refuse an account\'s token from now on')
    .argument('<id>', 'the account id (wm_…)')
    .addOption(where())
    .action(async (id: string, o: { out?: string }) => (await import('./webmaster')).disableAccountCommand(id, o));
  cmd
    .command('bloom')
    .description('the URL-seen Bloom filter in Redis: rebuild (replay crawl.urls into a new generation and switch), stats, abort (Kafka mode)')
    .argument('<action>', 'rebuild | stats | abort')
    .action(async (action: string) => {
      const b = await import('./bloom');
      const run = { rebuild: b.rebuildCommand, stats: b.statsCommand, abort: b.abortCommand }[action];
      if (!run) throw new Error(`unknown bloom action "${action}": rebuild, stats or abort`);
      await run();
    });
}

export async function main(argv: string[]): Promise<void> {
  await program().parseAsync(argv);
}
