/**
 * kafkajs checksums every record batch it produces with a CRC-32C written in JavaScript, one
 * byte per step: 4% of the CPU of Kafka mode's fetch process, whose pages are 50 KiB each
 * (113 µs a page here, against 8.5 µs for the native one). This module puts the native
 * CRC-32C of @node-rs/crc32 (SSE4.2 / ARMv8 CRC instructions) in place of kafkajs's module,
 * through Node's module cache, before kafkajs is loaded: import it ahead of kafkajs.
 *
 * kafkajs 2.2.4 is its last release, so the module path is stable. Should the native package
 * be missing for a platform, or the path change, kafkajs keeps its own (same result, slower):
 * `kafkaCrc32cImplementation()` tells which one is in use.
 */
import Module from 'node:module';

const KAFKAJS_CRC32C = 'kafkajs/src/protocol/recordBatch/crc32C/index.js';

type Crc = (buffer: Buffer) => number;

function nativeCrc32c(): Crc | null {
  try {
    const { crc32c } = require('@node-rs/crc32') as { crc32c(input: Buffer, initialState?: number): number };
    // kafkajs's contract: the checksum as an unsigned 32-bit number.
    return (buffer: Buffer) => crc32c(buffer) >>> 0;
  } catch {
    return null;
  }
}

let installed: 'native' | 'javascript' = 'javascript';

function install(): void {
  let path: string;
  try {
    path = require.resolve(KAFKAJS_CRC32C);
  } catch {
    return;
  }
  // Already loaded (someone imported kafkajs first): the batch encoder holds the old function.
  if (require.cache[path]) return;
  const crc = nativeCrc32c();
  if (!crc) return;
  const m = new Module(path, module);
  m.filename = path;
  m.loaded = true;
  m.exports = crc;
  require.cache[path] = m;
  // Module loaders that keep their own registry (jest's) ignore require.cache: check.
  if ((require(path) as unknown) === crc) installed = 'native';
}

install();

/** Which CRC-32C kafkajs's producer uses in this process. */
export function kafkaCrc32cImplementation(): 'native' | 'javascript' {
  return installed;
}
