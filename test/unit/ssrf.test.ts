import { classifyAddress, isAddressAllowed, parseHostLiteral, type AddressClass } from '../../lib/net/ssrf';
import { DnsCache, parseHostsFile, type DnsBackend } from '../../lib/net/dns-cache';

describe('parseHostLiteral', () => {
  it.each<[string, string | null]>([
    ['127.0.0.1', '127.0.0.1'],
    ['2130706433', '127.0.0.1'],
    ['0x7f.1', '127.0.0.1'],
    ['0177.0.0.1', '127.0.0.1'],
    ['127.1', '127.0.0.1'],
    ['0x7f000001', '127.0.0.1'],
    ['10.0.258', '10.0.1.2'],
    ['1.2.3.4.', '1.2.3.4'],
    ['0x', '0.0.0.0'],
    ['::ffff:127.0.0.1', '127.0.0.1'],
    ['[::ffff:7f00:1]', '127.0.0.1'],
    ['[::1]', '::1'],
    ['2606:4700:0::1', '2606:4700::1'],
    ['example.com', null],
    ['1.2.3.4.5', null],
    ['256.1.1.1', null],
    ['4294967296', null],
    ['09.1.1.1', null], // 09 is neither octal nor decimal: a name, not an address
    ['1.2.3.com', null],
    ['[not-ip]', null],
  ])('%s → %s', (host, want) => {
    expect(parseHostLiteral(host)).toBe(want);
  });
});

describe('classifyAddress', () => {
  it.each<[string, AddressClass]>([
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.254', 'cgnat'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link-local'],
    ['169.254.1.1', 'link-local'],
    ['::1', 'loopback'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['93.184.216.34', 'public'],
    ['8.8.8.8', 'public'],
    ['2606:4700::1', 'public'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'metadata'], // NAT64 of 169.254.169.254
    ['2002:7f00:1::', 'loopback'], // 6to4 of 127.0.0.1
    ['::7f00:1', 'reserved'], // deprecated IPv4-compatible
    ['2001:db8::1', 'reserved'],
    ['2130706433', 'loopback'],
    ['not-an-ip', 'invalid'],
  ])('%s is %s', (ip, cls) => {
    expect(classifyAddress(ip)).toBe(cls);
  });
});

describe('isAddressAllowed', () => {
  const closed = { allowPrivateNetwork: false };
  const open = { allowPrivateNetwork: true };

  it('allows only public addresses by default', () => {
    expect(isAddressAllowed('93.184.216.34', closed)).toBe(true);
    expect(isAddressAllowed('2606:4700::1', closed)).toBe(true);
    for (const ip of ['127.0.0.1', '10.0.0.1', '100.64.0.1', 'fe80::1', '::1', '::ffff:127.0.0.1', '0x7f.1']) {
      expect(isAddressAllowed(ip, closed)).toBe(false);
    }
  });

  it('allowPrivateNetwork opens private classes but never metadata, unspecified, multicast or reserved', () => {
    for (const ip of ['127.0.0.1', '10.0.0.1', '192.168.0.1', '100.64.0.1', 'fe80::1', 'fc00::1', '::1']) {
      expect(isAddressAllowed(ip, open)).toBe(true);
    }
    for (const ip of ['169.254.169.254', '0.0.0.0', '224.0.0.1', '240.0.0.1', '::']) {
      expect(isAddressAllowed(ip, open)).toBe(false);
    }
  });

  it('answers are kept per string and stay right after the kept answers are dropped (past 10,000)', () => {
    const spell = (i: number, first: number) => `${first}.${(i >> 8) & 255}.${i & 255}.1`;
    const check = (i: number) => {
      expect(isAddressAllowed(spell(i, 10), closed)).toBe(false);
      expect(isAddressAllowed(spell(i, 10), open)).toBe(true);
      expect(isAddressAllowed(spell(i, 8), closed)).toBe(true);
      expect(classifyAddress(`0x7f.${i}`)).toBe('loopback');
      expect(parseHostLiteral(`ex${i}.example`)).toBeNull();
    };
    for (let i = 0; i < 12_000; i++) check(i);
    for (let i = 0; i < 100; i++) check(i);
    // A second check of a string gives the same answer as the first, for every policy.
    expect(isAddressAllowed('169.254.169.254', open)).toBe(false);
    expect(isAddressAllowed('169.254.169.254', { allowPrivateNetwork: true, allowCidrs: ['169.254.169.254/32'] })).toBe(true);
    expect(isAddressAllowed('169.254.169.254', open)).toBe(false);
  });

  it('allowCidrs opens exactly the listed ranges', () => {
    const p = { allowPrivateNetwork: false, allowCidrs: ['127.0.0.2/32', 'fd00::/8'] };
    expect(isAddressAllowed('127.0.0.2', p)).toBe(true);
    expect(isAddressAllowed('::ffff:127.0.0.2', p)).toBe(true);
    expect(isAddressAllowed('127.0.0.1', p)).toBe(false);
    expect(isAddressAllowed('fd00::5', p)).toBe(true);
    expect(isAddressAllowed('fc00::5', p)).toBe(false);
    expect(isAddressAllowed('169.254.169.254', { allowPrivateNetwork: false, allowCidrs: ['169.254.169.254/32'] })).toBe(true);
  });

  it('rejects a malformed CIDR loudly', () => {
    expect(() => isAddressAllowed('1.1.1.1', { allowPrivateNetwork: false, allowCidrs: ['nope'] })).toThrow(TypeError);
  });
});

describe('DnsCache', () => {
  function fakeBackend(ttl = 60) {
    const calls = { resolve4: 0, resolve6: 0, lookup: 0 };
    const backend: DnsBackend = {
      resolve4: async (h) => {
        calls.resolve4++;
        if (h === 'sys.test') throw Object.assign(new Error('nx'), { code: 'ENOTFOUND' });
        return [{ address: '192.0.2.10', ttl }];
      },
      resolve6: async () => {
        calls.resolve6++;
        throw Object.assign(new Error('nodata'), { code: 'ENODATA' });
      },
      lookup: async () => {
        calls.lookup++;
        return [{ address: '192.0.2.99', family: 4 }];
      },
      hosts: () => parseHostsFile('127.0.0.1 localhost vm # comment\n::1 localhost\n'),
    };
    return { backend, calls };
  }

  it('answers from the hosts file without querying DNS', async () => {
    const { backend, calls } = fakeBackend();
    const cache = new DnsCache({ backend });
    expect(await cache.resolve('LOCALHOST')).toEqual([
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ]);
    expect(calls).toEqual({ resolve4: 0, resolve6: 0, lookup: 0 });
  });

  it('respects the record TTL and dedups concurrent queries', async () => {
    let now = 1_000_000;
    const { backend, calls } = fakeBackend(5);
    const cache = new DnsCache({ backend, now: () => now });
    await Promise.all([cache.resolve('a.test'), cache.resolve('a.test')]);
    expect(calls.resolve4).toBe(1);
    now += 4_000;
    await cache.resolve('a.test');
    expect(calls.resolve4).toBe(1);
    now += 2_000; // past the 5 s TTL
    await cache.resolve('a.test');
    expect(calls.resolve4).toBe(2);
  });

  it('falls back to the system resolver and stays bounded', async () => {
    const { backend, calls } = fakeBackend();
    const cache = new DnsCache({ backend, maxEntries: 2 });
    expect(await cache.resolve('sys.test')).toEqual([{ address: '192.0.2.99', family: 4 }]);
    expect(calls.lookup).toBe(1);
    await cache.resolve('b.test');
    await cache.resolve('c.test');
    expect(cache.size).toBe(2);
  });
});
