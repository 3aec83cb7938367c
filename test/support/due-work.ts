import type { TestApp } from './app.js';
import { sql } from './db.js';
import { eventually } from './eventually.js';

/** Waits for a due-work tick that started after now to finish. */
export async function aTickHasRun(app: TestApp): Promise<void> {
  const since = new Date();
  await eventually(async () => {
    const [row] = await sql(app, `select last_finished_at from agenda_jobs where name = 'due-work.tick'`);
    return row?.last_finished_at && new Date(row.last_finished_at) > since;
  }, 15_000, 'a due-work tick');
}
