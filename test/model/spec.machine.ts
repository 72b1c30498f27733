/**
 * The payload-free spec model of one task's lifecycle, for `xstate/graph`. It has no invokes and
 * no context: every stage completion, stage failure and outside event is an event, so the graph
 * tools can enumerate every way a task can end. Each state names the point at which the replay
 * (./replay.ts) holds the REAL actors still, so the model and the real task can be compared step
 * by step.
 *
 * CANCEL, FAIL and STOP live on `alive`, not on the root: on the root they would also fire from
 * the final states and produce paths that mean nothing (docs/xstate-v5-notes.md §4).
 */
import { setup } from 'xstate';

/** Every event of the model; none carries a payload (payloads crash the traversal). */
export type SpecEvent =
  /** fetch spilled its first file (it holds the task dir from now on) */
  | { type: 'FETCH.SPILLED' }
  | { type: 'FETCH.DONE' }
  | { type: 'FETCH.FAILED' }
  | { type: 'GAP.DONE' }
  | { type: 'GAP.FAILED' }
  | { type: 'DRAIN.DONE' }
  | { type: 'DRAIN.FAILED' }
  /** a gap mail is rejected: the mailbox was quiesced (row GAP2) */
  | { type: 'MAIL.REJECTED' }
  /** a gap mail is queued and then dropped by the mailbox's close (row GAP3) */
  | { type: 'MAIL.DROPPED' }
  /** the channel-IO executor was shut down before the drain job was submitted (row D1) */
  | { type: 'EXECUTOR.REJECTED' }
  /** a checkpoint is taken during recovery; its writer then holds a snapshot reader */
  | { type: 'CHECKPOINT' }
  | { type: 'CHECKPOINT.DONE' }
  | { type: 'FINISH' }
  | { type: 'CANCEL' }
  | { type: 'FAIL' }
  /** a bare `actor.stop()`: no exit action runs */
  | { type: 'STOP' };

export type SpecEventType = SpecEvent['type'];

/** The endings of a task; `stopped` stands for an actor that was stopped, not a final state. */
export type Ending = 'finished' | 'failed' | 'cancelled' | 'stopped';

export const specMachine = setup({
  types: {} as { events: SpecEvent },
}).createMachine({
  id: 'spec',
  description: 'One recovering task, with every completion as an event.',
  initial: 'alive',
  states: {
    alive: {
      description: 'Until the task ends; CANCEL, FAIL and STOP are possible in every substate.',
      on: { CANCEL: '#spec.cancelled', FAIL: '#spec.failed', STOP: '#spec.stopped' },
      initial: 'restoring',
      states: {
        restoring: {
          description: 'The three stages.',
          initial: 'fetching',
          states: {
            fetching: {
              description: 'Stage 1.',
              initial: 'reading',
              states: {
                reading: {
                  description:
                    'Held on the first read of the checkpoint: nothing exists on disk, nothing is owned.',
                  on: { 'FETCH.SPILLED': 'spilling', 'FETCH.FAILED': '#spec.failed' },
                },
                spilling: {
                  description:
                    'Held on creating spill-segment-1.bin: the task dir and one full spill file exist, owned by fetch.',
                  on: { 'FETCH.DONE': '#spec.alive.restoring.gap', 'FETCH.FAILED': '#spec.failed' },
                },
              },
            },
            gap: {
              description:
                'Held in beforeStage(gap): the fetched state was handed off and is owned by gap; no mail posted yet.',
              on: {
                'GAP.DONE': 'draining',
                'GAP.FAILED': '#spec.failed',
                'MAIL.REJECTED': '#spec.failed',
                'MAIL.DROPPED': 'stalled',
              },
            },
            stalled: {
              description:
                'The requestPartitions mail was dropped: it never settles, only an ending can follow.',
            },
            draining: {
              description:
                'Held in beforeStage(drain): drainer built and installed as the trigger, drain job not submitted.',
              on: {
                'DRAIN.DONE': '#spec.alive.running',
                'DRAIN.FAILED': '#spec.failed',
                'EXECUTOR.REJECTED': '#spec.failed',
                CHECKPOINT: 'checkpointing',
              },
            },
            checkpointing: {
              description:
                'A checkpoint writer owns a snapshot reader with a spill file open, held on creating its output file.',
              on: {
                'CHECKPOINT.DONE': 'checkpointed',
                'DRAIN.DONE': '#spec.alive.running',
                'DRAIN.FAILED': '#spec.failed',
                'EXECUTOR.REJECTED': '#spec.failed',
              },
            },
            checkpointed: {
              description: 'The checkpoint completed (remainder written); the drain is still held.',
              on: {
                'DRAIN.DONE': '#spec.alive.running',
                'DRAIN.FAILED': '#spec.failed',
                'EXECUTOR.REJECTED': '#spec.failed',
              },
            },
          },
        },
        running: {
          description:
            'Recovered (autoFinish off); a checkpoint writer may still be held. Ends on FINISH.',
          on: { FINISH: '#spec.finished' },
        },
      },
    },
    finished: { type: 'final', description: 'Ended normally.' },
    failed: { type: 'final', description: 'A stage failed, or FAIL.' },
    cancelled: { type: 'final', description: 'CANCEL.' },
    stopped: { type: 'final', description: 'actor.stop(): stands for the stopped real actor.' },
  },
});
