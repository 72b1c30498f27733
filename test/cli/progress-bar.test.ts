/**
 * `spillway recover`'s progress bar (docs/cli.md, Progress): one fraction over the whole
 * recovery that never goes backwards across fetch → gap → drain; bytes, rate, elapsed and ETA;
 * a line that fits any terminal width, dropping fields in a fixed order, never wrapping.
 */
import { describe, expect, it } from 'vitest';
import {
  clock,
  formatBar,
  formatPlain,
  ProgressTracker,
  type BarReading,
} from '../../src/cli/progress-text.ts';
import type { RecoveryProgress } from '../../src/services/progress.ts';

const MIB = 1024 * 1024;

function reading(over: Partial<RecoveryProgress>): RecoveryProgress {
  return {
    taskId: 't',
    stage: 'fetch',
    checkpointBytes: undefined,
    bytesRead: 0,
    bytesSpilled: 0,
    spillFiles: 0,
    payloadBytes: undefined,
    bytesDelivered: 0,
    channels: undefined,
    channelsDelivered: 0,
    channelsFinished: 0,
    checkpoints: 0,
    retries: 0,
    elapsedMs: 0,
    ...over,
  };
}

/** A recovery of a 64 MiB checkpoint whose payload is `payload` MiB, as the library reports it. */
function recoveryReadings(payloadMiB: number): RecoveryProgress[] {
  const cp = 64 * MIB + 4096;
  const payload = payloadMiB * MIB;
  const list: RecoveryProgress[] = [reading({ stage: 'starting' })];
  let ms = 0;
  for (let read = 0; read <= 64 * MIB; read += 8 * MIB) {
    list.push(
      reading({ stage: 'fetch', checkpointBytes: cp, bytesRead: read, elapsedMs: (ms += 100) }),
    );
  }
  const fetched = { checkpointBytes: cp, bytesRead: 64 * MIB, payloadBytes: payload, channels: 32 };
  list.push(reading({ stage: 'gap', ...fetched, elapsedMs: (ms += 10) }));
  for (let d = 0; d <= payload; d += 4 * MIB) {
    list.push(
      reading({
        stage: 'drain',
        ...fetched,
        bytesDelivered: d,
        channelsDelivered: Math.floor((32 * d) / payload),
        elapsedMs: (ms += 100),
      }),
    );
  }
  list.push(
    reading({
      stage: 'finished',
      ...fetched,
      bytesDelivered: payload,
      channelsDelivered: 32,
      channelsFinished: 32,
      elapsedMs: (ms += 5),
    }),
  );
  return list;
}

const SAMPLE: BarReading = {
  fraction: 0.513,
  stage: 'drain',
  bytes: 8 * MIB,
  bytesTotal: 16 * MIB,
  bytesPerSecond: 85.3 * MIB,
  elapsedMs: 3200,
  etaMs: 4100,
  channels: 32,
  channelsDone: 12,
  spillFiles: 3,
  retries: 2,
};

describe('one fraction over the whole recovery', () => {
  it.each([64, 32, 1])(
    'monotonic across stages: fetch then drain of a %i MiB payload never goes backwards, from 0 to exactly 1',
    (payloadMiB) => {
      const tracker = new ProgressTracker();
      const shown = recoveryReadings(payloadMiB).map((p) => tracker.read(p));
      const fractions = shown.map((r) => r.fraction);
      for (let i = 1; i < fractions.length; i++) {
        expect(fractions[i]!, `reading ${i} (${shown[i]!.stage})`).toBeGreaterThanOrEqual(
          fractions[i - 1]!,
        );
      }
      expect(fractions[0]).toBe(0);
      expect(fractions.at(-1)).toBe(1);
      // The drain does not restart the bar: its first reading is where the fetch ended.
      const firstDrain = shown.find((r) => r.stage === 'drain')!;
      expect(firstDrain.fraction).toBeGreaterThanOrEqual(0.5);
      // The fetch's end is not the whole: the drain's bytes are still to come.
      expect(shown.filter((r) => r.stage === 'fetch').at(-1)!.fraction).toBeLessThan(0.51);
    },
  );

  it('the fraction never falls even when a reading goes back (a payload larger than the estimate)', () => {
    const tracker = new ProgressTracker();
    const cp = 10 * MIB;
    const a = tracker.read(
      reading({ stage: 'fetch', checkpointBytes: cp, bytesRead: cp, elapsedMs: 100 }),
    );
    // A payload bigger than what the checkpoint's size promised: the raw ratio would fall.
    const b = tracker.read(
      reading({
        stage: 'drain',
        checkpointBytes: cp,
        bytesRead: cp,
        payloadBytes: 4 * cp,
        elapsedMs: 200,
      }),
    );
    expect(a.fraction).toBeCloseTo(0.5, 5);
    expect(b.fraction).toBe(a.fraction);
  });

  it('rate, elapsed and ETA: a steady 80 MiB/s of work reads as 80 MiB/s with the time left at that rate', () => {
    const tracker = new ProgressTracker();
    const cp = 800 * MIB;
    let last: BarReading | undefined;
    for (let ms = 0; ms <= 4000; ms += 200) {
      last = tracker.read(
        reading({
          stage: 'fetch',
          checkpointBytes: cp,
          bytesRead: (80 * MIB * ms) / 1000,
          elapsedMs: ms,
        }),
      );
    }
    expect(last!.bytesPerSecond! / MIB).toBeCloseTo(80, 5);
    expect(last!.elapsedMs).toBe(4000);
    // 320 of 1600 MiB of work done (fetch 800 + drain estimated 800): 1280 MiB left at 80 MiB/s.
    expect(last!.etaMs! / 1000).toBeCloseTo(16, 5);
    expect(formatBar(last!, 200)).toMatch(/ 80\.0 MiB\/s · 0:04 · ETA 0:16/);
  });

  it('the rate is smoothed: a one-reading stall moves it part of the way, not to 0', () => {
    const tracker = new ProgressTracker();
    const cp = 800 * MIB;
    let bytes = 0;
    for (let ms = 0; ms <= 4000; ms += 200) {
      bytes = (80 * MIB * ms) / 1000;
      tracker.read(
        reading({ stage: 'fetch', checkpointBytes: cp, bytesRead: bytes, elapsedMs: ms }),
      );
    }
    const stalled = tracker.read(
      reading({ stage: 'fetch', checkpointBytes: cp, bytesRead: bytes, elapsedMs: 4200 }),
    );
    expect(stalled.bytesPerSecond! / MIB).toBeGreaterThan(60);
    expect(stalled.bytesPerSecond! / MIB).toBeLessThan(80);
  });
});

describe('the bar fits the terminal', () => {
  it.each([20, 40, 80, 200])('at %i columns: at most columns−1 characters, one line', (columns) => {
    const line = formatBar(SAMPLE, columns);
    expect(line.length).toBeLessThanOrEqual(columns - 1);
    expect(line).not.toMatch(/[\r\n]/);
    expect(line).toMatch(/^(\[[█░]+\] )? 51%/);
  });

  it('fields go in a fixed order as the width shrinks: retries, channels, elapsed, rate, then the bar, bytes, ETA, stage; the percent is cut last', () => {
    const bar = (cells: number) =>
      `[${'█'.repeat(Math.round(0.513 * cells))}${'░'.repeat(cells - Math.round(0.513 * cells))}]`;
    expect(formatBar(SAMPLE, 200)).toBe(
      `${bar(30)}  51% drain 8.0/16.0 MiB · 85.3 MiB/s · 0:03 · ETA 0:04 · 12/32 ch · 2 retries`,
    );
    expect(formatBar(SAMPLE, 100)).toBe(
      `${bar(24)}  51% drain 8.0/16.0 MiB · 85.3 MiB/s · 0:03 · ETA 0:04 · 12/32 ch`,
    );
    expect(formatBar(SAMPLE, 80)).toBe(
      `${bar(19)}  51% drain 8.0/16.0 MiB · 85.3 MiB/s · 0:03 · ETA 0:04`,
    );
    expect(formatBar(SAMPLE, 60)).toBe(`${bar(14)}  51% drain 8.0/16.0 MiB · ETA 0:04`);
    expect(formatBar(SAMPLE, 40)).toBe(' 51% drain 8.0/16.0 MiB · ETA 0:04');
    expect(formatBar(SAMPLE, 20)).toBe(' 51% drain');
    expect(formatBar(SAMPLE, 8)).toBe(' 51%');
    expect(formatBar(SAMPLE, 3)).toBe('51');
  });

  it('the bar fills in proportion: empty at 0, full at 1', () => {
    expect(formatBar({ ...SAMPLE, fraction: 0 }, 200)).toMatch(/^\[░{30}\]   0%/);
    expect(formatBar({ ...SAMPLE, fraction: 1, etaMs: 0 }, 200)).toMatch(/^\[█{30}\] 100%/);
  });

  it('a plain line names everything, with no bar and no control characters', () => {
    expect(formatPlain(SAMPLE)).toBe(
      'drain 51% 8.0/16.0 MiB, 85.3 MiB/s, 0:03 elapsed, ETA 0:04, 12/32 channels, 3 spill files, 2 retries',
    );
    expect(clock(3_723_000)).toBe('1:02:03');
    expect(clock(65_000)).toBe('1:05');
  });
});
