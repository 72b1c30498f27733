/**
 * Schemes in one module (docs/architecture.md): no file in src/ but
 * services/locations/schemes.ts names a scheme in code, so a new scheme is one row of its table
 * (plus its reader). "In code" is what the program compares or builds locations with: a regular
 * expression naming `s3:`, `http(s):`, `file:` or `gs:`, or a string or template literal that
 * is a location of one (`'s3://'`, `` `file:${path}` ``). Prose that mentions a scheme for a person (a
 * usage line, an error message, a comment) is not a second table and is left alone.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { repo, sourcesUnder, src } from './sources.ts';

const TABLE = join(src, 'services', 'locations', 'schemes.ts');

/** A scheme name as a pattern names it: `s3:`, `https?:`, `(?:https?|s3)`. */
const IN_PATTERN = /(?<![a-z0-9])(s3|https?|gs|file)\??(:|\||\))/i;
/** A literal that is (the start of) a location of a scheme: no white space, unlike prose. */
const AT_START = /^(s3|https?|gs|file):\S*$/i;

/** `line: literal` for each literal in `text` that names a scheme in code. */
function schemeLiterals(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    let hit = false;
    if (ts.isRegularExpressionLiteral(node)) hit = IN_PATTERN.test(node.text);
    else if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node))
      hit = AT_START.test(node.text);
    if (hit) {
      const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
      found.push(`${line}: ${node.getText(source)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('schemes in one module', () => {
  it('the check finds a scheme named in code, and not in prose', () => {
    const text = [
      'const remote = /^(?:https?|s3):\\/\\//i;',
      'const isFile = /^file:/i.test(p);',
      'const key = `file:${path}`;',
      "const prefix = 'gs://';",
      '// s3://bucket/key in a comment',
      "throw new Error('not an s3://bucket/key location');",
      "const label = 's3:// vs ranged GET';",
    ].join('\n');
    expect(schemeLiterals('x.ts', text)).toEqual([
      '1: /^(?:https?|s3):\\/\\//i',
      '2: /^file:/i',
      '3: `file:${',
      "4: 'gs://'",
    ]);
  });

  it('no file in src/ but locations/schemes.ts names a scheme in code', () => {
    const found = sourcesUnder(src)
      .filter((file) => file !== TABLE)
      .flatMap((file) =>
        schemeLiterals(file, readFileSync(file, 'utf8')).map(
          (hit) => `${relative(repo, file)}:${hit}`,
        ),
      );
    expect(found).toEqual([]);
  });
});
