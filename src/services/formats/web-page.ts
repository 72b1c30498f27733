/**
 * A checkpoint location that answered a web page instead of a file: a dir URL without its
 * trailing slash redirected to the server's HTML listing, a login page, an error page. Its first
 * bytes (`<!DOCTYPE`, `<html`, `<?xml`) say so, and the readers name it instead of printing a
 * magic number like 0x3c21444f.
 */

/** The start of every "it is a web page" reason (the Flink reader retries such a dir URL). */
export const WEB_PAGE_ANSWER = 'the server answered a web page';

const PAGE_STARTS = ['<!DO', '<!do', '<htm', '<HTM', '<?xm', '<hea', '<bod'];

/**
 * Whether `head` (the first bytes read) is the start of a web page.
 *
 * @example
 * ```ts
 * isWebPage(Buffer.from('<!DOCTYPE html>')); // true
 * ```
 */
export function isWebPage(head: Uint8Array): boolean {
  if (head.length < 4) return false;
  const start = Buffer.from(head.buffer, head.byteOffset, 4).toString('latin1');
  return PAGE_STARTS.includes(start);
}
