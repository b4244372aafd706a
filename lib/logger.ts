/** pino loggers: JSON lines, data first and message second; one child logger per stage. */
import { mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

export interface LoggerOptions {
  level?: string;
  /** Also write every line to this file (the embedded crawl keeps its log under --out). */
  file?: string;
  /** Level that still reaches stderr when a file is given. */
  stderrLevel?: string;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = opts.level ?? process.env.CRAWL_LOG_LEVEL ?? 'info';
  const redact = { paths: ['headers.authorization', 'token', '*.token'], censor: '[redacted]' };
  if (!opts.file) return pino({ level, redact }, pino.destination(2));
  const streams = [
    { level: level as pino.Level, stream: pino.destination({ dest: openLogFile(opts.file), sync: false }) },
    { level: (opts.stderrLevel ?? 'warn') as pino.Level, stream: pino.destination(2) },
  ];
  return pino({ level, redact }, pino.multistream(streams));
}

/**
 * The log file opened now, for appending. Given a path, pino's destination opens it in the
 * background, and until it has, flushing it throws ("sonic boom is not ready yet"): pino flushes
 * on exit, so a command that failed at once (`crawl run` with no valid seed, a seeds file that is
 * not there) printed its error and then that stack trace. Given the descriptor, it is ready at once.
 */
export function openLogFile(file: string): number {
  // Its folder is made only when missing: `crawl run` has made (and checked) --out already.
  try {
    return openSync(file, 'a');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirSync(dirname(file), { recursive: true });
    return openSync(file, 'a');
  }
}

/**
 * Node's process warnings (`process.emitWarning`: the AWS SDK's Node-version notice, a
 * deprecation) as log lines, instead of the plain text Node writes to stderr by default: every
 * line a process writes stays JSON. Each distinct warning once.
 */
export function routeProcessWarnings(log: Logger): void {
  const seen = new Set<string>();
  process.removeAllListeners('warning');
  process.on('warning', (w: Error & { code?: string }) => {
    if (seen.has(w.message)) return;
    seen.add(w.message);
    log.warn({ warning: w.name, code: w.code }, w.message.replace(/\s*\n\s*/g, ' ').trim());
  });
}

/** The AWS SDK's logger (warnings and errors, e.g. a full socket pool) as log lines; its per-request lines are dropped. */
export function sdkLogger(log: Logger): { trace(): void; debug(): void; info(): void; warn(...c: unknown[]): void; error(...c: unknown[]): void } {
  const text = (content: unknown[]): string => content.map((c) => (typeof c === 'string' ? c : JSON.stringify(c))).join(' ');
  return {
    trace: () => undefined,
    debug: () => undefined,
    info: () => undefined,
    warn: (...c) => log.warn({ sdk: 'aws' }, text(c)),
    error: (...c) => log.error({ sdk: 'aws' }, text(c)),
  };
}
