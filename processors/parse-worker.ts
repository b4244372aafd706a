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
  const body = task.page.body as Uint8Array;
  // A Buffer arrives as a plain Uint8Array (structured clone); the decoder wants a Buffer view.
  const page = { ...task.page, body: Buffer.from(body.buffer, body.byteOffset, body.byteLength) };
  return analyzePage(page, { userAgent: task.userAgent });
}
