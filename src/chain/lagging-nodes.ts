/**
 * Reads that must see a block, behind a provider whose nodes lag.
 *
 * A hosted provider answers each request from one node of many behind a load balancer, and some
 * are a few blocks behind. Asked for `latest`, such a node answers its own older head: a balance
 * read there misses a payment the scanner has already recorded, and a sweep would be skipped as if
 * the address were empty. So a read that must see a block is pinned to it, and a node that does
 * not have that block answers an error ("header not found" on Geth and its forks, "unknown block"
 * or "block not found" elsewhere) instead of a stale value. Such an answer is asked again, up to
 * LAG_RETRIES times: the next request usually reaches a node that has the block. Any other error,
 * a revert above all, is an answer about the call and is thrown at once.
 */
import { HttpRequestError } from 'viem';

/**
 * Immediate re-asks of a read that a lagging node could not answer: with one answer in three from
 * such a node, four asks all miss about once in a hundred reads.
 */
export const LAG_RETRIES = 3;

const BLOCK_MISSING = /header not found|unknown block|block (?:\S+ )?not found/i;

/** The error and its causes, outermost first. */
export function* causes(err: unknown): Generator<object> {
  const seen = new Set<unknown>();
  for (let e: unknown = err; e !== null && typeof e === 'object' && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    yield e;
  }
}

/** Whether the node answered with a JSON-RPC error (it has a code), rather than the transport failing. */
export function isRpcAnswer(err: unknown): boolean {
  for (const e of causes(err)) {
    if (typeof (e as { code?: unknown }).code === 'number' && !(e instanceof HttpRequestError)) return true;
  }
  return false;
}

/** Whether the node answered that it does not have the block a read was pinned to (it lags). */
export function isBlockMissing(err: unknown): boolean {
  if (!isRpcAnswer(err)) return false;
  for (const e of causes(err)) {
    const { details, message } = e as { details?: unknown; message?: unknown };
    if ((typeof details === 'string' && BLOCK_MISSING.test(details)) || (typeof message === 'string' && BLOCK_MISSING.test(message))) return true;
  }
  return false;
}

/** HTTP statuses of a provider's passing failure: a timeout, or a gateway or node failing this once. */
const SERVER_FAILURE_STATUS = new Set([408, 500, 502, 503, 504]);

/**
 * Whether the provider's load balancer or a node failed this one request (HTTP 5xx or 408): asking
 * once more, a moment later, usually reaches a node that answers.
 */
export function isServerFailure(err: unknown): boolean {
  for (const e of causes(err)) {
    const { status } = e as { status?: unknown };
    if (typeof status === 'number' && SERVER_FAILURE_STATUS.has(status)) return true;
  }
  return false;
}

/**
 * Whether the provider refused the call for its rate limit: HTTP 429 (Infura's body then carries
 * -32005, the code of its result-size refusal too), or JSON-RPC 429 or QuickNode's -32007 in an
 * answer. Asking again, or splitting the request into more, only spends the limit again.
 */
export function isRateLimited(err: unknown): boolean {
  for (const e of causes(err)) {
    const { status, code } = e as { status?: unknown; code?: unknown };
    if (status === 429 || code === 429 || code === -32007) return true;
  }
  return false;
}

/**
 * Runs `read` (pinned to a block by the caller) and asks again while the answering node lacks the
 * block, up to `retries` more times; the last error is thrown.
 */
export async function fromAnyNode<T>(read: () => Promise<T>, retries = LAG_RETRIES): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await read();
    } catch (err) {
      if (i >= retries || !isBlockMissing(err)) throw err;
    }
  }
}
