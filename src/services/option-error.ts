/**
 * The one way an option is refused, wherever it is checked (recovery options, rescale, remote):
 * a `TypeError` naming `options.<name>`, saying what it must be and what it got, with Node's own
 * code for the mistake (`ERR_INVALID_ARG_TYPE` for the wrong type, `ERR_INVALID_ARG_VALUE` for a
 * wrong value of the right type), as Node's APIs do.
 */

/**
 * A `TypeError` with Node's code for a bad argument, naming `options.<name>`; `value` says the
 * type was right and the value was not.
 *
 * @example
 * ```ts
 * throw invalidOption('limits.bufferBytes', 'a positive integer', 0, true);
 * // TypeError [ERR_INVALID_ARG_VALUE]: options.limits.bufferBytes must be a positive integer; got 0
 * ```
 */
export function invalidOption(
  name: string,
  expected: string,
  got: unknown,
  value = false,
): TypeError {
  const error = new TypeError(
    `options.${name} must be ${expected}; got ${describeValue(got)}`,
  ) as TypeError & { code: string };
  error.code = value ? 'ERR_INVALID_ARG_VALUE' : 'ERR_INVALID_ARG_TYPE';
  return error;
}

/** A short description of a value for an error message (never the whole of a long string). */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}
