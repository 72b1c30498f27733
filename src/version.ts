/**
 * Spillway's version, as `package.json` has it (a test keeps the two equal). A constant rather
 * than a read of `package.json`: the compiled package and the sources sit at different depths,
 * and importing the package must do no I/O.
 */
export const VERSION = '0.1.0';
