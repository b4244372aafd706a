/** `crawl run --out DIR`: the folder made (or found) and checked before anything is written to it. */
import { accessSync, constants, mkdirSync } from 'node:fs';

/**
 * Make `out` if it is missing and check that it is a folder this process may write to, or throw
 * an error that names --out and says what is wrong. Before, a file in the way failed with
 * "EEXIST: file already exists, mkdir …" and a folder the user may not write to with "EACCES:
 * permission denied, open '…/state/topics/crawl.links/0/00000000000000000000.seg'".
 */
export function prepareOutDir(out: string): void {
  try {
    mkdirSync(out, { recursive: true });
    accessSync(out, constants.W_OK);
  } catch (err) {
    throw new Error(outDirError(out, err as NodeJS.ErrnoException));
  }
}

/** The message for a failed make or check of `out`, by the system error's code. */
export function outDirError(out: string, e: Pick<NodeJS.ErrnoException, 'code' | 'message'>): string {
  const why =
    e.code === 'EEXIST' || e.code === 'ENOTDIR' ? 'a file is in the way (it must be a folder, or not exist yet)'
      : e.code === 'EACCES' || e.code === 'EPERM' ? 'this user may not write there'
        : e.code === 'EROFS' ? 'it is on a read-only file system'
          : e.message;
  return `--out ${out}: cannot keep the crawl there: ${why}${e.code ? ` (${e.code})` : ''}`;
}
