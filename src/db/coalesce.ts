import type { MikroORM } from '@mikro-orm/postgresql';
import { preparedRows, type PreparedStatement } from './prepared.js';

/** How a `Coalescer` groups calls. */
export interface CoalesceOptions<In> {
  /** the most calls one statement carries */
  maxBatch: number;
  /** statements under way at once; a call waits only while this many are */
  inFlight: number;
  /** calls of one key never share a statement nor run at the same time (e.g. one device's two heartbeats) */
  key?: (input: In) => string;
}

interface Waiting<In, Out> {
  input: In;
  settle: (output: Out) => void;
  fail: (error: unknown) => void;
}

/**
 * Calls that arrive together, answered by one statement: a call goes out at once while fewer than
 * `inFlight` statements are under way, else it waits for one to finish and goes with every call that
 * arrived meanwhile. Each call is answered by a statement sent after it arrived, so it sees every
 * commit made before it, as a statement of its own would. At fleet scale the round trip and the
 * commit, not the row, are what a call costs PostgreSQL; idle, a call still costs one round trip.
 * `run` answers one output per input, in order. A statement that fails (a deadlock with another
 * writer) is run again for each of its calls alone, so one bad moment is no call's own error.
 */
export class Coalescer<In, Out> {
  private waiting: Waiting<In, Out>[] = [];
  private readonly busyKeys = new Set<string>();
  private running = 0;

  constructor(
    private readonly run: (inputs: In[]) => Promise<Out[]>,
    private readonly options: CoalesceOptions<In>,
  ) {}

  submit(input: In): Promise<Out> {
    return new Promise((settle, fail) => {
      this.waiting.push({ input, settle, fail });
      this.pump();
    });
  }

  private pump(): void {
    const { maxBatch, inFlight, key } = this.options;
    while (this.running < inFlight && this.waiting.length > 0) {
      const batch: Waiting<In, Out>[] = [];
      const later: Waiting<In, Out>[] = [];
      for (const call of this.waiting) {
        const callKey = key?.(call.input);
        const free = batch.length < maxBatch && (callKey === undefined || !this.busyKeys.has(callKey));
        if (free && callKey !== undefined) this.busyKeys.add(callKey);
        (free ? batch : later).push(call);
      }
      this.waiting = later;
      if (batch.length === 0) return;
      this.running += 1;
      void this.answer(batch).finally(() => {
        this.running -= 1;
        if (key) for (const call of batch) this.busyKeys.delete(key(call.input));
        this.pump();
      });
    }
  }

  private async answer(batch: Waiting<In, Out>[]): Promise<void> {
    let outputs: Out[];
    try {
      outputs = await this.run(batch.map((call) => call.input));
    } catch (error) {
      if (batch.length === 1) return batch[0]!.fail(error);
      await Promise.all(batch.map((call) => this.answer([call])));
      return;
    }
    batch.forEach((call, i) => call.settle(outputs[i]!));
  }
}

/**
 * A coalesced lookup: `prepared` selects from `unnest(…) with ordinality as k(…, n)` (the columns
 * `columns` builds from the inputs) and answers at most one row per input, tagged with its `n`; each
 * call gets its own row, or undefined.
 */
export function lookupCoalescer<In, Row extends object>(orm: MikroORM, prepared: PreparedStatement, columns: (inputs: In[]) => unknown[]): Coalescer<In, Row | undefined> {
  return new Coalescer<In, Row | undefined>(
    async (inputs) => {
      const rows = await preparedRows<Row & { n: string }>(orm, prepared, columns(inputs));
      const byInput = new Map(rows.map(({ n, ...row }) => [Number(n) - 1, row as unknown as Row]));
      return inputs.map((_, i) => byInput.get(i));
    },
    { maxBatch: 200, inFlight: 2 },
  );
}
