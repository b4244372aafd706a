/** crawl run's hint for seeds the SSRF guard refuses (cli/seed-hint.ts). */
import { refusedSeedHint } from '../../cli/seed-hint';

const closed = { allowPrivateNetwork: false };

describe('refusedSeedHint', () => {
  it('names the address class and the flag that allows it', () => {
    expect(refusedSeedHint('http://127.0.5.1:8080/', '127.0.5.1', closed)).toBe('seed http://127.0.5.1:8080/ is a loopback address (127.0.5.1): the crawler refuses it unless given --allow-private-network (or --allow-cidr 127.0.5.1/32)');
    expect(refusedSeedHint('http://localhost:3000/', 'localhost', closed)).toMatch(/is a loopback address \(127\.0\.0\.1\).*--allow-private-network/);
    expect(refusedSeedHint('http://10.1.2.3/', '10.1.2.3', closed)).toMatch(/is a private address .*--allow-private-network \(or --allow-cidr 10\.1\.2\.3\/32\)/);
    expect(refusedSeedHint('http://[::1]/', '[::1]', closed)).toMatch(/is a loopback address \(::1\).*--allow-cidr ::1\/128/);
    // Metadata endpoints stay closed with --allow-private-network: only a CIDR opens them.
    expect(refusedSeedHint('http://169.254.169.254/', '169.254.169.254', closed)).toBe('seed http://169.254.169.254/ is a metadata address (169.254.169.254): the crawler refuses it unless given --allow-cidr 169.254.169.254/32');
  });

  it('says nothing for names, public addresses and addresses the flags allow', () => {
    expect(refusedSeedHint('https://example.org/', 'example.org', closed)).toBeNull();
    expect(refusedSeedHint('http://93.184.215.14/', '93.184.215.14', closed)).toBeNull();
    expect(refusedSeedHint('http://127.0.5.1:8080/', '127.0.5.1', { allowPrivateNetwork: true })).toBeNull();
    expect(refusedSeedHint('http://127.0.5.1:8080/', '127.0.5.1', { allowPrivateNetwork: false, allowCidrs: ['127.0.0.0/8'] })).toBeNull();
  });
});
