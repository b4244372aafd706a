import { murmur2, partitionForHost, routingKey } from '../../lib/partitioner';
import * as ownStrings from '../../lib/own-string';
// kafkajs's own default partitioner is the reference: Kafka mode and the embedded log must agree.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const kafkajsMurmur2 = require('kafkajs/src/producer/partitioners/default/murmur2') as (k: Buffer) => number;

describe('partitioner', () => {
  const keys = ['', 'a', 'ab', 'abc', 'abcd', 'example.com', '127.0.0.2', 'xn--bcher-kva.example', 'very.long.host.name.example.co.uk'];
  it.each(keys)('murmur2(%p) matches kafkajs', (k) => {
    expect(murmur2(Buffer.from(k))).toBe(kafkajsMurmur2(Buffer.from(k)));
  });
  it('spreads hosts over partitions and is stable', () => {
    const counts = new Array(8).fill(0);
    for (let i = 0; i < 8000; i++) counts[partitionForHost(`host${i}.example`, 8)]++;
    for (const c of counts) expect(c).toBeGreaterThan(800);
    expect(partitionForHost('example.com', 8)).toBe(partitionForHost('example.com', 8));
  });
});

describe('routing by registered domain', () => {
  it('puts every host of one registered domain in one partition', () => {
    const p = partitionForHost('example.co.uk', 8);
    for (const h of ['www.example.co.uk', 'a.b.example.co.uk', 'shop.example.co.uk']) expect(partitionForHost(h, 8)).toBe(p);
  });
  it('keeps IP hosts and private-suffix owners apart', () => {
    expect(routingKey('127.0.0.2')).toBe('127.0.0.2');
    expect(routingKey('alice.github.io')).toBe('alice.github.io');
    expect(routingKey('a.b.example.co.uk')).toBe('example.co.uk');
  });
});

describe('the routing caches', () => {
  afterEach(() => jest.restoreAllMocks());

  it('keep their own copy of a host name, not the string given (a slice of a URL would keep the URL: lib/own-string.ts)', () => {
    const own = jest.spyOn(ownStrings, 'ownString');
    const host = `www.cache-copy-${Date.now()}.example.org`;
    expect(routingKey(host)).toBe('example.org');
    expect(partitionForHost(host, 8)).toBe(partitionForHost('example.org', 8));
    // Once for each cache's key on the miss; the hits after it copy nothing.
    expect(own.mock.calls.filter(([s]) => s === host)).toHaveLength(2);
    routingKey(host);
    partitionForHost(host, 8);
    expect(own.mock.calls.filter(([s]) => s === host)).toHaveLength(2);
  });
});

