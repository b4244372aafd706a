/** A one-line progress display: rate over the last few seconds, redrawn in place on a TTY. */
export class Progress {
  private readonly samples: Array<{ t: number; n: number }> = [];
  private lastDraw = 0;

  constructor(private readonly out: NodeJS.WriteStream, private readonly unit = 'pages') {}

  update(n: number, detail: string, total?: number): void {
    const t = Date.now();
    this.samples.push({ t, n });
    while (this.samples.length > 1 && t - this.samples[0].t > 5000) this.samples.shift();
    if (t - this.lastDraw < 1000) return;
    this.lastDraw = t;
    const first = this.samples[0];
    const rate = t > first.t ? ((n - first.n) * 1000) / (t - first.t) : 0;
    let line = `${n} ${this.unit}, ${rate.toFixed(1)}/s, ${detail}`;
    if (total !== undefined && rate > 0) line += `, ETA ${Math.ceil((total - n) / rate)} s`;
    if (this.out.isTTY) this.out.write(`\r\x1b[K${line}`);
    else this.out.write(`${line}\n`);
  }

  done(): void {
    if (this.out.isTTY) this.out.write('\n');
  }
}
