/**
 * bench/stage-cpu.ts drives the stages as the runtimes do: the frontier is told of each batch's
 * emits (produced(), the very array it returned), and the parser floors' pages are decoded once,
 * from what the extraction row's scanForm made of them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { produced } from '../../bench/stage-cpu';
import { loadConfig } from '../../lib/config';
import { decodeBody, scanForm, wholeText } from '../../lib/html/extract';
import type { CandidateMsg } from '../../lib/messages';
import { frontierStage } from '../../processors/frontier';
import type { InRecord, OutRecord } from '../../runtime/stage';
import { MemoryChangelog } from '../support/memory-changelog';

describe('stage-cpu: the frontier driven as the runtimes drive it', () => {
  it('produced() hands the stage the very array it returned; a URL written so is not emitted again, one never written is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stage-cpu-'));
    const ctx = { now: () => 600_000, log: pino({ level: 'silent' }) };
    const stage = frontierStage(loadConfig({}, { partitions: 1 }), { partitions: 1, stateDir: dir, now: () => 600_000 });
    const seenByStage: unknown[] = [];
    const told = { ...stage, produced: async (outs: readonly OutRecord[]): Promise<void> => {
      seenByStage.push(outs);
      await stage.produced!(outs);
    } };
    await stage.restoreChangelog!([0], new MemoryChangelog(), ctx);
    const cand = (url: string): InRecord => ({ topic: 'frontier', partition: 0, offset: 0, key: 'a.test', value: { url, host: 'a.test', depth: 0, discovered_at: 0, source_url: null } satisfies CandidateMsg, timestamp: 0 });
    const urlRows = (outs: OutRecord[]): string[] => outs.filter((o) => o.topic === 'urls').map((o) => o.key);
    try {
      const first = await produced(told, stage.handleBatch!([cand('http://a.test/1')], ctx));
      expect(urlRows(first)).toEqual(['http://a.test/1']);
      expect(seenByStage[0]).toBe(first);
      expect(urlRows(await produced(told, stage.handleBatch!([cand('http://a.test/1')], ctx)))).toEqual([]);
      // Without produced() (the bench before): the row counts as unwritten and is emitted again.
      expect(urlRows(await stage.handleBatch!([cand('http://a.test/2')], ctx))).toEqual(['http://a.test/2']);
      expect(urlRows(await stage.handleBatch!([cand('http://a.test/2')], ctx))).toEqual(['http://a.test/2']);
      // A tick's records go through the same way.
      const ticked = await produced(told, stage.tick!(ctx));
      expect(seenByStage.at(-1)).toBe(ticked);
    } finally {
      await stage.close!();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('stage-cpu: the floors\' pages decoded once (wholeText)', () => {
  const utf8 = Buffer.from('<html><head><title>Grüße</title></head><body><p>naïve – “quoted”</p></body></html>', 'utf8');
  const cases: Array<[string, Buffer, string | null]> = [
    ['UTF-8 by header', utf8, 'text/html; charset=utf-8'],
    ['UTF-8 with a BOM', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), utf8]), null],
    ['windows-1252 by meta', Buffer.from([...Buffer.from('<meta charset="windows-1252"><p>'), 0x80, 0x93, 0xe9, ...Buffer.from('</p>')]), 'text/html'],
    ['Shift_JIS by header', Buffer.from([...Buffer.from('<p>'), 0x82, 0xa0, ...Buffer.from('</p>')]), 'text/html; charset=shift_jis'],
  ];
  it.each(cases)('%s: the text decodeBody gives', (_name, body, type) => {
    expect(wholeText(scanForm(body, type))).toBe(decodeBody(body, type).text);
  });

  it('a page scanForm decoded already is not decoded again', () => {
    const s = scanForm(cases[2][1], 'text/html');
    expect(typeof s.html).toBe('string');
    expect(wholeText(s)).toBe(s.html);
    expect(wholeText(s)).toContain('€“é');
  });
});
