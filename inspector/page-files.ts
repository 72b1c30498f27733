/**
 * The inspector page as the server serves it: the regular files of `inspector/page/` with a
 * known type, read once at start and looked up by exact name, so no request reaches the disk.
 */
import { existsSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fsSeam } from '../src/services/fs.ts';
import { SpillwayError } from '../src/services/errors.ts';

/** The server could not start (port in use, no permission, no page). */
export class InspectorServerError extends SpillwayError {
  override readonly code = 'ERR_SPILLWAY_INSPECTOR';
}

const PAGE_DIR = pageDir();
/**
 * `page/` beside this module (the sources, tsc's output), else the nearest `inspector/page`
 * above it: the package's `dist/inspector/page` when this code was bundled into a chunk of the
 * CLI (`dist/src/cli/chunks/`).
 */
function pageDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const beside = join(here, 'page');
  if (existsSync(beside)) return beside;
  for (let dir = dirname(here); dir !== dirname(dir); dir = dirname(dir)) {
    const found = join(dir, 'inspector', 'page');
    if (existsSync(found)) return found;
  }
  return beside;
}

/**
 * What the page dir may serve, by extension. The page is native ES modules loaded by the
 * browser from here (no build step), so every module must be served as JavaScript: a module
 * script with another type is refused by the browser (and `nosniff` forbids guessing).
 */
const PAGE_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
/** A plain file name: no separator, no leading dot, so no request can leave the page dir. */
const PAGE_NAME = /^[a-z0-9][a-z0-9_-]*(?:\.[a-z0-9_-]+)*$/i;

export interface PageFile {
  type: string;
  body: Buffer;
}

/**
 * The page, read once at start: URL path → file, for the regular files of the page dir with a
 * known extension. Requests are looked up in this map and nothing else touches the disk, so a
 * path with `..`, an encoded slash or a symlink out of the dir is simply not found.
 */
export async function loadPage(): Promise<Map<string, PageFile>> {
  const files = new Map<string, PageFile>();
  for (const name of (await fsSeam.readdir(PAGE_DIR)).sort()) {
    const type = PAGE_TYPES[extname(name)];
    if (type === undefined || !PAGE_NAME.test(name)) continue;
    const path = join(PAGE_DIR, name);
    if (!(await fsSeam.lstat(path)).isFile()) continue;
    files.set(`/${name}`, { type, body: await fsSeam.readFile(path) });
  }
  const index = files.get('/index.html');
  if (index === undefined) throw new InspectorServerError(`no index.html in ${PAGE_DIR}`);
  files.set('/', index);
  return files;
}
