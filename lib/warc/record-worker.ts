/**
 * The WARC record thread's side (lib/warc/record-thread.ts): builds each job's records (the
 * digests and gzip members) in the order the jobs come, and sends them back, each member in a
 * buffer of its own, handed over rather than copied where it already owns one.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { entryRecords, jobEntry, type Job, type JobResult, type RecordOut } from './record-job';

const ring: SharedArrayBuffer = (workerData as { ring: SharedArrayBuffer }).ring;

function own(gz: Buffer): Uint8Array {
  if (gz.byteOffset === 0 && gz.byteLength === gz.buffer.byteLength && !(gz.buffer instanceof SharedArrayBuffer)) return gz;
  const copy = new Uint8Array(gz.byteLength);
  copy.set(gz);
  return copy;
}

parentPort!.on('message', (job: Job) => {
  let result: JobResult;
  const transfer: ArrayBuffer[] = [];
  try {
    const b = job.bytes;
    const bytes = b === null ? null : 'own' in b ? Buffer.from(b.own) : Buffer.from(ring, b.ring, b.length);
    const built = entryRecords(jobEntry(job.entry, bytes), job.ctx);
    const records: RecordOut[] = built.records.map((r) => {
      const gz = own(r.gz);
      transfer.push(gz.buffer as ArrayBuffer);
      return { ...r, gz };
    });
    result = { seq: job.seq, records, main: built.main, warcinfoId: built.warcinfoId };
  } catch (err) {
    result = { seq: job.seq, error: (err as Error).stack ?? String(err) };
  }
  parentPort!.postMessage(result, transfer);
});
