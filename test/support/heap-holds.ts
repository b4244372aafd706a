/**
 * Whether a small Node process's heap holds a string, for tests of what a long-lived structure
 * keeps alive (a slice of a URL keeps the whole URL: lib/own-string.ts). A heap snapshot of the
 * test runner itself is far too large to take in a test, so `script` runs in a child process of
 * its own (plain JavaScript; `modules` are TypeScript sources transpiled for it, required by
 * their names); the child then writes a heap snapshot (which collects garbage first) and reports
 * which of `texts` it holds. The texts are made after the snapshot, so the search keeps nothing
 * alive; `script` must make the strings it keeps at run time (`'k'.repeat(300)`), so that its own
 * source does not hold them.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';

export function heapHolds(modules: Record<string, string>, script: string, texts: string): boolean[] {
  const dir = mkdtempSync(join(tmpdir(), 'heap-holds-'));
  try {
    for (const [name, source] of Object.entries(modules)) {
      const js = ts.transpileModule(readFileSync(source, 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
      writeFileSync(join(dir, `${name}.js`), js);
    }
    const main = `${script}
const snap = require('node:fs').readFileSync(require('node:v8').writeHeapSnapshot(${JSON.stringify(join(dir, 'h.heapsnapshot'))}), 'latin1');
process.stdout.write(JSON.stringify((${texts})().map((t) => snap.includes(t))));`;
    writeFileSync(join(dir, 'main.js'), main);
    return JSON.parse(execFileSync(process.execPath, [join(dir, 'main.js')], { cwd: dir, encoding: 'utf8', timeout: 60_000 })) as boolean[];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
