// Recover every channel of job.spwc (in the current directory) into one file per channel.
// Run: node examples/quick-start.mjs   (after `npm run build` in a clone)
import { createWriteStream } from 'node:fs';
import { recoverChannelState } from 'spillway';

const recovery = recoverChannelState({
  checkpoint: 'job.spwc',
  channels: ({ gate, channel }) => createWriteStream(`gate-${gate}-channel-${channel}.bin`),
});
const report = await recovery.done; // settles only after every spill file is gone
console.log(`${report.bytesDelivered} bytes into ${report.channels} channels`);
