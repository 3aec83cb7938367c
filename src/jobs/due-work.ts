import { RequestContext } from '../auth/context.js';
import { onePer } from '../memo.js';
import type { Runtime } from '../runtime.js';
import type { DueWork, JobDefinition } from './types.js';

export const DUE_WORK_JOB = 'due-work.tick';
export const TICK_SECONDS = 5;

/** When each piece last ran on this instance (real time): pieces slower than the tick wait their turn. */
const lastRuns = onePer((_runtime: Runtime) => new Map<string, number>());

/**
 * The one recurring job behind every domain's due work: each tick reads the service clock once and
 * runs every piece that is due, side by side; one that fails is logged and the others still run.
 * The domains' own jobs at an instant (an occurrence's start, a wait's end) stay the fast path; the
 * tick follows the injectable clock and catches up whatever such a job missed.
 */
export function dueWorkJob(pieces: DueWork[]): JobDefinition<never> {
  const names = new Set<string>();
  for (const piece of pieces) {
    if (names.has(piece.name)) throw new Error(`Duplicate due work: ${piece.name}`);
    names.add(piece.name);
  }
  return {
    name: DUE_WORK_JOB,
    every: `${TICK_SECONDS} seconds`,
    concurrency: 1,
    handler: async (runtime) => {
      const now = runtime.clock.now();
      const ran = lastRuns(runtime);
      // Agenda's interval is not exact: a piece is due when at least half a tick short of its period has passed.
      const due = pieces.filter((piece) => !piece.everySeconds || Date.now() - (ran.get(piece.name) ?? -Infinity) >= (piece.everySeconds - TICK_SECONDS / 2) * 1000);
      await Promise.all(
        due.map(async (piece) => {
          ran.set(piece.name, Date.now());
          try {
            await piece.run(RequestContext.system(runtime, `${DUE_WORK_JOB}:${piece.name}`), now);
          } catch (error) {
            runtime.log.error({ work: piece.name, err: (error as Error).message }, 'due work failed');
          }
        }),
      );
    },
  };
}
