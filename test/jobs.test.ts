import { dueWorkJob } from '../src/jobs/due-work.js';
import type { JobDefinition } from '../src/jobs/types.js';
import { createTestApp } from './support/app.js';
import { TestClock } from './support/clock.js';
import { eventually } from './support/eventually.js';

test('a job scheduled for later runs at its time with its data', async () => {
  const runs: { data: { note: string }; at: number }[] = [];
  const job: JobDefinition<{ note: string }> = { name: 'test.record', handler: async (_runtime, data) => void runs.push({ data, at: Date.now() }) };
  const app = await createTestApp({ start: { jobs: [job as JobDefinition<never>] } });
  try {
    const scheduledAt = Date.now();
    await app.server.runtime.jobs.schedule('test.record', { note: 'hello' }, new Date(scheduledAt + 1000));
    await eventually(() => runs.length > 0, 10_000, 'the job');
    expect(runs[0]!.data).toEqual({ note: 'hello' });
    expect(runs[0]!.at).toBeGreaterThanOrEqual(scheduledAt + 1000);
  } finally {
    await app.stop();
  }
});

test('start-up refuses a job definition whose name a domain already defines', async () => {
  const taken: JobDefinition<never> = { name: 'auth.prune', handler: async () => {} };
  await expect(createTestApp({ start: { jobs: [taken] } })).rejects.toThrow('Duplicate job definition: auth.prune');
});

test('the due-work tick runs each due piece with the service clock’s now; a failing piece does not stop the others; a slower piece waits its period', async () => {
  const clock = new TestClock();
  clock.set(new Date('2031-05-01T12:00:00Z'));
  const app = await createTestApp({ start: { clock } });
  try {
    const seen: string[] = [];
    const tick = dueWorkJob([
      { name: 'every tick', run: async (_ctx, now) => void seen.push(`every tick ${now.toISOString()}`) },
      { name: 'broken', run: async () => Promise.reject(new Error('boom')) },
      { name: 'hourly', everySeconds: 3600, run: async (_ctx, now) => void seen.push(`hourly ${now.toISOString().slice(0, 13)}`) },
    ]);
    await tick.handler(app.server.runtime, undefined as never);
    await tick.handler(app.server.runtime, undefined as never);
    const everyTick = expect.stringMatching(/^every tick 2031-05-01T12:00/);
    expect(seen).toEqual([everyTick, 'hourly 2031-05-01T12', everyTick]);
    expect(() => dueWorkJob([{ name: 'x', run: async () => {} }, { name: 'x', run: async () => {} }])).toThrow('Duplicate due work: x');
  } finally {
    await app.stop();
  }
});

test('an unreachable MONGODB_URL stops start-up with a clear message', async () => {
  await expect(createTestApp({ env: { MONGODB_URL: 'mongodb://127.0.0.1:1/rmm' } })).rejects.toThrow(
    /Cannot connect to MongoDB at MONGODB_URL .*Unset MONGODB_URL to keep jobs in PostgreSQL/,
  );
}, 20_000);
