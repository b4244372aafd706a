/**
 * `crawl serve`: the control API, metrics and live status page over the Kafka cluster.
 * Needs CRAWL_API_TOKEN (operator endpoints) besides the Kafka-mode variables.
 */
import { createApiServer, listen } from '../api/server';
import { startKafkaBackend } from '../api/kafka-backend';
import { loadConfig } from '../lib/config';
import { createLogger, routeProcessWarnings } from '../lib/logger';
import { Deadline, stopSignals } from '../runtime/shutdown';
import { kafkaEnv, runtimeFor } from './kafka-commands';

export interface ServeOptions {
  port: number;
  host: string;
}

export async function serve(o: ServeOptions, env = kafkaEnv()): Promise<void> {
  const token = process.env.CRAWL_API_TOKEN ?? '';
  if (token.length < 16) throw new Error('CRAWL_API_TOKEN is not set or shorter than 16 characters (e.g. `openssl rand -hex 24`)');
  const config = loadConfig();
  const log = createLogger().child({ component: 'serve' });
  routeProcessWarnings(log);
  const signals = stopSignals(log, config.stopTimeoutMs);
  const rt = await runtimeFor(env, config, log);
  const kb = await startKafkaBackend(rt, config, log);
  const server = createApiServer(kb.backend, { token, log, title: 'kcrawl' });
  const port = await listen(server, o.port, o.host);
  log.info({ host: o.host, port, prefix: env.prefix }, 'control API, metrics and status page listening');
  process.stdout.write(`crawl serve: http://${o.host}:${port}/ (status page), /openapi.json, /metrics\n`);
  // Bounded like `crawl process` (runtime/shutdown.ts): a broker that is down costs the bound, not a hang.
  await signals.requested;
  log.info({ boundMs: config.stopTimeoutMs }, 'stopping');
  server.closeAllConnections();
  const deadline = Deadline.in(Math.max(0, config.stopTimeoutMs - 500));
  const closed = await deadline.step('HTTP listener', () => new Promise<void>((r) => server.close(() => r())), log);
  signals.finish((await deadline.step('Kafka backend', () => kb.stop(), log)) && closed);
}
