// The embedded key-value stores considered for the frontier's URL table, on its workload
// (docs/frontier-store.md, "Choosing the store"): batches of 2,000 URLs of 60-120 characters
// over hosts of Zipf sizes, each batch a getMany of the URLs (the exact seen check, nearly all
// misses) and a write of a row (64 bytes) plus a host-queue key per URL; then 20,000 head
// reads (the first queue key of a random host) and 20,000 point gets of known URLs.
// Not part of the build: the candidates are not the project's dependencies. Install them in a
// scratch folder and run this file from the built repo (it reads /proc through
// dist/bench/proc-stat.js) with that folder's packages on NODE_PATH (classic-level, a
// dependency of the project, then resolves to the repo's own):
//   mkdir /tmp/kv && cd /tmp/kv && npm init -y && npm i lmdb @nxtedition/rocksdb rocksdb rocksdb-native
//   cd <repo> && npx tsc -p tsconfig.json && NODE_PATH=/tmp/kv/node_modules node bench/store-candidates.js classic-level 5000000 /tmp/kv/db
// Prints one JSON line: upserts/s, head reads/s, point gets/s, disk bytes per URL, peak RSS
// (VmRSS; anonymous and file-backed apart: an mmap'd store's pages count in RSS), and CPU a URL
// over the upserts by thread (the main thread apart, others by name) from /proc/self/task.
// Environment (classic-level and @nxtedition/rocksdb only): STORES=N spreads the keys over N
// databases, a host's keys in one (the frontier's partitions); STORE_OPTS='{...}' is given to
// the engine's open; ITER_VARIANTS='[{...},...]' repeats the head reads with each set of iterator
// options (`{"query":true}`: RocksDB's querySync); STATS_OUT=file gets the engines' own stats
// (leveldb.stats, rocksdb.stats) at the upserts' end. docs/frontier-store.md, "Intake: RocksDB
// as the engine", has the options measured.
const fs = require('fs');
const path = require('path');
const [cand, nStr, dir] = process.argv.slice(2);
const N = Number(nStr);
const HOSTS = Math.max(1000, Math.floor(N / 50));
const BATCH = 2000;
// Options passed to the engine's open (JSON in STORE_OPTS); STORES databases, a host's keys in one (as the frontier's partitions).
const OPTS = JSON.parse(process.env.STORE_OPTS || '{}');
const STORES = Number(process.env.STORES || 1);
// Iterator options of the head reads: one pass of head reads per entry of ITER_VARIANTS (JSON array).
const VARIANTS = JSON.parse(process.env.ITER_VARIANTS || '[{}]');
let ITER = {};
// /proc's text read by the benchmarks' own parsers (bench/proc-stat.ts).
const { parseRssParts, parseStatCpuMs, parseStatName } = require(path.join(__dirname, '..', 'dist', 'bench', 'proc-stat.js'));
// CPU of every thread of this process (utime + stime, ms), by thread name (a trailing number as #); the main thread apart.
const threadCpu = () => { const out = { main: 0, other: {} }; for (const t of fs.readdirSync('/proc/self/task')) { let st; try { st = fs.readFileSync(`/proc/self/task/${t}/stat`, 'utf8'); } catch { continue; } const name = parseStatName(st).replace(/[0-9]+$/, '#'); const ms = parseStatCpuMs(st); if (Number(t) === process.pid) out.main += ms; else out.other[name] = (out.other[name] || 0) + ms; } return out; };
const cpuDiff = (a, b, n) => { const us = (ms) => +(ms * 1e3 / n).toFixed(2); const o = {}; for (const k of Object.keys(b.other)) o[k] = us(b.other[k] - (a.other[k] || 0)); return { main: us(b.main - a.main), all: us(b.main - a.main + Object.values(b.other).reduce((x, y) => x + y, 0) - Object.values(a.other).reduce((x, y) => x + y, 0)), ...o }; };

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
const rss = () => parseRssParts(fs.readFileSync('/proc/self/status', 'utf8'));
const du = (d) => { let n = 0; for (const f of fs.readdirSync(d, { withFileTypes: true })) n += f.isDirectory() ? du(path.join(d, f.name)) : fs.statSync(path.join(d, f.name)).size; return n; };

let dirNow = dir;
const withDir = async (d, f) => { const save = dirNow; dirNow = d; try { return await f(); } finally { dirNow = save; } };
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
    const db = new ClassicLevel(dirNow, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open({ cacheSize: 32 << 20, writeBufferSize: 32 << 20, ...OPTS });
    return {
      getMany: (keys) => db.getMany(keys),
      write: (puts) => { const b = db.batch(); for (const [k, v] of puts) b.put(k, v); return b.write(); },
      stats: () => db.getProperty('leveldb.stats'),
      head: async (prefix) => (await db.keys({ gte: prefix, lt: Buffer.concat([prefix, Buffer.from([255])]), limit: 1 }).all())[0] ?? null,
      close: () => db.close(),
    };
  },
  '@nxtedition/rocksdb': async () => {
    const { RocksLevel } = require('@nxtedition/rocksdb');
    const db = new RocksLevel(dirNow, { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open(Object.keys(OPTS).length ? OPTS : { cacheSize: 32 << 20, memtableMemoryBudget: 128 << 20 });
    return {
      getMany: (keys) => db.getMany(keys),
      write: (puts) => { const b = db.batch(); for (const [k, v] of puts) b.put(k, v); return b.write(); },
      stats: () => db.getProperty('rocksdb.stats'),
      head: async (prefix) => {
        const r = { gte: prefix, lt: Buffer.concat([prefix, Buffer.from([255])]), limit: 1 };
        if (ITER.query) return db.querySync({ ...r, values: false, keyEncoding: 'buffer' }).rows[0] ?? null;
        return (await db.keys({ ...r, ...ITER }).all())[0] ?? null;
      },
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
  const dbs = [];
  for (let i = 0; i < STORES; i++) { const d = STORES === 1 ? dir : path.join(dir, `s${i}`); fs.mkdirSync(d, { recursive: true }); dbs.push(await withDir(d, () => adapters[cand]())); }
  const storeOf = (k) => { if (STORES === 1) return 0; let h = 0; const s = k.toString('latin1'); const host = s.startsWith('u') ? /^u[a-z]+:\/\/([^/]+)/.exec(s)[1] : s.slice(1, s.indexOf('\0')); for (let i = 0; i < host.length; i++) h = (h * 31 + host.charCodeAt(i)) >>> 0; return h % STORES; };
  const split = (items, keyOf) => { const parts = dbs.map(() => []); for (const x of items) parts[storeOf(keyOf(x))].push(x); return parts; };
  const db = {
    getMany: async (keys) => { const parts = split(keys.map((k, i) => [k, i]), (x) => x[0]); const out = new Array(keys.length); await Promise.all(parts.map(async (p, s) => { if (!p.length) return; const got = await dbs[s].getMany(p.map((x) => x[0])); p.forEach((x, j) => { out[x[1]] = got[j]; }); })); return out; },
    write: (puts) => Promise.all(split(puts, (x) => x[0]).map((p, s) => (p.length ? dbs[s].write(p) : null))),
    head: (prefix) => dbs[storeOf(prefix)].head(prefix),
    close: () => Promise.all(dbs.map((d) => d.close())),
    stats: () => dbs.map((d) => d.stats?.()).join('\n'),
  };
  let peak = rss(); const track = () => { const r = rss(); if (r.rss > peak.rss) peak = r; };
  const t0 = Date.now(); let seq = 1; let found = 0; const cpu0 = threadCpu();
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
  const insSecs = (Date.now() - t0) / 1000; track(); const cpuIns = cpuDiff(cpu0, threadCpu(), N); const statsText = db.stats();
  // head reads of random hosts
  const headRates = [];
  let heads = 0; let headSecs = 0;
  for (const v of VARIANTS) {
    ITER = v;
    const t1 = Date.now(); heads = 0; const c1 = threadCpu();
    // A random host's head (uniform over hosts). Before i47rocks a stray, unused pickHost() here
    // drew one more random number a read: the hosts read and the point gets' keys after
    // differ from the runs measured before (docs/frontier-store.md, "Choosing the store" and
    // "Intake: RocksDB as the engine"); the upserts are the same.
    for (let i = 0; i < 20000; i++) { const prefix = Buffer.from('q' + hostName(Math.floor(rnd() * HOSTS)) + '\0'); if (await db.head(prefix)) heads++; }
    headSecs = (Date.now() - t1) / 1000; track();
    headRates.push({ iter: v, headReadsPerSec: Math.round(20000 / headSecs), cpuUsPerRead: cpuDiff(c1, threadCpu(), 20000) });
  }
  // random point gets of known URLs (hits), in batches of 100
  const t2 = Date.now(); let hits = 0; const GETS = 20000;
  for (let i = 0; i < GETS; i += 100) { const ks = []; for (let j = 0; j < 100; j++) { const h = Math.floor(rnd() * Math.min(HOSTS, 5000)); const c = counters[h]; if (c) ks.push(uKey(url(h, Math.floor(rnd() * c)))); } const g = await db.getMany(ks); hits += g.filter((x) => x !== undefined && x !== null).length; }
  const getSecs = (Date.now() - t2) / 1000; track();
  await db.close();
  const bytes = du(dir);
  console.log(JSON.stringify({ cand, urls: N, hosts: HOSTS, upsertsPerSec: Math.round(N / insSecs), headReadsPerSec: Math.round(20000 / headSecs), heads, pointGetsPerSec: Math.round(GETS / getSecs), hits, falseFound: found, diskBytesPerUrl: +(bytes / N).toFixed(1), peakRssMiB: +(peak.rss / 1048576).toFixed(0), peakAnonMiB: +(peak.anon / 1048576).toFixed(0), peakFileMiB: +(peak.file / 1048576).toFixed(0), stores: STORES, opts: OPTS, cpuUsPerUrlInIntake: cpuIns, headRates }));
  if (process.env.STATS_OUT) fs.writeFileSync(process.env.STATS_OUT, statsText);
})().catch((e) => { console.error(e); process.exit(1); });
