/** pino loggers: JSON lines, data first and message second; one child logger per stage. */
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
    { level: level as pino.Level, stream: pino.destination({ dest: opts.file, mkdir: true, sync: false }) },
    { level: (opts.stderrLevel ?? 'warn') as pino.Level, stream: pino.destination(2) },
  ];
  return pino({ level, redact }, pino.multistream(streams));
}
