/**
 * The few `node:crypto` functions Spillway uses, with `node:crypto` loaded on their first call
 * instead of at import: loading it (its ciphers, keys, webcrypto and the stream modules they
 * pull in) was a tenth of what importing the package cost over a bare node's start, and a
 * recovery needs it only once it makes its first random name.
 *
 * @example
 * ```ts
 * const name = `staging-${randomBytes(6).toString('hex')}`;
 * ```
 */
import type { Hash } from 'node:crypto';

type NodeCrypto = typeof import('node:crypto');

let loaded: NodeCrypto | undefined;

function nodeCrypto(): NodeCrypto {
  return (loaded ??= process.getBuiltinModule('node:crypto'));
}

/** `crypto.randomBytes(size)`. */
export function randomBytes(size: number): Buffer {
  return nodeCrypto().randomBytes(size);
}

/** `crypto.randomUUID()`. */
export function randomUUID(): string {
  return nodeCrypto().randomUUID();
}

/** `crypto.createHash(algorithm)`. */
export function createHash(algorithm: string): Hash {
  return nodeCrypto().createHash(algorithm);
}
