/**
 * The judge the politeness acceptance tests rely on (test/fixtures/politeness-web.ts): it must
 * flag every real breach of a host's policy, and only those, from the servers' own logs.
 */
import { judgeHost, policyGapMs, type PoliteHostSpec, type PoliteLogEntry } from '../fixtures/politeness-web';

const slow: PoliteHostSpec = { ip: '127.0.6.57', kind: 'slow', responseMs: 250, pages: 4 };

function entry(path: string, start: number, end: number): PoliteLogEntry {
  return { ip: slow.ip, path, start, end, status: 200, concurrent: 1, userAgent: 'kcrawl' };
}

describe('politeness judge: the 10x response-time rule', () => {
  test('the rule is 10 times the server-side response time, less one millisecond of clock step', () => {
    expect(policyGapMs(slow, entry('/p/0', 1000, 1255))).toBe(2540);
    expect(policyGapMs(slow, entry('/p/0', 1000, 1000))).toBe(1000);
    // robots.txt is exempt from the rule; the floor of 1 s holds.
    expect(policyGapMs(slow, entry('/robots.txt', 1000, 1255))).toBe(1000);
  });

  test('a crawler that waited 10 times its own reading (254 ms where the server read 255) is polite', () => {
    // The failure this allowance came from: /p/1 2541 ms after /p/0 finished, the server's reading 255 ms.
    expect(judgeHost(slow, [entry('/p/0', 1000, 1255), entry('/p/1', 1255 + 2541, 1255 + 2541 + 255)])).toEqual([]);
  });

  test('a gap short of the rule by more than the clock step and the tolerance is a breach', () => {
    const out = judgeHost(slow, [entry('/p/0', 1000, 1255), entry('/p/1', 1255 + 2530, 1255 + 2530 + 255)]);
    expect(out).toEqual(['127.0.6.57 (slow): /p/1 came 2530 ms after /p/0 finished; policy 2540 ms']);
    expect(judgeHost(slow, [entry('/p/0', 1000, 1255), entry('/p/1', 1255 + 1500, 1255 + 1755)])).toHaveLength(1);
  });

  test('two requests at once are a breach whatever the gaps', () => {
    const overlapping = { ...entry('/p/1', 5000, 5255), concurrent: 2 };
    expect(judgeHost(slow, [entry('/p/0', 1000, 1255), overlapping])[0]).toMatch(/2 requests at once/);
  });
});
