/**
 * The model suite through the filtering spill handler: every path of ./model.test.ts replayed
 * on a v2 record checkpoint recovered as new subtask 0 of 2 (test/helpers/spill-mode.ts), with
 * the same oracle (G1, G2, G3, G5, G6 on the survivors' bytes) after every step: rescaling must keep every guarantee.
 */
import { useSpillMode } from '../helpers/spill-mode.ts';

useSpillMode('filtering');
await import('./model.test.ts');
