import type { Clock } from '../../src/runtime.js';

/** Real time shifted by however far the test has moved it, for rules that span hours (pass it as `start.clock`). */
export class TestClock implements Clock {
  private offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }

  /** Moves the clock to `at` (it keeps running from there), for rules that depend on the time of day or the weekday. */
  set(at: Date): void {
    this.offsetMs = at.getTime() - Date.now();
  }
}
