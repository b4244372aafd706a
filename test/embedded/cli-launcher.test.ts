/**
 * bin/crawl.js's launcher line: run as a program, /bin/sh execs node with the crawler's flags
 * (a 32 MiB young generation, V8's helper threads by the core count); run through node, the same line is a string and a comment.
 * Both must give the same CLI. Uses the built CLI (dist/).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI } from '../support/cli';
import { JEMALLOC } from '../support/jemalloc';


describe('bin/crawl.js launcher', () => {
  it('runs as a program through sh, and through node, as the same CLI', () => {
    const asProgram = spawnSync(CLI, ['help'], { encoding: 'utf8' });
    expect(asProgram.status).toBe(0);
    expect(asProgram.stdout).toMatch(/Usage: crawl/);
    const viaNode = spawnSync(process.execPath, [CLI, 'help'], { encoding: 'utf8' });
    expect(viaNode.status).toBe(0);
    expect(viaNode.stdout).toBe(asProgram.stdout);
  });

  it('hands node its flags (young generation, old generation growth, V8 helper threads) MALLOC_ARENA_MAX=2, MALLOC_MMAP_THRESHOLD_=1048576 and jemalloc where installed when run as a program, keeping strict mode', () => {
    // The launcher's own two lines in front of a script that reports what node was given.
    const [sheBang, launcher] = readFileSync(CLI, 'utf8').split('\n');
    const dir = mkdtempSync(join(tmpdir(), 'launcher-'));
    const script = join(dir, 'probe.js');
    writeFileSync(script, `${sheBang}\n${launcher}\n'use strict';\nprocess.stdout.write(JSON.stringify({ argv: process.execArgv, strict: (function () { return this === undefined; })(), args: process.argv.slice(2), arenas: process.env.MALLOC_ARENA_MAX, mmapAt: process.env.MALLOC_MMAP_THRESHOLD_, preload: process.env.LD_PRELOAD ?? null }));\n`);
    chmodSync(script, 0o755);
    const env = { ...process.env };
    delete env.MALLOC_ARENA_MAX;
    delete env.MALLOC_MMAP_THRESHOLD_;
    delete env.LD_PRELOAD;
    delete env.CRAWL_MALLOC;
    const r = spawnSync(script, ['a b', '$HOME'], { encoding: 'utf8', env });
    expect(r.status).toBe(0);
    const helpers = Math.min(4, Math.max(1, availableParallelism() - 1));
    expect(JSON.parse(r.stdout)).toEqual({ argv: ['--max-semi-space-size=32', '--heap-growing-percent=50', `--v8-pool-size=${helpers}`], strict: true, args: ['a b', '$HOME'], arenas: '2', mmapAt: '1048576', preload: JEMALLOC ?? null });
    // The user's own setting wins.
    const own = spawnSync(script, [], { encoding: 'utf8', env: { ...env, MALLOC_ARENA_MAX: '8', MALLOC_MMAP_THRESHOLD_: '131072' } });
    expect(JSON.parse(own.stdout)).toMatchObject({ arenas: '8', mmapAt: '131072' });
    // jemalloc only where installed, never over the user's own LD_PRELOAD, and not with CRAWL_MALLOC=glibc.
    const glibc = spawnSync(script, [], { encoding: 'utf8', env: { ...env, CRAWL_MALLOC: 'glibc' } });
    expect(JSON.parse(glibc.stdout)).toMatchObject({ preload: null });
    // (ld.so warns on stderr that it cannot preload a missing object, and runs the program.)
    const theirs = spawnSync(script, [], { encoding: 'utf8', env: { ...env, LD_PRELOAD: '/nonexistent/libtheirs.so' } });
    expect(JSON.parse(theirs.stdout)).toMatchObject({ preload: '/nonexistent/libtheirs.so' });
  });
});
