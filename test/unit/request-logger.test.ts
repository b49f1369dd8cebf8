/**
 * The per-request logger: nothing is built for a request that logs nothing, and a line that is
 * logged carries the request's bindings and the service's redaction, as an eager child's would.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createLogger, RequestLogger } from '../../src/logger.ts';

function capture(level: string) {
  const lines: Record<string, unknown>[] = [];
  // Written synchronously, line by line, so each assertion sees every line logged before it.
  const out = {
    write(text: string) {
      for (const l of text.split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
    },
  };
  const logger = createLogger(level, out);
  let children = 0;
  // pino's children inherit from their parent object, this counter included: it must call the
  // original on whichever logger it was called on.
  const child = logger.child; // eslint-disable-line @typescript-eslint/unbound-method -- applied below to whichever logger it was called on
  logger.child = function (this: typeof logger, ...args: Parameters<typeof child>) {
    children++;
    return child.apply(this, args);
  } as typeof logger.child;
  return { logger, lines, children: () => children };
}

test('below the logger level, a request logger builds no child and writes nothing', () => {
  const c = capture('warn');
  const log = new RequestLogger(c.logger, { correlationId: 'abc12345' }, {});
  log.info('ignored');
  log.debug({ a: 1 }, 'ignored');
  log.trace('ignored');
  assert.equal(c.children(), 0);
  assert.equal(c.lines.length, 0);
  assert.equal(log.level, 'warn');
});

test('at an enabled level, the line carries the bindings and is redacted like any other', () => {
  const c = capture('info');
  const log = new RequestLogger(c.logger, { correlationId: 'abc12345' }, {});
  log.warn({ headers: { cookie: 'secret-cookie' }, primary: { primaryKey: 'spl_x' } }, 'first');
  log.info('second');
  assert.equal(c.children(), 1, 'one child, made once, for both lines');
  assert.equal(c.lines.length, 2);
  const [first, second] = c.lines;
  assert.equal(first!.correlationId, 'abc12345');
  assert.equal(first!.msg, 'first');
  assert.deepEqual(first!.headers, { cookie: '[redacted]' });
  assert.deepEqual(first!.primary, { primaryKey: '[redacted]' });
  assert.equal(second!.correlationId, 'abc12345');
});

test('a level set on the request logger applies to that request only', () => {
  const c = capture('warn');
  const log = new RequestLogger(c.logger, { correlationId: 'abc12345' }, {});
  log.level = 'debug';
  log.debug('now written');
  assert.equal(c.lines.length, 1);
  assert.equal(c.logger.level, 'warn');
  const nested = log.child({ part: 'x' });
  nested.debug('nested');
  assert.equal(c.lines[1]!.part, 'x');
  assert.equal(c.lines[1]!.correlationId, 'abc12345');
});

test('a route log level given in the options applies from the first line', () => {
  const c = capture('warn');
  const log = new RequestLogger(c.logger, { correlationId: 'abc12345' }, { level: 'debug' });
  log.debug('route-level debug');
  assert.equal(c.lines.length, 1);
  assert.equal(c.lines[0]!.correlationId, 'abc12345');
  assert.equal(log.level, 'debug');
});
