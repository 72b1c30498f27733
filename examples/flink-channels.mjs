// What a real Flink checkpoint holds in flight for one subtask, read through the library: the
// bytes of each input channel of subtask 0 of the operator with uid "slow-join".
// Run: node examples/flink-channels.mjs [CHECKPOINT]
//   (default: the Flink 2.3.0 checkpoint shipped beside this file, examples/flink-checkpoint/chk-3)
import { fileURLToPath } from 'node:url';
import { recoverChannelState } from 'spillway';

const checkpoint =
  process.argv[2] ?? fileURLToPath(new URL('./flink-checkpoint/chk-3', import.meta.url));
const bytes = new Map();
const recovery = recoverChannelState({
  checkpoint,
  flink: { operator: 'slow-join', subtask: 0 },
  // One consumer per input channel: Flink's network bytes, exactly once, in order.
  channels: ({ gate, channel }) => {
    const name = `gate ${gate} channel ${channel}`;
    bytes.set(name, 0);
    return {
      onBuffer: (buffer) => void bytes.set(name, bytes.get(name) + buffer.length),
      onFinished: () => {},
    };
  },
});
const report = await recovery.done; // settles only after every spill file is gone
for (const [name, n] of bytes) console.log(`${name}: ${n} bytes`);
console.log(`${report.bytesDelivered} bytes in flight into slow-join subtask 0`);
