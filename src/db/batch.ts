/**
 * Point lookups made in the same event-loop turn, coalesced into one query per group (the
 * DataLoader pattern). Under load, dozens of requests reach their handlers between two turns of
 * the loop; one round trip for all of them costs the service and PostgreSQL a fraction of one
 * round trip each, and the first request waits at most one turn for the others.
 *
 * Results are never cached: every lookup reads the database after it was asked for, so a write
 * acknowledged before a read began is always seen by it.
 */
export type LoadBatch<V> = (group: string, keys: string[]) => Promise<Map<string, V>>;

interface Waiter<V> {
  resolve(value: V | undefined): void;
  reject(err: unknown): void;
}

export class LookupBatcher<V> {
  /** group → key → everyone waiting for that key. */
  private pending = new Map<string, Map<string, Waiter<V>[]>>();
  private scheduled = false;

  constructor(
    private readonly load: LoadBatch<V>,
    /** Most keys in one query; a larger batch is split. */
    private readonly maxBatch = 100,
  ) {}

  /** The value for `key` within `group` (a merchant's wallet, say), or undefined when there is none. */
  get(group: string, key: string): Promise<V | undefined> {
    return new Promise((resolve, reject) => {
      let keys = this.pending.get(group);
      if (keys === undefined) {
        keys = new Map();
        this.pending.set(group, keys);
      }
      const waiters = keys.get(key);
      if (waiters === undefined) keys.set(key, [{ resolve, reject }]);
      else waiters.push({ resolve, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        // After the I/O callbacks of this turn, so every handler they started has asked by then.
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = new Map();
    this.scheduled = false;
    for (const [group, keys] of batch) {
      const all = [...keys.keys()];
      for (let i = 0; i < all.length; i += this.maxBatch) {
        void this.run(group, all.slice(i, i + this.maxBatch), keys);
      }
    }
  }

  private async run(group: string, keys: string[], waiting: Map<string, Waiter<V>[]>): Promise<void> {
    try {
      const found = await this.load(group, keys);
      for (const key of keys) for (const w of waiting.get(key)!) w.resolve(found.get(key));
    } catch (err) {
      for (const key of keys) for (const w of waiting.get(key)!) w.reject(err);
    }
  }
}

/** One item's outcome in a group commit. */
export type Settled<O> = { ok: true; value: O } | { ok: false; error: unknown };

/**
 * Writes submitted together, committed together by one call of `commit`, which settles each item
 * on its own (one item's refusal is not another's). When `commit` throws, every item of its batch
 * fails with that error. Nothing is acknowledged before the batch's transaction has committed.
 *
 * A batch starts on the turn after its first item arrived (after the I/O callbacks of that turn,
 * so every handler they started has submitted by then), at most `maxBatch` items each. With
 * `maxInFlight`, at most that many batches run at once, and the items arriving meanwhile wait for
 * one to finish and then go together: limiting them is what makes batches grow with the load.
 * Orders need it (src/domain/orders.ts): a batch for each turn would be many small transactions
 * queueing on a popular item's row lock, one after another, each paying its own round trips and
 * COMMIT. Receipt inserts take no lock and run a batch per turn.
 */
export class GroupCommit<I, O> {
  private pending: { item: I; resolve(value: O): void; reject(err: unknown): void }[] = [];
  private running = 0;
  private scheduled = false;
  private readonly maxBatch: number;
  private readonly maxInFlight: number;

  constructor(
    private readonly commit: (items: I[]) => Promise<Settled<O>[]>,
    opts: { maxBatch?: number; maxInFlight?: number } = {},
  ) {
    this.maxBatch = opts.maxBatch ?? 100;
    this.maxInFlight = opts.maxInFlight ?? Infinity;
  }

  submit(item: I): Promise<O> {
    return new Promise((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.maxInFlight || this.pending.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      while (this.running < this.maxInFlight && this.pending.length > 0) {
        this.running++;
        void this.run(this.pending.splice(0, this.maxBatch)).finally(() => {
          this.running--;
          this.schedule();
        });
      }
    });
  }

  private async run(batch: GroupCommit<I, O>['pending']): Promise<void> {
    try {
      const outcomes = await this.commit(batch.map((b) => b.item));
      batch.forEach((b, i) => {
        const outcome = outcomes[i];
        if (outcome === undefined) b.reject(new Error('group commit returned no outcome for an item'));
        else if (outcome.ok) b.resolve(outcome.value);
        else b.reject(outcome.error);
      });
    } catch (err) {
      for (const b of batch) b.reject(err);
    }
  }
}
