/**
 * S3PageStore against the real S3-compatible server (S3Proxy) that test/setup/global-setup.ts
 * starts and describes in CRAWL_S3_* variables. Each run writes under its own prefix.
 */
import { randomBytes } from 'node:crypto';
import { S3PageStore, MULTIPART_THRESHOLD_BYTES } from '../../connectors/page-store-s3';
import { createPageStore, pageStoreConfigFromEnv } from '../../connectors/page-store';

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the integration global setup should start S3Proxy and set it`);
  return value;
}

const runPrefix = `test-${Date.now()}-${randomBytes(4).toString('hex')}`;
let store: S3PageStore;

beforeAll(() => {
  store = new S3PageStore({
    endpoint: requireEnv('CRAWL_S3_ENDPOINT'),
    bucket: requireEnv('CRAWL_S3_BUCKET'),
    region: process.env.CRAWL_S3_REGION || 'us-east-1',
    accessKeyId: requireEnv('CRAWL_S3_ACCESS_KEY'),
    secretAccessKey: requireEnv('CRAWL_S3_SECRET_KEY'),
    forcePathStyle: process.env.CRAWL_S3_FORCE_PATH_STYLE !== 'false',
    prefix: runPrefix,
  });
});

afterAll(async () => {
  await store.close();
});

describe('S3PageStore', () => {
  test('puts a small object and reads a byte range of it', async () => {
    const body = Buffer.from('0123456789abcdefghij');
    const uri = await store.put('warc/small.warc.gz', body, 'application/warc');
    expect(uri).toBe(`s3://${process.env.CRAWL_S3_BUCKET}/${runPrefix}/warc/small.warc.gz`);
    expect((await store.read(uri, 10, 6)).toString()).toBe('abcdef');
    expect((await store.readAll(uri)).equals(body)).toBe(true);
    await expect(store.read(uri, 15, 10)).rejects.toThrow('short read');
  });

  test('uploads a body above the threshold in parts, and reads ranges across part boundaries', async () => {
    const size = MULTIPART_THRESHOLD_BYTES + 3 * 1024 * 1024 + 17;
    const body = randomBytes(size);
    const uri = await store.put('warc/big.warc.gz', body, 'application/warc');
    const boundary = 16 * 1024 * 1024;
    const slice = await store.read(uri, boundary - 100, 200);
    expect(slice.equals(body.subarray(boundary - 100, boundary + 100))).toBe(true);
    expect((await store.read(uri, size - 5, 5)).equals(body.subarray(size - 5))).toBe(true);
    expect((await store.readAll(uri)).equals(body)).toBe(true);
  }, 60_000);

  test('lists keys under a prefix across pages of results', async () => {
    // ListObjectsV2 returns at most 1,000 keys a page, so 1,005 keys need two.
    const keys = Array.from({ length: 1005 }, (_, i) => `list/k${String(i).padStart(4, '0')}.cdxj`);
    for (let i = 0; i < keys.length; i += 50) {
      await Promise.all(keys.slice(i, i + 50).map((k) => store.put(k, Buffer.from(k))));
    }
    expect(await store.list('list/')).toEqual(keys);
    expect(await store.list('nothing-here/')).toEqual([]);
  }, 60_000);

  test('createPageStore picks S3 from the CRAWL_S3_* variables', async () => {
    const chosen = createPageStore(pageStoreConfigFromEnv({ ...process.env, CRAWL_S3_PREFIX: runPrefix }));
    try {
      expect(chosen).toBeInstanceOf(S3PageStore);
      expect(chosen.location).toBe(`s3://${process.env.CRAWL_S3_BUCKET}/${runPrefix}/`);
      expect(await chosen.list('list/')).toHaveLength(1005);
    } finally {
      await chosen.close();
    }
  });
});
