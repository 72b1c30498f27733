/**
 * `flink records`' stdout: every line reaches the stream byte for byte as UTF-8 (multi-byte
 * characters, surrogate pairs, a line longer than a buffer), a chunk handed to the stream is
 * never written into again (a PassThrough holds it unread), and the writer waits while the
 * stream's buffer is full, so a slow reader bounds what is buffered.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { LineOutput } from '../../src/cli/line-output.ts';

function lines(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 20_000; i++) {
    out.push(`{"index":${i},"value":"${'x'.repeat(i % 97)}é€𝄞"}\n`);
    if (i === 7_000) out.push(`${'ü'.repeat(400_000)}\n`); // longer than a 256 KiB buffer
  }
  return out;
}

describe('flink records stdout (LineOutput)', () => {
  it('writes every line as UTF-8, in order, and never reuses a chunk the stream holds', async () => {
    // Nothing reads until every line is added: the stream keeps every chunk it was handed.
    const stream = new PassThrough({ highWaterMark: 1 << 30 });
    const out = new LineOutput({ out: stream, err: new PassThrough() });
    const all = lines();
    for (const line of all) {
      const full = out.add(line);
      if (full !== undefined) await full;
    }
    await out.flush();
    stream.end();
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).equals(Buffer.from(all.join('')))).toBe(true);
  });

  it('waits while the stream is full and a slow reader bounds what is buffered', async () => {
    const stream = new PassThrough({ highWaterMark: 64 * 1024 });
    const out = new LineOutput({ out: stream, err: new PassThrough() });
    const all = lines();
    const got: Buffer[] = [];
    let waits = 0;
    let maxBuffered = 0;
    const reading = (async () => {
      for await (const chunk of stream) {
        got.push(chunk as Buffer);
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    for (const line of all) {
      const full = out.add(line);
      maxBuffered = Math.max(maxBuffered, stream.writableLength + stream.readableLength);
      if (full !== undefined) {
        waits++;
        await full;
      }
    }
    await out.flush();
    stream.end();
    await reading;
    expect(Buffer.concat(got).equals(Buffer.from(all.join('')))).toBe(true);
    expect(waits).toBeGreaterThan(0);
    // At most a buffer or the long line beyond the stream's own limits.
    expect(maxBuffered).toBeLessThan(2 * 64 * 1024 + 2 * 1024 * 1024);
  });
});
