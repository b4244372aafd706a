/**
 * Bloom filter generations in Redis/Valkey without the bloom module (Debian's redis-server has
 * none): each shard is a plain bit string, and Lua scripts test or set a batch's k bits per
 * URL in the server. A batch is one pipeline of one EVALSHA per (generation, shard) it
 * touches: ONE round trip however many links it holds.
 *
 * Keys, under a prefix (one per crawl; tests use a unique one):
 *   {prefix}pointer          hash: current, previous, building (generation ids, '' = none)
 *   {prefix}seq              last generation id
 *   {prefix}gen:{g}          hash: n, p, k, shards, shard_bits, created_at, added
 *   {prefix}gen:{g}:{shard}  the shard's bits
 * Single-node Redis/Valkey: the scripts touch keys in one server (not Redis Cluster).
 */
import Redis, { type ChainableCommander } from 'ioredis';
import { EMPTY_POINTER, generationsToAdd, generationsToCheck, mergeSeen, planShards, type GenPointer, type ShardCall } from '../lib/bloom/generations';
import type { BloomParams } from '../lib/bloom/sizing';

/*
 * A call's offsets travel as ONE binary argument, k per URL, 4 bytes each, little-endian
 * (packOffsets), instead of one decimal string per offset. Four interleaved runs of
 * bench/redis-bloom-cpu.ts (450,000 links in batches of 300): the client's CPU fell by 37-53%
 * (ioredis built and wrote an argument per offset), Redis's moved by -9% to +10% (Lua decodes
 * what RESP parsed), together 15-31% less. BITFIELD calls of many offsets instead of a
 * GETBIT/SETBIT each cost Redis more; one comma-separated decimal string (read with gmatch) cost
 * the client more. Shards hold at most 2^30 bits, so 32 bits hold any offset; string.byte is
 * core Lua (no struct library needed).
 */
// `byte` is string.byte, `s` the packed offsets, `key` the shard: sets `o` to offset number j.
const OFFSET_J = `local a, b, c, d = byte(s, 4 * j + 1, 4 * j + 4)
    local o = a + b * 256 + c * 65536 + d * 16777216`;

const CHECK = `
local k = tonumber(ARGV[1])
local s, key, byte = ARGV[2], KEYS[1], string.byte
local out = {}
for u = 0, #s / (4 * k) - 1 do
  local seen = 1
  for j = u * k, (u + 1) * k - 1 do
    ${OFFSET_J}
    if redis.call('GETBIT', key, o) == 0 then seen = 0 break end
  end
  out[u + 1] = seen
end
return out`;

// Check-and-set: returns how many URLs set at least one new bit (≈ new URLs), for fill ratio.
const ADD = `
local k = tonumber(ARGV[1])
local s, key, byte = ARGV[2], KEYS[1], string.byte
local fresh = 0
for u = 0, #s / (4 * k) - 1 do
  local new = 0
  for j = u * k, (u + 1) * k - 1 do
    ${OFFSET_J}
    if redis.call('SETBIT', key, o, 1) == 0 then new = 1 end
  end
  fresh = fresh + new
end
if fresh > 0 then redis.call('HINCRBY', KEYS[2], 'added', fresh) end
return fresh`;

/** Offsets as the scripts read them: 4 bytes each, little-endian. */
export function packOffsets(offsets: readonly number[]): Buffer {
  const b = Buffer.allocUnsafe(4 * offsets.length);
  for (let i = 0; i < offsets.length; i++) b.writeUInt32LE(offsets[i], 4 * i);
  return b;
}

// Create generation 1 (or the next) as current when there is none: first start, or a flushed Redis.
const INIT = `
local cur = redis.call('HGET', KEYS[1], 'current')
if cur and cur ~= '' then return cur end
local g = tostring(redis.call('INCR', KEYS[2]))
redis.call('HSET', ARGV[1] .. 'gen:' .. g, 'n', ARGV[2], 'p', ARGV[3], 'k', ARGV[4], 'shards', ARGV[5], 'shard_bits', ARGV[6], 'created_at', ARGV[7], 'added', 0)
redis.call('HSET', KEYS[1], 'current', g)
return g`;

// The atomic switch: building becomes current, current becomes previous.
const SWITCH = `
if redis.call('HGET', KEYS[1], 'building') ~= ARGV[1] then return redis.error_reply('building generation is not ' .. ARGV[1]) end
local cur = redis.call('HGET', KEYS[1], 'current') or ''
redis.call('HSET', KEYS[1], 'previous', cur, 'current', ARGV[1], 'building', '')
return cur`;

interface BloomCommands {
  bloomCheck(key: string, k: number, offsets: Buffer): ChainableCommander;
  bloomAdd(shardKey: string, metaKey: string, k: number, offsets: Buffer): ChainableCommander;
  bloomInit(pointer: string, seq: string, ...args: Array<string | number>): Promise<string>;
  bloomSwitch(pointer: string, gen: string): Promise<string>;
}

export interface Generation extends BloomParams {
  id: string;
  added: number;
}

export type RedisClient = Redis;

/** URLs per script call: bounds how long one call holds the (single-threaded) server. */
export const URLS_PER_CALL = 2_000;

/** Split shard calls of huge batches (a rebuild's) into several script calls, still one pipeline. */
function chunked(calls: readonly ShardCall[], k: number): ShardCall[] {
  const out: ShardCall[] = [];
  for (const c of calls) {
    for (let i = 0; i < c.urls.length; i += URLS_PER_CALL) {
      out.push({ shard: c.shard, urls: c.urls.slice(i, i + URLS_PER_CALL), offsets: c.offsets.slice(i * k, (i + URLS_PER_CALL) * k) });
    }
  }
  return out;
}

/** A client that fails fast while disconnected (seen-test then degrades) and keeps reconnecting. */
export function connectRedis(url: string): Redis {
  const r = new Redis(url, {
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 5_000,
    retryStrategy: (times) => Math.min(times * 200, 1_000),
  });
  r.on('error', () => undefined); // reported by the callers, rate-limited
  return r;
}

export class RedisBloom {
  private readonly gens = new Map<string, Generation>();

  constructor(readonly redis: Redis, readonly prefix: string) {
    redis.defineCommand('bloomCheck', { numberOfKeys: 1, lua: CHECK });
    redis.defineCommand('bloomAdd', { numberOfKeys: 2, lua: ADD });
    redis.defineCommand('bloomInit', { numberOfKeys: 2, lua: INIT });
    redis.defineCommand('bloomSwitch', { numberOfKeys: 1, lua: SWITCH });
  }

  private get cmd(): BloomCommands {
    return this.redis as unknown as BloomCommands;
  }

  key(...parts: Array<string | number>): string {
    return this.prefix + parts.join(':');
  }

  shardKey(gen: string, shard: number): string {
    return this.key('gen', gen, shard);
  }

  async pointer(): Promise<GenPointer> {
    const h = await this.redis.hgetall(this.key('pointer'));
    if (!h.current) return { ...EMPTY_POINTER, building: h.building || null };
    return { current: h.current, previous: h.previous || null, building: h.building || null };
  }

  /** The current generation, created with these params when there is none. */
  async ensureCurrent(b: BloomParams, now = Date.now()): Promise<string> {
    return this.cmd.bloomInit(this.key('pointer'), this.key('seq'), this.prefix, b.n, b.p, b.k, b.shards, b.shardBits, now);
  }

  /** A generation's params (immutable, cached) and its `added` count (re-read each call). */
  async generation(id: string): Promise<Generation | null> {
    const h = await this.redis.hgetall(this.key('gen', id));
    if (!h.k) {
      this.gens.delete(id);
      return null;
    }
    const g: Generation = { id, n: Number(h.n), p: Number(h.p), k: Number(h.k), shards: Number(h.shards), shardBits: Number(h.shard_bits), added: Number(h.added ?? 0) };
    this.gens.set(id, g);
    return g;
  }

  private known(ids: readonly string[]): Generation[] {
    return ids.map((id) => this.gens.get(id)).filter((g): g is Generation => !!g);
  }

  /** One round trip: is each URL in any of the pointer's checked generations? */
  async check(p: GenPointer, urls: readonly string[]): Promise<boolean[]> {
    const seen = new Array<boolean>(urls.length).fill(false);
    const pipe = this.redis.pipeline();
    const calls: ShardCall[] = [];
    for (const g of this.known(generationsToCheck(p))) {
      for (const c of chunked(planShards(urls, g), g.k)) {
        (pipe as unknown as BloomCommands).bloomCheck(this.shardKey(g.id, c.shard), g.k, packOffsets(c.offsets));
        calls.push(c);
      }
    }
    const res = await pipe.exec();
    res?.forEach(([err, answers], i) => {
      if (err) throw err;
      mergeSeen(seen, calls[i], answers as number[]);
    });
    return seen;
  }

  /** One round trip: set the URLs' bits in the pointer's current and building generations. */
  async add(p: GenPointer, urls: readonly string[]): Promise<number> {
    return this.addTo(this.known(generationsToAdd(p)), urls);
  }

  /** Returns how many (URL, generation) pairs were new. */
  async addTo(gens: readonly Generation[], urls: readonly string[]): Promise<number> {
    const pipe = this.redis.pipeline();
    for (const g of gens) {
      for (const c of chunked(planShards(urls, g), g.k)) (pipe as unknown as BloomCommands).bloomAdd(this.shardKey(g.id, c.shard), this.key('gen', g.id), g.k, packOffsets(c.offsets));
    }
    if (pipe.length === 0) return 0;
    let fresh = 0;
    for (const [err, n] of (await pipe.exec()) ?? []) {
      if (err) throw err;
      fresh += n as number;
    }
    return fresh;
  }

  /** A new, empty generation that seen-test starts adding to (pointer `building`). */
  async startBuilding(b: BloomParams, now = Date.now()): Promise<Generation> {
    const p = await this.pointer();
    if (p.building) throw new Error(`generation ${p.building} is already being built (another rebuild running?); \`crawl bloom abort\` drops it`);
    const id = String(await this.redis.incr(this.key('seq')));
    await this.redis.hset(this.key('gen', id), { n: b.n, p: b.p, k: b.k, shards: b.shards, shard_bits: b.shardBits, created_at: now, added: 0 });
    await this.redis.hset(this.key('pointer'), 'building', id);
    return (await this.generation(id))!;
  }

  /** Atomically make `id` (the building one) current; returns the replaced generation id. */
  async switchTo(id: string): Promise<string | null> {
    return (await this.cmd.bloomSwitch(this.key('pointer'), id)) || null;
  }

  /** Delete a generation's bits and params, and clear it from the pointer. */
  async drop(id: string): Promise<void> {
    const g = this.gens.get(id) ?? (await this.generation(id));
    const keys = g ? Array.from({ length: g.shards }, (_, s) => this.shardKey(id, s)) : [];
    await this.redis.del(this.key('gen', id), ...keys);
    const p = await this.pointer();
    if (p.previous === id) await this.redis.hset(this.key('pointer'), 'previous', '');
    if (p.building === id) await this.redis.hset(this.key('pointer'), 'building', '');
    this.gens.delete(id);
  }

  /** Share of bits set, over all shards (BITCOUNT reads every shard: for operators, not hot paths). */
  async bitFill(id: string): Promise<number> {
    const g = await this.generation(id);
    if (!g) return 0;
    let ones = 0;
    for (let s = 0; s < g.shards; s++) ones += await this.redis.bitcount(this.shardKey(id, s));
    return ones / (g.shards * g.shardBits);
  }
}
