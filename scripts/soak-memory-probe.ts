/**
 * Preloaded into the server process by scripts/soak.ts (`node --expose-gc --import`), never by the
 * service itself: reports the process's memory to the soak script over the IPC channel once a
 * second, so the soak can chart the server's heap as well as its RSS without a route in the
 * service. Every tenth report follows a full garbage collection: the heap then holds only what is
 * still referenced, which is what a leak would make grow (between collections the heap is a
 * sawtooth that says little).
 */
if (process.send !== undefined) {
  const gc = (globalThis as { gc?: () => void }).gc;
  let n = 0;
  const timer = setInterval(() => {
    if (!process.connected) return clearInterval(timer);
    const afterGc = gc !== undefined && ++n % 10 === 0;
    if (afterGc) gc();
    const m = process.memoryUsage();
    process.send!({ type: 'soak:memory', at: Date.now(), rss: m.rss, heapUsed: m.heapUsed, external: m.external, afterGc });
  }, 1000);
  timer.unref();
  // The channel must not keep the service alive: it exits when its own shutdown says so.
  process.channel?.unref();
}
