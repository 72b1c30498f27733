// Take checkpoint 7 once 1 MiB was delivered: the undelivered remainder becomes cp-7.spwc.
// Plain JavaScript on Node 20/22 has no `await using`: dispose in `finally` instead.
// Run: node examples/checkpoint-during-recovery.mjs   (job.spwc in the current directory)
import { recoverChannelState, isSpillwayError } from 'spillway';

let delivered = 0;
let checkpoint;
const recovery = recoverChannelState({
  checkpoint: 'job.spwc',
  channels: () => ({
    onBuffer: async (buffer) => {
      delivered += buffer.length;
      if (checkpoint === undefined && delivered >= 1024 * 1024) {
        checkpoint = recovery.checkpoint(7, { out: 'cp-7.spwc' });
      }
    },
    onFinished: () => undefined,
  }),
});
try {
  const report = await recovery.done;
  const taken = await checkpoint; // kept and awaited late: never an unhandled rejection
  console.log(report.bytesDelivered, taken?.file, taken?.channels.length);
} catch (error) {
  if (!isSpillwayError(error)) throw error;
  console.error(error.code, error.message);
  process.exitCode = 1;
} finally {
  await recovery[Symbol.asyncDispose](); // cancel if still running, wait for cleanup
}
