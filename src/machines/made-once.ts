/**
 * A machine made on the first call rather than at import: XState builds a machine's state
 * nodes when it is created, and the four machines were ~7 ms of importing the package (which
 * makes them on its first recovery; `spillway/machines` makes them when it is imported).
 *
 * @example
 * ```ts
 * export const drainMachineOnce = madeOnce(createDrainMachine);
 * drainMachineOnce() === drainMachineOnce(); // true: made once, the same object after
 * ```
 */
export function madeOnce<T>(create: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= create());
}
