/**
 * Unapplied journal entries in write order. Replay removes from the front, so removal there is
 * O(1) (a head index, trimmed now and then) however long an outage made the queue.
 */
import type { JournalEntry } from './entries.ts';

export interface Slot {
  entry: JournalEntry;
  /** 'writing' until fsync'd; only durable entries are replayed or counted as pending. */
  state: 'writing' | 'durable' | 'done';
  written: Promise<void>;
}

export class SlotQueue {
  private items: Slot[] = [];
  private head = 0;
  private live = 0;
  private durableCount = 0;

  /** Entries written or being written, not yet applied. */
  get size(): number {
    return this.live;
  }

  /** Entries on disk, not yet applied. */
  get durable(): number {
    return this.durableCount;
  }

  push(slot: Slot): void {
    this.items.push(slot);
    this.live++;
    if (slot.state === 'durable') this.durableCount++;
  }

  markDurable(slot: Slot): void {
    if (slot.state !== 'writing') return;
    slot.state = 'durable';
    this.durableCount++;
  }

  remove(slot: Slot): void {
    if (slot.state === 'done') return;
    if (slot.state === 'durable') this.durableCount--;
    slot.state = 'done';
    this.live--;
    while (this.head < this.items.length && this.items[this.head]!.state === 'done') this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /** The oldest entry not yet applied. */
  first(): Slot | undefined {
    return this.items[this.head];
  }

  /** Durable entries, oldest first. */
  *durableSlots(): Generator<Slot> {
    for (let i = this.head; i < this.items.length; i++) {
      const s = this.items[i]!;
      if (s.state === 'durable') yield s;
    }
  }
}
