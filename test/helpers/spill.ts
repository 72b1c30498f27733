/** Spill files made with the real writer, for reader and drainer tests. */
import { join } from 'node:path';
import type { ChannelInfo } from '../../src/services/channel.ts';
import type { FetchedChannelState } from '../../src/services/spill/fetched-state.ts';
import { SpillWriter } from '../../src/services/spill/spill-writer.ts';
import { makeTempRoot } from './temp.ts';

/** Spills `appends` with the real writer; the state holds the hand-off grant. */
export async function spill(
  appends: [ChannelInfo, Buffer][],
  options: { maxSegmentBytes?: number; maxSpillFileBytes?: number } = {},
): Promise<{ state: FetchedChannelState; taskDir: string }> {
  const root = await makeTempRoot();
  const taskDir = join(root, 'task-3-d00d');
  const writer = new SpillWriter({ taskDir, ...options });
  for (const [info, b] of appends) await writer.append(info, b);
  return { state: await writer.close(), taskDir };
}

/** `n` bytes of a recognisable pattern; a different `seed`, different bytes. */
export function patternBytes(n: number, seed = 1): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (seed * 31 + i * 7) & 0xff;
  return b;
}
