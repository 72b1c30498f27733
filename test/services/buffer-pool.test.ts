/**
 * The process's pool of large I/O buffers (src/services/buffer-pool.ts): what it keeps, and
 * that a buffer goes back only when nothing can still read or write it — the checkpoint
 * reader's read ahead has settled, whatever ended the read.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BufferPool, ioBuffers } from '../../src/services/buffer-pool.ts';
import { CheckpointWriter } from '../../src/services/formats/spwc/writer.ts';
import { readCheckpoint } from '../../src/services/formats/spwc/reader.ts';
import { seam } from '../helpers/fault-seam.ts';
import { expectPoolWaitsForReadAhead } from '../helpers/read-ahead-pool.ts';
import { makeTempRoot } from '../helpers/temp.ts';

afterEach(() => seam.resetFsSeam());

describe('BufferPool', () => {
  it('hands a kept buffer back for the same size, a fresh one for any other', () => {
    const pool = new BufferPool(1024);
    const a = pool.take(256);
    expect(a.length).toBe(256);
    pool.give(a);
    expect(pool.keptBytes).toBe(256);
    const other = pool.take(128);
    expect(other).not.toBe(a);
    expect(pool.take(256)).toBe(a);
    expect(pool.keptBytes).toBe(0);
    expect(pool.take(256)).not.toBe(a); // taken: never handed out twice
  });

  it('keeps only whole buffers of their own, once each, up to its bound', () => {
    const pool = new BufferPool(1024);
    const whole = Buffer.allocUnsafeSlow(512);
    pool.give(whole.subarray(0, 256)); // a slice: the rest of its memory is someone's
    pool.give(Buffer.from('small')); // on Node's shared slab
    pool.give(Buffer.alloc(0));
    expect(pool.keptBytes).toBe(0);
    pool.give(whole);
    pool.give(whole); // given twice by mistake: kept once
    expect(pool.keptBytes).toBe(512);
    pool.give(Buffer.allocUnsafeSlow(513)); // over the bound
    expect(pool.keptBytes).toBe(512);
    pool.give(Buffer.allocUnsafeSlow(512));
    expect(pool.keptBytes).toBe(1024);
  });
});

describe('the checkpoint reader and the pool', () => {
  it('G4 a read ahead in flight when the visitor fails keeps its buffers out of the pool until it settled', async () => {
    const root = await makeTempRoot();
    const path = join(root, 'cp.spwc');
    const writer = await CheckpointWriter.create(path);
    for (let k = 0; k < 8; k++) await writer.append(0, k, Buffer.alloc(100, k));
    await writer.close();

    await expectPoolWaitsForReadAhead(path, 96, (visitor) =>
      readCheckpoint(path, visitor, { readChunkBytes: 96 }),
    );
  });
});
