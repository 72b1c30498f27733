/**
 * Byte counts for people: binary units chosen by size, so 36,348 bytes read "35.5 KiB" — never
 * "0.0 MiB" (what a fixed unit printed, hiding which channel was large).
 */

const UNITS = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'] as const;

/**
 * `bytes` in the largest binary unit that keeps the number at least 1: whole bytes below 1 KiB,
 * else one decimal below 100 of the unit and none above.
 *
 * @example
 * ```ts
 * formatBytes(0); // '0 B'
 * formatBytes(36348); // '35.5 KiB'
 * formatBytes(3 * 1024 ** 3); // '3.0 GiB'
 * ```
 */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes) || Math.abs(bytes) < 1024) return `${bytes} B`;
  let value = Math.abs(bytes);
  let unit = -1;
  // Rounding may reach 1024 of a unit (1,048,575 B is 1023.999 KiB): show the next unit then.
  while (unit < UNITS.length - 1 && Number(shown(value)) >= 1024) {
    value /= 1024;
    unit++;
  }
  return `${bytes < 0 ? '-' : ''}${shown(value)} ${UNITS[unit]!}`;
}

function shown(value: number): string {
  const one = value.toFixed(1);
  return Number(one) < 100 ? one : value.toFixed(0);
}

/**
 * A change in bytes with its sign: `+1.5 KiB`, `-200 B`, `0 B`.
 *
 * @example
 * ```ts
 * formatByteChange(1536); // '+1.5 KiB'
 * ```
 */
export function formatByteChange(delta: number): string {
  return delta > 0 ? `+${formatBytes(delta)}` : formatBytes(delta);
}
