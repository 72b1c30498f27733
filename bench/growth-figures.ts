/** What the growth measurement finds: the figures `growth.ts` measures and `svg.ts` draws. */
import type { ChannelFigures } from './channels.ts';

export interface StateFigures {
  mb: number;
  ms: number;
  peakRssMiB: number;
  /** ms per GiB: flat when time is linear in the state size. */
  msPerGiB: number;
}

export interface TaskFigures {
  tasks: number;
  ms: number;
  peakRssMiB: number;
  /** (peak − the same child with nothing recovered) ÷ tasks. */
  rssPerTaskMiB: number;
}

export interface GrowthFigures {
  state: StateFigures[];
  tasks: TaskFigures[];
  channels: ChannelFigures[];
}
