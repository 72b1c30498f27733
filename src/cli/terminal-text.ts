/**
 * What a terminal is shown is text, never commands. A path, a URL, an operator's name or an
 * error message comes from the checkpoint, the file system or a server, and may hold what a
 * terminal obeys: ESC sequences (`ESC]0;…BEL` retitles the window, `ESC[2J` clears it), a CR or
 * LF that forges a line, C1 controls (U+0080–U+009F, 8-bit CSI on some terminals), the line and
 * paragraph separators U+2028/U+2029, and the bidi overrides and isolates (U+202A–U+202E,
 * U+2066–U+2069) that reorder what is shown. Every human-facing line goes through
 * {@link oneLine}; JSON output is left exact (its reader parses it, no terminal draws it).
 */

/** The characters a terminal may act on or reorder, never printed as they are. */
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/**
 * `text` as one inert line: each unsafe character is written as an escape (`\n`, `\x1b`,
 * `\u202e`), so a message stays one line and cannot move the cursor, retitle the terminal or
 * reorder what follows.
 *
 * @example
 * ```ts
 * oneLine('out\nx: is not a directory'); // 'out\\nx: is not a directory'
 * oneLine('a\u202eb'); // 'a\\u202eb'
 * ```
 */
export function oneLine(text: string): string {
  return text.replace(UNSAFE, (c) => {
    if (c === '\n') return '\\n';
    if (c === '\r') return '\\r';
    if (c === '\t') return '\\t';
    const code = c.charCodeAt(0);
    return code <= 0xff
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** Each line of `text` made inert (see {@link oneLine}); the line breaks between them kept. */
export function inertLines(text: string): string {
  return text
    .split('\n')
    .map((line) => oneLine(line))
    .join('\n');
}
