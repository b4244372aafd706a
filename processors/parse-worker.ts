/**
 * Worker-thread entry of parse (run by processors/parse-pool.ts through piscina): the pure
 * per-page analysis (charset, one SAX pass, SimHash, language) of one fetched page. The
 * duplicate tables and every decision that depends on other pages stay on the stage's thread.
 */
import type { FetchedPageMsg } from '../lib/messages';
import { analyzePage, type PageAnalysis } from './parse';

export interface ParseTask {
  page: FetchedPageMsg;
  userAgent: string;
}

export default function analyze(task: ParseTask): PageAnalysis {
  // A Buffer arrives as a plain Uint8Array (structured clone); the decoders want Buffer views.
  const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const gz = task.page.record_gz as Uint8Array | null | undefined;
  const page = { ...task.page, body: asBuffer(task.page.body), record_gz: gz ? asBuffer(gz) : null };
  return analyzePage(page, { userAgent: task.userAgent });
}
