// A person's Stop of one drive (docs/product.md "Watch"): the drive's model call and tools run under a
// signal that aborts with the Stop's own reason, so they end at once and the loop can tell a Stop
// from a shutdown or a deadline (docs/style.md §6).
import { StopRequested } from '../errors.js';

/** The stop switch of the drive in flight; one per runner. */
export class RunStop {
  private controller: AbortController | null = null;
  private by: string | null = null;

  /** A drive begins: returns its signal (aborted by `lifetime`, i.e. shutdown, or by a Stop). */
  begin(lifetime: AbortSignal): AbortSignal {
    this.controller = new AbortController();
    this.by = null;
    return AbortSignal.any([lifetime, this.controller.signal]);
  }

  /** The drive ended; returns who stopped it, if anyone. */
  end(): string | null {
    const by = this.by;
    this.controller = null;
    this.by = null;
    return by;
  }

  /** Who stopped the drive in flight, or null. */
  get stoppedBy(): string | null {
    return this.by;
  }

  /** Aborts the drive in flight (the first Stop counts); false when none runs. */
  abort(by: string): boolean {
    if (!this.controller || this.by !== null) return false;
    this.by = by;
    this.controller.abort(new StopRequested(by));
    return true;
  }
}
