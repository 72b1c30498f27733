/**
 * The CLI's progress bar, drawn from the library's own `onProgress` readings (so the public
 * progress feed is tested by use): how far the current stage is, and what it has done.
 */
import type { RecoveryProgress } from '../services/progress.ts';
import { mib } from './io.ts';

/**
 * The bar's fill (0..1) and its text for one reading: the fetch stage measures bytes read of
 * the checkpoint, the drain bytes delivered of the payload.
 *
 * @example
 * ```ts
 * const { fraction, text } = progressText(recovery.progress());
 * line.update(fraction, text);
 * ```
 */
export function progressText(p: RecoveryProgress): { fraction: number; text: string } {
  const retries = p.retries > 0 ? `, ${p.retries} retr${p.retries === 1 ? 'y' : 'ies'}` : '';
  if (p.stage === 'fetch' || p.stage === 'starting') {
    const total = p.checkpointBytes;
    return {
      fraction: total ? p.bytesRead / total : 0,
      text:
        `fetch ${mib(p.bytesRead)}${total ? ` of ${mib(total)}` : ''}, ` +
        `${p.spillFiles} spill file${p.spillFiles === 1 ? '' : 's'}${retries}`,
    };
  }
  const total = p.payloadBytes;
  const channels = p.channels === undefined ? '' : `, ${p.channelsFinished}/${p.channels} channels`;
  return {
    fraction: total ? p.bytesDelivered / total : p.stage === 'gap' ? 0 : 1,
    text: `${p.stage} ${mib(p.bytesDelivered)}${total ? ` of ${mib(total)}` : ''}${channels}${retries}`,
  };
}
