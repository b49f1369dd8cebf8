/**
 * The resident memory of a server under the bench (started by scripts/service-launcher.ts), read
 * from /proc while the load runs.
 */
import { readFileSync } from 'node:fs';

/** Reads a process's resident memory from /proc and keeps the peak, overall and per phase. */
export class RssSampler {
  private timer: NodeJS.Timeout | undefined;
  peakMb = 0;
  phasePeakMb = 0;

  constructor(private readonly pid: number) {}

  start(intervalMs = 200): void {
    this.sample();
    // Unref'd: a bench that fails half-way must not be kept alive by its sampler.
    this.timer = setInterval(() => this.sample(), intervalMs).unref();
  }

  /** Starts a new phase (a route's run) and returns the peak of the one before. */
  nextPhase(): number {
    this.sample();
    const peak = this.phasePeakMb;
    this.phasePeakMb = 0;
    return peak;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private sample(): void {
    let status: string;
    try {
      status = readFileSync(`/proc/${this.pid}/status`, 'utf8');
    } catch {
      return; // the process has gone; its peak stands
    }
    const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1] ?? 0);
    const mb = kb / 1024;
    this.peakMb = Math.max(this.peakMb, mb);
    this.phasePeakMb = Math.max(this.phasePeakMb, mb);
  }
}
