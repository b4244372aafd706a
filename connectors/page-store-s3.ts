/**
 * A PageStore on S3 or any S3-compatible server (MinIO, S3Proxy, Ceph). S3 makes an object
 * visible only once its PutObject or CompleteMultipartUpload succeeds, so no partial object is
 * ever seen under its key.
 */
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import type { Logger } from 'pino';
import { sdkLogger } from '../lib/logger';
import type { PageStore } from './types';

export interface S3PageStoreConfig {
  /** e.g. `http://127.0.0.1:9000`; omit for AWS itself. */
  endpoint?: string;
  bucket: string;
  region: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  /** `http://host/bucket/key` addressing, which most self-hosted servers need. */
  forcePathStyle?: boolean;
  /** Key prefix inside the bucket, e.g. `crawl-2026`. */
  prefix?: string;
  /** Takes the SDK's warnings and errors as JSON lines (it logs nothing otherwise). */
  log?: Logger;
}

/** Bodies above this go up in parts: one PutObject is limited to 5 GiB and is retried whole. */
export const MULTIPART_THRESHOLD_BYTES = 16 * 1024 * 1024;
const PART_SIZE_BYTES = 16 * 1024 * 1024;
const PARALLEL_PARTS = 4;

export class S3PageStore implements PageStore {
  readonly location: string;
  private readonly client: S3Client;
  private readonly bucket: string;
  private readonly prefix: string;

  constructor(config: S3PageStoreConfig) {
    if (!config.bucket) throw new Error('S3PageStore: a bucket is required (set CRAWL_S3_BUCKET)');
    this.bucket = config.bucket;
    this.prefix = config.prefix ? config.prefix.replace(/^\/+|\/+$/g, '') + '/' : '';
    this.location = `s3://${this.bucket}/${this.prefix}`;
    this.client = new S3Client({
      endpoint: config.endpoint,
      region: config.region,
      forcePathStyle: config.forcePathStyle,
      credentials:
        config.accessKeyId && config.secretAccessKey
          ? { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey }
          : undefined,
      ...(config.log ? { logger: sdkLogger(config.log) } : {}),
    });
  }

  async put(key: string, body: Buffer, contentType = 'application/octet-stream'): Promise<string> {
    const params = { Bucket: this.bucket, Key: this.objectKey(key), Body: body, ContentType: contentType };
    if (body.length > MULTIPART_THRESHOLD_BYTES) {
      await new Upload({ client: this.client, params, partSize: PART_SIZE_BYTES, queueSize: PARALLEL_PARTS }).done();
    } else {
      await this.client.send(new PutObjectCommand(params));
    }
    return `s3://${this.bucket}/${params.Key}`;
  }

  async read(uri: string, offset: number, length: number): Promise<Buffer> {
    if (length === 0) return Buffer.alloc(0);
    const data = await this.get(uri, `bytes=${offset}-${offset + length - 1}`);
    if (data.length !== length) {
      throw new Error(`short read of ${uri}: wanted ${length} bytes at ${offset}, got ${data.length}`);
    }
    return data;
  }

  readAll(uri: string): Promise<Buffer> {
    return this.get(uri);
  }

  /** Keys under `prefix`, relative to the store's own prefix (as given to put). */
  async list(prefix: string): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }),
      );
      for (const obj of page.Contents ?? []) {
        if (obj.Key) keys.push(obj.Key.slice(this.prefix.length));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return keys.sort();
  }

  async close(): Promise<void> {
    this.client.destroy();
  }

  private objectKey(key: string): string {
    if (!key || key.startsWith('/')) throw new Error(`S3PageStore: key "${key}" must be a relative path`);
    return this.prefix + key;
  }

  private async get(uri: string, range?: string): Promise<Buffer> {
    const bucketPrefix = `s3://${this.bucket}/`;
    if (!uri.startsWith(bucketPrefix)) throw new Error(`S3PageStore: ${uri} is not in bucket ${this.bucket}`);
    const res = await this.client.send(
      new GetObjectCommand({ Bucket: this.bucket, Key: uri.slice(bucketPrefix.length), Range: range }),
    );
    if (!res.Body) throw new Error(`S3PageStore: ${uri} returned no body`);
    return Buffer.from(await res.Body.transformToByteArray());
  }
}
