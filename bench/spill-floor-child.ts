/**
 * Child process of the JVM peer phase (bench/jvm-peer.ts): the floor of a spilling recovery
 * of the checkpoint, the fastest known way to do the I/O `recover --all` must do — every
 * file of the checkpoint read and CRC-32'd into a spill file, then that file read back,
 * CRC-32'd again and written out (G1, G9), with the bench's synchronous 512 KiB loops
 * (bench/raw-io.ts) and the product's CRC. No parsing, no channel split, no thread pool: what
 * is left of `recover --all` past it is the product's cost. A whole process, as the JVM's and
 * Spillway's arms are, so Node's start-up is on both sides of `recoverAllVsFloor`.
 *
 * usage: node [--import <tsx>] bench/spill-floor-child.ts CHECKPOINT_DIR OUT_DIR
 */
import { mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { rawCopy } from './raw-io.ts';

const [chk, out] = process.argv.slice(2);
if (chk === undefined || out === undefined) {
  process.stderr.write('usage: spill-floor-child.ts CHECKPOINT_DIR OUT_DIR\n');
  process.exit(2);
}
mkdirSync(out);
let bytes = 0;
for (const name of readdirSync(chk).sort()) {
  // Every file, `_metadata` too: Flink inlines small channel state in it.
  if (!statSync(join(chk, name)).isFile()) continue;
  const spill = join(out, `${name}.spill`);
  bytes += await rawCopy(join(chk, name), spill, true);
  await rawCopy(spill, join(out, name), true);
  rmSync(spill);
}
process.stdout.write(`${JSON.stringify({ bytes })}\n`);
