/**
 * createLogger with a file (crawl run's crawl.log): pino flushes its streams synchronously on
 * exit, so a command that fails at once must find the file's stream ready. Before the file was
 * opened up front, flushing right after start-up threw "sonic boom is not ready yet", and
 * `crawl run --seed 'bad url'` printed that stack trace after its own error.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createLogger } from '../../lib/logger';

/**
 * The file's messages once it holds `n` lines (at most 5 s). flushSync writes what is buffered,
 * but a line whose asynchronous write is already in flight (sonic-boom, sync: false) lands when
 * that write completes, not at flushSync: reading at once raced it (a loaded CI machine read
 * "run 1" without "run 2").
 */
async function linesOnceWritten(file: string, n: number): Promise<Array<{ msg: string; n?: number }>> {
  const read = (): Array<{ msg: string; n?: number }> => {
    const text = readFileSync(file, 'utf8').trim();
    return text === '' ? [] : text.split('\n').map((l) => JSON.parse(l) as { msg: string; n?: number });
  };
  for (let i = 0; i < 100 && read().length < n; i++) await new Promise((r) => setTimeout(r, 50));
  return read();
}

describe('createLogger with a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcrawl-logger-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('can be flushed synchronously at once (as pino does on exit), and the line is in the file', async () => {
    const file = join(dir, 'nested', 'crawl.log');
    const log = createLogger({ file, level: 'info', stderrLevel: 'fatal' });
    log.info({ n: 1 }, 'first line');
    const stream = (log as unknown as Record<symbol, { flushSync(): void }>)[pino.symbols.streamSym];
    expect(() => stream.flushSync()).not.toThrow();
    const lines = await linesOnceWritten(file, 1);
    expect(lines).toEqual([expect.objectContaining({ msg: 'first line', n: 1 })]);
  });

  it('appends to a log a previous run left', async () => {
    const file = join(dir, 'again.log');
    for (const msg of ['run 1', 'run 2']) {
      const log = createLogger({ file, level: 'info', stderrLevel: 'fatal' });
      log.info(msg);
      (log as unknown as Record<symbol, { flushSync(): void }>)[pino.symbols.streamSym].flushSync();
    }
    expect((await linesOnceWritten(file, 2)).map((l) => l.msg)).toEqual(['run 1', 'run 2']);
  });
});
