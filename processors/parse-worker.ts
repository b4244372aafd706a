/**
 * Worker-thread entry of parse (run by processors/parse-pool.ts through piscina): the pure
 * per-page analysis (charset, one SAX pass, SimHash, language) of one fetched page. The
 * duplicate tables and every decision that depends on other pages stay on the stage's thread.
 */
import { move, transferableSymbol, valueSymbol, workerData } from 'piscina';
import type { FetchedPageMsg } from '../lib/messages';
import { analyzePage, type PageAnalysis } from './parse';
import { TextRingWriter, type TextRings, type TextSpan } from './parse-text-ring';

export interface ParseTask {
  page: FetchedPageMsg;
  userAgent: string;
}

/** What a worker returns: the text in its ring (textSpan, `text` then empty) or in its own buffer. */
export interface WorkerAnalysis extends PageAnalysis {
  textSpan?: TextSpan;
}

/** This worker's text ring (processors/parse-text-ring.ts), if the pool gave it one. */
const ring = TextRingWriter.claim((workerData as { textRings?: TextRings } | undefined)?.textRings);
const NO_TEXT = new Uint8Array(0);

export default function analyze(task: ParseTask): WorkerAnalysis {
  // A Buffer arrives as a plain Uint8Array (structured clone); the decoders want Buffer views.
  const asBuffer = (b: Uint8Array): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const gz = task.page.record_gz as Uint8Array | null | undefined;
  const page = { ...task.page, body: asBuffer(task.page.body), record_gz: gz ? asBuffer(gz) : null };
  // The text comes back as its UTF-8 bytes: in this worker's ring of shared memory when it fits
  // there (parse-text-ring.ts), otherwise in a buffer of their own, moved rather than copied.
  // As a string (about 45 KB a page of the benchmark's web) it was allocated on the event loop's
  // heap, and much of it lived through two scavenges there: in `crawl run` (--trace-gc-nvp, 15 s
  // on) that heap promoted 970 MB with text strings and 330 MB with bytes, and scavenged 137
  // times against 88. The bytes are the text record's block as it will be stored, outside the
  // JavaScript heap. The text is encoded straight into the ring (no buffer of its own, no copy).
  let textSpan: TextSpan | null = null;
  const intoRing = (s: string): Uint8Array | null => {
    const put = ring!.putString(s);
    textSpan = put?.span ?? null;
    return put?.bytes ?? null;
  };
  let result: PageAnalysis & { text: Uint8Array };
  try {
    result = analyzePage(page, { userAgent: task.userAgent, textAsUtf8: ring ? intoRing : true });
  } catch (err) {
    // The span never reaches the event loop, which would otherwise never give it back.
    if (textSpan) ring!.rollback(textSpan);
    throw err;
  }
  if (textSpan) return { ...result, text: NO_TEXT, textSpan };
  const text = result.text;
  return move({
    get [transferableSymbol]() {
      return [text.buffer];
    },
    get [valueSymbol]() {
      return result;
    },
  }) as unknown as WorkerAnalysis;
}
