/**
 * Picks the PageStore: S3 (or an S3-compatible server) when a bucket or endpoint is configured,
 * else a local folder.
 */
import type { Logger } from 'pino';
import { LocalPageStore } from './page-store-local';
import { S3PageStore } from './page-store-s3';
import type { PageStore } from './types';

export interface PageStoreConfig {
  s3Endpoint?: string;
  s3Bucket?: string;
  s3Region?: string;
  s3AccessKey?: string;
  s3SecretKey?: string;
  s3ForcePathStyle?: boolean;
  s3Prefix?: string;
  /** Folder for the local store. */
  localDir: string;
}

export const DEFAULT_S3_REGION = 'us-east-1';

/** `log`, if given, takes the S3 client's warnings and errors (lib/logger.ts sdkLogger). */
export function createPageStore(config: PageStoreConfig, log?: Logger): PageStore {
  if (!config.s3Bucket && !config.s3Endpoint) return new LocalPageStore(config.localDir);
  if (!config.s3Bucket) {
    throw new Error('an S3 endpoint is set but no bucket: set CRAWL_S3_BUCKET, or unset CRAWL_S3_ENDPOINT to store locally');
  }
  return new S3PageStore({
    endpoint: config.s3Endpoint,
    bucket: config.s3Bucket,
    region: config.s3Region || DEFAULT_S3_REGION,
    accessKeyId: config.s3AccessKey,
    secretAccessKey: config.s3SecretKey,
    forcePathStyle: config.s3ForcePathStyle,
    prefix: config.s3Prefix,
    log,
  });
}

/** The CRAWL_S3_* variables (the names the integration stack sets) and CRAWL_PAGE_DIR. */
export function pageStoreConfigFromEnv(env: NodeJS.ProcessEnv = process.env): PageStoreConfig {
  const forcePathStyle = env.CRAWL_S3_FORCE_PATH_STYLE;
  if (forcePathStyle !== undefined && !['', 'true', 'false', '1', '0'].includes(forcePathStyle)) {
    throw new Error(`CRAWL_S3_FORCE_PATH_STYLE=${forcePathStyle}: expected true or false`);
  }
  return {
    s3Endpoint: env.CRAWL_S3_ENDPOINT || undefined,
    s3Bucket: env.CRAWL_S3_BUCKET || undefined,
    s3Region: env.CRAWL_S3_REGION || undefined,
    s3AccessKey: env.CRAWL_S3_ACCESS_KEY || undefined,
    s3SecretKey: env.CRAWL_S3_SECRET_KEY || undefined,
    s3ForcePathStyle: forcePathStyle === 'true' || forcePathStyle === '1',
    s3Prefix: env.CRAWL_S3_PREFIX || undefined,
    localDir: env.CRAWL_PAGE_DIR || './data/pages',
  };
}
