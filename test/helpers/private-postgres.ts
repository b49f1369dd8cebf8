/**
 * A throwaway PostgreSQL cluster of a test's own (initdb in a temp dir, a free port, trust auth,
 * loopback only), so a test may stop and start the server without touching anyone else's.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { promisify } from 'node:util';
import { freePort, stopAllServices } from '../../scripts/service-launcher.ts';
import { openDatabase, type Database } from '../../src/db/client.ts';

const execFileAsync = promisify(execFile);

const BIN_DIRS = ['/usr/local/bin', '/usr/lib/postgresql/15/bin', '/usr/lib/postgresql/16/bin', '/usr/bin'];

/** The directory holding initdb and pg_ctl, or undefined when PostgreSQL is not installed. */
export function postgresBinDir(): string | undefined {
  return BIN_DIRS.find((d) => existsSync(path.join(d, 'initdb')) && existsSync(path.join(d, 'pg_ctl')));
}

export class PrivatePostgres {
  private constructor(
    private readonly bin: string,
    readonly dir: string,
    readonly port: number,
    /** initdb refuses root: as root, the cluster runs as the postgres user. */
    private readonly asUser: string | undefined,
  ) {}

  get url(): string {
    return `postgresql://postgres@127.0.0.1:${this.port}/postgres`;
  }

  static async create(bin: string): Promise<PrivatePostgres> {
    const dir = mkdtempSync(path.join(tmpdir(), 'splitline-pg-'));
    const root = process.getuid?.() === 0;
    if (root) {
      const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
      const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
      chownSync(dir, uid, gid);
    }
    const cluster = new PrivatePostgres(bin, dir, await freePort(), root ? 'postgres' : undefined);
    try {
      await cluster.run('initdb', ['-D', cluster.dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync']);
    } catch (err) {
      rmSync(dir, { recursive: true, force: true });
      throw err;
    }
    return cluster;
  }

  private get dataDir(): string {
    return path.join(this.dir, 'data');
  }

  /** Starts the server and waits until it accepts connections (the event loop keeps running). */
  async start(): Promise<void> {
    const opts = `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c fsync=off`;
    await this.run('pg_ctl', ['-D', this.dataDir, '-o', opts, '-l', path.join(this.dir, 'server.log'), '-w', '-t', '30', 'start']);
  }

  /** Stops the server the way an operator's fast shutdown does: sessions are cut off. */
  async stop(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    await this.run('pg_ctl', ['-D', this.dataDir, '-m', mode, '-w', '-t', '30', 'stop']);
  }

  /** `pg_ctl restart`: stops the server (cutting sessions off in `fast` mode) and starts it again. */
  async restart(mode: 'fast' | 'immediate' = 'fast'): Promise<void> {
    const opts = `-p ${this.port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=${this.dir} -c fsync=off`;
    await this.run('pg_ctl', ['-D', this.dataDir, '-o', opts, '-l', path.join(this.dir, 'server.log'), '-m', mode, '-w', '-t', '30', 'restart']);
  }

  async running(): Promise<boolean> {
    try {
      await this.run('pg_ctl', ['-D', this.dataDir, 'status']);
      return true;
    } catch (err) {
      // pg_ctl status exits 3 when no server runs.
      if ((err as { code?: unknown }).code === 3) return false;
      throw err;
    }
  }

  /** Stops the server if it runs and removes every file. */
  async destroy(): Promise<void> {
    try {
      if (existsSync(this.dataDir) && (await this.running())) await this.stop('immediate');
    } finally {
      rmSync(this.dir, { recursive: true, force: true });
    }
  }

  private async run(tool: string, args: string[]): Promise<void> {
    const exe = path.join(this.bin, tool);
    const [cmd, argv] = this.asUser ? ['runuser', ['-u', this.asUser, '--', exe, ...args]] : [exe, args];
    await execFileAsync(cmd, argv, { timeout: 40_000, cwd: this.dir });
  }
}

/** What usePrivatePostgres gives the tests of its suite, once its `before` has run. */
export interface PrivateCluster {
  /** The cluster, started. */
  readonly pg: PrivatePostgres;
  /** A pool of two on its `postgres` database, for the test's own reads and set-up. */
  readonly admin: Database;
  /** An empty directory for the service's DATA_DIR. */
  readonly dataDir: string;
}

/**
 * A private cluster for the suite it is called in: `before` creates and starts it, opens the admin
 * database and makes a DATA_DIR named after `dataDirPrefix`; `after` stops the services the tests
 * started (they use the cluster), then closes, destroys and removes everything. The suite skips
 * itself when postgresBinDir() finds no PostgreSQL.
 */
export function usePrivatePostgres(dataDirPrefix: string): PrivateCluster {
  let pg: PrivatePostgres | undefined;
  let admin: Database | undefined;
  let dataDir: string | undefined;
  before(async () => {
    const bin = postgresBinDir();
    if (bin === undefined) throw new Error('initdb/pg_ctl not found: skip the suite when postgresBinDir() is undefined');
    pg = await PrivatePostgres.create(bin);
    await pg.start();
    admin = await openDatabase({ databaseUrl: pg.url, poolSize: 2 });
    dataDir = mkdtempSync(path.join(tmpdir(), dataDirPrefix));
  });
  after(async () => {
    await stopAllServices();
    try {
      await admin?.close();
    } finally {
      await pg?.destroy();
      if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
    }
  });
  const ready = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the private cluster is not set up yet: read it inside a test');
    return value;
  };
  return {
    get pg() {
      return ready(pg);
    },
    get admin() {
      return ready(admin);
    },
    get dataDir() {
      return ready(dataDir);
    },
  };
}
