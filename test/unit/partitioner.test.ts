import { murmur2, partitionForHost } from '../../lib/partitioner';
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
