// The embedded key-value stores considered for the frontier's URL table, on its workload
// (docs/frontier-store.md, "Choosing the store"): batches of 2,000 URLs of 60-120 characters
// over hosts of Zipf sizes, each batch a getMany of the URLs (the exact seen check, nearly all
// misses) and a write of a row (64 bytes) plus a host-queue key per URL; then 20,000 head
// reads (the first queue key of a random host) and 20,000 point gets of known URLs.
// Not part of the build: the candidates are not the project's dependencies. Run it in a
// scratch folder:
//   mkdir /tmp/kv && cd /tmp/kv && npm init -y && npm i lmdb classic-level @nxtedition/rocksdb rocksdb rocksdb-native
//   cp <repo>/bench/store-candidates.js . && node store-candidates.js classic-level 5000000 /tmp/kv/db
// Prints one JSON line: upserts/s, head reads/s, point gets/s, disk bytes per URL, peak RSS
// (VmRSS; anonymous and file-backed apart: an mmap'd store's pages count in RSS).
const fs = require('fs');
const path = require('path');
const [cand, nStr, dir] = process.argv.slice(2);
const N = Number(nStr);
const HOSTS = Math.max(1000, Math.floor(N / 50));
const BATCH = 2000;

// Zipf host sizes: pick host by inverse CDF of weights k^-1.1
let seed = 12345;
const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 4294967296);
const weights = new Float64Array(HOSTS); let tot = 0;
for (let k = 0; k < HOSTS; k++) { tot += 1 / Math.pow(k + 1, 1.1); weights[k] = tot; }
const pickHost = () => { const x = rnd() * tot; let lo = 0, hi = HOSTS - 1; while (lo < hi) { const m = (lo + hi) >> 1; if (weights[m] < x) lo = m + 1; else hi = m; } return lo; };
const counters = new Uint32Array(HOSTS);
const WORDS = ['news', 'article', 'category', 'products', 'blog', 'archive', '2024', 'item', 'view', 'tag', 'search', 'docs'];
const hostName = (h) => `www.site-${h.toString(36)}-example.com`;
function url(h, i) {
  let p = `https://${hostName(h)}/${WORDS[i % 12]}/${WORDS[(i >> 3) % 12]}/${i.toString(36)}-${(i * 2654435761 >>> 0).toString(36)}`;
  const want = 60 + ((i * 7919) % 61);
  if (p.length < want) p += '?id=' + 'x'.repeat(Math.max(0, want - p.length - 4));
  return p.slice(0, 120);
}
const value = Buffer.alloc(64, 7);
const be = (n) => { const b = Buffer.alloc(8); b.writeBigUInt64BE(BigInt(n)); return b; };
const qKey = (h, level, seq) => Buffer.concat([Buffer.from('q' + hostName(h) + '\0'), Buffer.from([level]), be(seq)]);
const uKey = (u) => Buffer.from('u' + u);
const rss = () => { const s = fs.readFileSync('/proc/self/status', 'utf8'); const g = (k) => Number(new RegExp(k + ':\\s+(\\d+)').exec(s)[1]) * 1024; return { rss: g('VmRSS'), anon: g('RssAnon'), file: g('RssFile') }; };
const du = (d) => { let n = 0; for (const f of fs.readdirSync(d, { withFileTypes: true })) n += f.isDirectory() ? du(path.join(d, f.name)) : fs.statSync(path.join(d, f.name)).size; return n; };

const adapters = {
  lmdb: async () => {
    const { open } = require('lmdb');
    const db = open({ path: dir, keyEncoding: 'binary', encoding: 'binary', noSync: true, compression: false });
    return {
      getMany: async (keys) => db.getMany(keys),
      write: async (puts) => db.transactionSync(() => { for (const [k, v] of puts) db.put(k, v); }),
      head: async (prefix) => { for (const { key } of db.getRange({ start: prefix, end: Buffer.concat([prefix, Buffer.from([255])]), limit: 1 })) return key; return null; },
      close: async () => db.close(),
    };
  },
  'classic-level': async () => {
    const { ClassicLevel } = require('classic-level');
    const db = new ClassicLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open({ cacheSize: 32 << 20, writeBufferSize: 32 << 20 });
    return {
      getMany: (keys) => db.getMany(keys),
      write: (puts) => db.batch(puts.map(([key, value]) => ({ type: 'put', key, value }))),
      head: async (prefix) => (await db.keys({ gte: prefix, lt: Buffer.concat([prefix, Buffer.from([255])]), limit: 1 }).all())[0] ?? null,
      close: () => db.close(),
    };
  },
  '@nxtedition/rocksdb': async () => {
    const { RocksLevel } = require('@nxtedition/rocksdb');
    const db = new RocksLevel(dir, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open({ cacheSize: 32 << 20, memtableMemoryBudget: 128 << 20 });
    return {
      getMany: (keys) => db.getMany(keys),
      write: (puts) => db.batch(puts.map(([key, value]) => ({ type: 'put', key, value }))),
      head: async (prefix) => (await db.keys({ gte: prefix, lt: Buffer.concat([prefix, Buffer.from([255])]), limit: 1 }).all())[0] ?? null,
      close: () => db.close(),
    };
  },
  rocksdb: async () => {
    const RocksDB = require('rocksdb');
    const db = RocksDB(dir);
    const p = (f) => new Promise((r, j) => f((e, v) => (e ? j(e) : r(v))));
    await p((cb) => db.open({ cacheSize: 32 << 20, writeBufferSize: 32 << 20 }, cb));
    return {
      getMany: (keys) => p((cb) => db.getMany(keys, {}, cb)),
      write: (puts) => p((cb) => db.batch(puts.map(([key, value]) => ({ type: 'put', key, value })), cb)),
      head: (prefix) => new Promise((r, j) => { const it = db.iterator({ gte: prefix, lt: Buffer.concat([prefix, Buffer.from([255])]), limit: 1, values: false }); it.next((e, k) => it.end(() => (e ? j(e) : r(k ?? null)))); }),
      close: () => p((cb) => db.close(cb)),
    };
  },
  'rocksdb-native': async () => {
    const RocksDB = require('rocksdb-native');
    const db = new RocksDB(dir, {});
    await db.ready();
    return {
      getMany: async (keys) => { if (keys.length === 0) return []; const r = db.read({ capacity: keys.length }); const ps = keys.map((k) => r.get(k)); r.tryFlush(); return Promise.all(ps); },
      write: async (puts) => { const w = db.write({ capacity: puts.length }); for (const [k, v] of puts) w.tryPut(k, v); await w.flush(); },
      head: async (prefix) => { let out = null; for await (const { key } of db.iterator({ gte: prefix, lt: Buffer.concat([prefix, Buffer.from([255])]) }, { limit: 1, values: false })) out = key; return out; },
      close: () => Promise.race([db.close(), new Promise((r) => setTimeout(r, 2000))]),
    };
  },
};

(async () => {
  fs.rmSync(dir, { recursive: true, force: true }); fs.mkdirSync(dir, { recursive: true });
  const db = await adapters[cand]();
  let peak = rss(); const track = () => { const r = rss(); if (r.rss > peak.rss) peak = r; };
  const t0 = Date.now(); let seq = 1; let found = 0;
  const known = [];
  for (let done = 0; done < N; done += BATCH) {
    const urls = []; const hosts = [];
    for (let i = 0; i < BATCH; i++) { const h = pickHost(); hosts.push(h); urls.push(url(h, counters[h]++)); }
    const got = await db.getMany(urls.map(uKey));
    for (const g of got) if (g !== undefined && g !== null) found++;
    const puts = [];
    for (let i = 0; i < BATCH; i++) { puts.push([uKey(urls[i]), value]); puts.push([qKey(hosts[i], (urls[i].length) % 4, seq++), Buffer.from(urls[i])]); }
    await db.write(puts);
    if (done % 200000 === 0) { track(); if (known.length < 20000) known.push(urls[0]); }
  }
  const insSecs = (Date.now() - t0) / 1000; track();
  // head reads of random hosts
  const t1 = Date.now(); let heads = 0;
  for (let i = 0; i < 20000; i++) { const h = pickHost() ; const prefix = Buffer.from('q' + hostName(Math.floor(rnd() * HOSTS)) + '\0'); if (await db.head(prefix)) heads++; }
  const headSecs = (Date.now() - t1) / 1000; track();
  // random point gets of known URLs (hits), in batches of 100
  const t2 = Date.now(); let hits = 0; const GETS = 20000;
  for (let i = 0; i < GETS; i += 100) { const ks = []; for (let j = 0; j < 100; j++) { const h = Math.floor(rnd() * Math.min(HOSTS, 5000)); const c = counters[h]; if (c) ks.push(uKey(url(h, Math.floor(rnd() * c)))); } const g = await db.getMany(ks); hits += g.filter((x) => x !== undefined && x !== null).length; }
  const getSecs = (Date.now() - t2) / 1000; track();
  await db.close();
  const bytes = du(dir);
  console.log(JSON.stringify({ cand, urls: N, hosts: HOSTS, upsertsPerSec: Math.round(N / insSecs), headReadsPerSec: Math.round(20000 / headSecs), heads, pointGetsPerSec: Math.round(GETS / getSecs), hits, falseFound: found, diskBytesPerUrl: +(bytes / N).toFixed(1), peakRssMiB: +(peak.rss / 1048576).toFixed(0), peakAnonMiB: +(peak.anon / 1048576).toFixed(0), peakFileMiB: +(peak.file / 1048576).toFixed(0) }));
})().catch((e) => { console.error(e); process.exit(1); });
