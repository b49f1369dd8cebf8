/**
 * Every transaction the service's deployer account sends besides sweeps: split deployments,
 * releases, the payment-forwarder factory and the dev chain's test USDC, gasless relays. One nonce
 * source for all of them and the sweeps: the service's own nonce keeper (src/chain/nonce-keeper.ts,
 * table chain_nonces), never the node's pending count. A lagging node of a load-balanced provider
 * answers a stale pending count ("nonce too low"), and two instances sharing a database would each
 * take the same pending count and collide; the keeper reserves each nonce once across instances.
 *
 * The rules are the sweeps' (DESIGN.md "A real chain"):
 *   - A nonce is reserved before the transaction is signed; when the node refuses it outright, the
 *     nonce goes back (unless the chain used it, or something was reserved after it: then a
 *     zero-value transfer to itself fills the hole so later transactions are not held behind it).
 *     "Nonce too low" means the kept nonce was behind the chain: the next one is reserved, a few
 *     times at most.
 *   - Fees: twice the base fee plus the tip, capped by MAX_FEE_GWEI (src/chain/fees.ts); above the
 *     cap nothing is sent (FeesAboveCap).
 *   - A transaction waited for (sendAndWait) and still unmined REPLACE_AFTER_BLOCKS blocks after its
 *     last send is replaced with the same nonce and a higher fee, up to the cap; whichever of its
 *     transactions is mined is the answer.
 *
 * Without a database (a chain started before one exists, a test's bare client) the node's pending
 * count is used as before: one process, one node.
 */
import {
  keccak256,
  type Address,
  type Hex,
  type TransactionReceipt,
  TransactionReceiptNotFoundError,
} from 'viem';
import type { Logger } from 'pino';
import type { Db } from '../db/client.ts';
import type { ChainPublicClient, ChainWalletClient } from './client.ts';
import { firstFees, gwei, replacementFees, type Fees } from './fees.ts';
import { NonceKeeper } from './nonce-keeper.ts';
import { sendSigned, type Refusal } from './refusals.ts';
import { sendSerially } from './wallet-queue.ts';

/** A transaction of the deployer: `to` absent deploys `data` as creation code. */
export interface DeployerTx {
  to?: Address;
  data: Hex;
  value?: bigint;
  /** Gas limit; estimated (plus a margin) when absent, so a call that would revert is refused before it is sent. */
  gas?: bigint;
}

/** A transaction signed and handed to the node. */
export interface SignedTx {
  hash: Hex;
  raw: Hex;
  nonce: bigint;
  gas: bigint;
  fees: Fees;
  /** The chain's head when it was sent. */
  block: bigint;
}

export interface DeployerOptions {
  /** The database holding chain_nonces; without it, the node's pending count. */
  db?: Db;
  /** MAX_FEE_GWEI in wei. */
  maxFeeWei?: bigint;
  logger?: Logger;
  /** Blocks a waited-for transaction may stay unmined before it is replaced. */
  replaceAfterBlocks?: bigint;
  /** How long sendAndWait waits for the transaction to be mined (ms). */
  waitMs?: number;
}

/** The base fee alone is above MAX_FEE_GWEI: nothing was sent. */
export class FeesAboveCap extends Error {
  constructor(baseFee: bigint, cap: bigint) {
    super(`The chain's base fee (${gwei(baseFee)} gwei) is above MAX_FEE_GWEI (${gwei(cap)} gwei); nothing was sent`);
    this.name = 'FeesAboveCap';
  }
}

/** The node refused the transaction outright (nothing was sent); `refusal` says how. */
export class TransactionRefused extends Error {
  constructor(
    readonly refusal: Refusal,
    options: { cause: unknown },
  ) {
    super(`The node refused the transaction (${refusal})`, options);
    this.name = 'TransactionRefused';
  }
}

/** Gas limit margin over the estimate, as the sweeps have it. */
const GAS_MARGIN_PER_CENT = 130n;
/** Waited-for transactions unmined this many blocks after their last send are replaced. */
export const REPLACE_AFTER_BLOCKS = 3n;
/** Without MAX_FEE_GWEI (a bare client): no cap worth the name. */
const NO_CAP = 10n ** 15n;
/** Reservations tried when the node says the nonce was used already. */
const NONCE_TRIES = 4;
/** A tip when the node suggests none. */
const FALLBACK_TIP = 10n ** 6n;
/** A transaction waited for this long is checked for unused nonces below it (auto-mined dev chains make no blocks while it waits). */
const HOLE_CHECK_MS = 10_000;
/** sendAndWait gives up after this long by default; the transaction itself may still be mined. */
const WAIT_MS = 120_000;

/** The deployer of a chain with a key for gas, sending with the nonce keeper of `o.db`; undefined without a key. */
export function deployerOf(chain: { walletClient?: ChainWalletClient; publicClient: ChainPublicClient } | undefined, o: DeployerOptions): Deployer | undefined {
  return chain?.walletClient === undefined ? undefined : new Deployer(chain.walletClient, chain.publicClient, o);
}

export class Deployer {
  readonly address: Address;
  private readonly keeper: NonceKeeper | undefined;

  constructor(
    readonly walletClient: ChainWalletClient,
    readonly publicClient: ChainPublicClient,
    private readonly o: DeployerOptions = {},
  ) {
    this.address = walletClient.account.address;
    this.keeper = o.db === undefined ? undefined : new NonceKeeper(o.db, publicClient, this.address);
  }

  private cap(): bigint {
    return this.o.maxFeeWei ?? NO_CAP;
  }

  private async feesNow(): Promise<{ baseFee: bigint; tip: bigint }> {
    const [block, tip] = await Promise.all([
      this.publicClient.getBlock({ blockTag: 'latest' }),
      this.publicClient.estimateMaxPriorityFeePerGas().catch(() => FALLBACK_TIP),
    ]);
    return { baseFee: block.baseFeePerGas ?? 0n, tip };
  }

  /**
   * Signs and sends a transaction with a nonce of the keeper. `record` runs after signing and before
   * the node sees it (to store it, e.g. as a sweep); `unrecord` undoes it when the node refused
   * the transaction outright. Returns what was sent; throws TransactionRefused, FeesAboveCap, or
   * the estimate's revert.
   */
  /** The gas limit a transaction is sent with: the node's estimate plus a margin (throws when the call would revert). */
  async estimate(tx: DeployerTx): Promise<bigint> {
    return ((await this.publicClient.estimateGas({ account: this.walletClient.account, to: tx.to ?? null, data: tx.data, value: tx.value })) * GAS_MARGIN_PER_CENT) / 100n;
  }

  async send(
    tx: DeployerTx,
    hooks: { record?: (signed: SignedTx) => Promise<void>; unrecord?: (signed: SignedTx) => Promise<void> } = {},
  ): Promise<SignedTx> {
    const gas = tx.gas ?? (await this.estimate(tx));
    const { baseFee, tip } = await this.feesNow();
    const fees = firstFees(baseFee, tip, this.cap());
    if (fees === null) throw new FeesAboveCap(baseFee, this.cap());
    return sendSerially(this.walletClient, async () => {
      for (let attempt = 1; ; attempt++) {
        const [nonce, block] = await Promise.all([this.reserve(), this.publicClient.getBlockNumber({ cacheTime: 0 })]);
        const raw = await this.sign(tx, nonce, gas, fees);
        const signed: SignedTx = { hash: keccak256(raw), raw, nonce, gas, fees, block };
        try {
          await hooks.record?.(signed);
        } catch (err) {
          await this.giveBack(nonce, fees);
          throw err;
        }
        const refusal = await this.broadcast(raw);
        if (refusal === null || refusal === 'unknown' || refusal === 'known') return signed;
        await hooks.unrecord?.(signed);
        this.o.logger?.warn({ nonce: nonce.toString(), refusal, deployer: this.address }, 'deployer: the node refused a transaction');
        // The chain or another sender used the nonce: the next one.
        if ((refusal === 'nonce_used' || refusal === 'underpriced') && attempt < NONCE_TRIES) continue;
        if (refusal !== 'nonce_used' && refusal !== 'underpriced') await this.giveBack(nonce, fees);
        throw new TransactionRefused(refusal, { cause: this.lastError });
      }
    });
  }

  /**
   * Sends a transaction and waits until one of its transactions is mined, replacing it with the
   * same nonce and a higher fee when it stays unmined (up to MAX_FEE_GWEI). Returns the receipt.
   */
  async sendAndWait(tx: DeployerTx): Promise<TransactionReceipt> {
    const first = await this.send(tx);
    const attempts: SignedTx[] = [first];
    const deadline = Date.now() + (this.o.waitMs ?? WAIT_MS);
    const pollMs = this.publicClient.pollingInterval;
    let holeCheckedAt = Date.now();
    for (;;) {
      for (const a of [...attempts].reverse()) {
        const mined = await this.publicClient.getTransactionReceipt({ hash: a.hash }).catch((err: unknown) => {
          if (err instanceof TransactionReceiptNotFoundError) return null;
          throw err;
        });
        if (mined !== null) return mined;
      }
      if (Date.now() > deadline) {
        throw new Error(`Transaction ${attempts.at(-1)!.hash} (nonce ${first.nonce}) was not mined within ${this.o.waitMs ?? WAIT_MS} ms; it may still be`);
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
      const last = attempts.at(-1)!;
      const head = await this.publicClient.getBlockNumber({ cacheTime: 0 });
      if (Date.now() - holeCheckedAt >= HOLE_CHECK_MS) {
        holeCheckedAt = Date.now();
        await this.fillHoles(first.nonce, last.fees);
      }
      if (head - last.block < (this.o.replaceAfterBlocks ?? REPLACE_AFTER_BLOCKS)) continue;
      const replaced = await this.replace(tx, last, head);
      if (replaced !== null) attempts.push(replaced);
    }
  }

  /**
   * A transaction long unmined behind nonces nothing fills (the chain's latest count is below its
   * nonce, and the node knows no pending transaction of the account: a reservation whose send was
   * lost, or a dev chain that lost its state while the kept nonce survived) would wait for ever,
   * and every later one with it: each missing nonce gets a zero-value transfer to the deployer.
   */
  private async fillHoles(nonce: bigint, fees: Fees): Promise<void> {
    if (this.keeper === undefined) return;
    const [latest, pending] = await Promise.all([
      this.keeper.latest(),
      this.publicClient.getTransactionCount({ address: this.address, blockTag: 'pending' }).then(BigInt),
    ]);
    if (latest >= nonce || pending > latest) return;
    this.o.logger?.warn({ from: latest.toString(), to: (nonce - 1n).toString(), deployer: this.address }, 'deployer: filling unused nonces below a waiting transaction');
    for (let n = latest; n < nonce; n++) {
      await this.broadcast(await this.sign({ to: this.address, data: '0x', value: 0n }, n, 21_000n, fees));
    }
  }

  /** A replacement of a stuck transaction (same nonce, higher fee), or null when the cap leaves no room (it is sent again as it was). */
  private async replace(tx: DeployerTx, last: SignedTx, head: bigint): Promise<SignedTx | null> {
    const { baseFee, tip } = await this.feesNow();
    const fees = replacementFees(last.fees, baseFee, tip, this.cap());
    if (fees === null) {
      await this.broadcast(last.raw);
      return null;
    }
    const raw = await this.sign(tx, last.nonce, last.gas, fees);
    const refusal = await this.broadcast(raw);
    this.o.logger?.info({ nonce: last.nonce.toString(), maxFeeGwei: gwei(fees.maxFeePerGas), refusal, deployer: this.address }, 'deployer: transaction replaced (same nonce, higher fee)');
    if (refusal === 'funds' || refusal === 'underpriced' || refusal === 'fee_below_base') return null;
    return { hash: keccak256(raw), raw, nonce: last.nonce, gas: last.gas, fees, block: head };
  }

  /** The next nonce: the keeper's (max of kept and the chain's latest count), or the node's pending count without a database. */
  private async reserve(): Promise<bigint> {
    if (this.keeper === undefined) return BigInt(await this.publicClient.getTransactionCount({ address: this.address, blockTag: 'pending' }));
    for (let i = 0; i < 20; i++) {
      const nonce = await this.keeper.reserve(await this.keeper.latest());
      if (nonce !== null) return nonce;
      // Another instance reserved one meanwhile.
      await new Promise((resolve) => setTimeout(resolve, 5 + Math.random() * 20));
    }
    throw new Error('deployer: no nonce could be reserved (the chain_nonces row kept changing)');
  }

  /**
   * Gives a nonce back after an outright refusal. When something was reserved after it (another
   * instance's sweep), giving back is impossible and the hole would hold every later nonce: a
   * zero-value transfer to the deployer itself fills it.
   */
  private async giveBack(nonce: bigint, fees: Fees): Promise<void> {
    if (this.keeper === undefined) return;
    await this.keeper.release(nonce);
    const kept = await this.keeper.kept();
    if (kept === null || kept <= nonce) return;
    const raw = await this.sign({ to: this.address, data: '0x', value: 0n }, nonce, 21_000n, fees);
    const refusal = await this.broadcast(raw);
    this.o.logger?.warn({ nonce: nonce.toString(), refusal, deployer: this.address }, 'deployer: filled a refused nonce with a transfer to itself');
  }

  private lastError: unknown;

  /** Hands a signed transaction to the node: null when taken, else how it was refused. */
  private async broadcast(raw: Hex): Promise<Refusal | null> {
    const { refusal, error } = await sendSigned(this.publicClient, raw);
    if (refusal !== null) this.lastError = error;
    return refusal;
  }

  private sign(tx: DeployerTx, nonce: bigint, gas: bigint, fees: Fees): Promise<Hex> {
    const account = this.walletClient.account;
    const request = {
      type: 'eip1559' as const,
      chainId: this.publicClient.chain.id,
      ...(tx.to === undefined ? {} : { to: tx.to }),
      data: tx.data,
      value: tx.value ?? 0n,
      nonce: Number(nonce),
      gas,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    };
    if (account.type === 'local') return account.signTransaction(request);
    return this.walletClient.signTransaction({ ...request, account, chain: this.publicClient.chain });
  }
}
