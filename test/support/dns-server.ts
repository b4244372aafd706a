/**
 * A real DNS server on a loopback UDP port for tests (dns2's server): it answers TXT queries
 * from a table the test changes as it goes (a webmaster publishing a record), NXDOMAIN for names
 * it has no records for, and can be told to stay silent (a DNS outage) for a name.
 */
import dns2 from 'dns2';

export interface TestDns {
  /** host:port, for CRAWL_WEBMASTER_DNS_SERVERS. */
  server: string;
  /** Set the TXT records of a name (each string one record). */
  setTxt(name: string, records: string[]): void;
  /** Queries for this name are dropped (no answer). */
  silence(name: string): void;
  queries: string[];
  close(): Promise<void>;
}

export async function startTestDns(): Promise<TestDns> {
  const txt = new Map<string, string[]>();
  const silent = new Set<string>();
  const queries: string[] = [];
  const server = dns2.createServer({
    udp: true,
    handle: (request, send) => {
      const q = request.questions[0];
      if (!q) return;
      const name = q.name.toLowerCase();
      queries.push(name);
      if (silent.has(name)) return;
      const response = dns2.Packet.createResponseFromRequest(request);
      const records = txt.get(name);
      if (!records) response.header.rcode = 3; // NXDOMAIN
      else if (q.type === dns2.Packet.TYPE.TXT) {
        // The typings want a decoded Resource; the encoder takes these plain fields.
        for (const data of records) response.answers.push({ name: q.name, type: dns2.Packet.TYPE.TXT, class: dns2.Packet.CLASS.IN, ttl: 1, data } as never);
      }
      void send(response);
    },
  });
  const addr = await server.listen({ udp: { port: 0, address: '127.0.0.1' } });
  return {
    server: `127.0.0.1:${addr.udp!.port}`,
    setTxt: (name, records) => void txt.set(name.toLowerCase(), records),
    silence: (name) => void silent.add(name.toLowerCase()),
    queries,
    close: () => server.close(),
  };
}
