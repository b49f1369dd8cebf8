/**
 * Creates an embedded database in a process of its own: `node pglite-create.js <dir> <migrations>`
 * runs PGlite's initdb in <dir> and applies the migrations, then exits. Started by openDatabase()
 * (client.ts) for a DATA_DIR that holds no database yet.
 *
 * Why a process: initdb grows PGlite's WebAssembly memory to about 600 MB, and WebAssembly memory
 * never shrinks, so a service that created its database in-process kept ~890 MB resident for its
 * whole life. Opening the finished directory afterwards takes about 290 MB.
 */
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';

const [dir, migrationsFolder] = process.argv.slice(2);
if (dir === undefined || migrationsFolder === undefined) {
  process.stderr.write('usage: pglite-create <dir> <migrations-dir>\n');
  process.exit(2);
}
const client = await PGlite.create(dir);
try {
  await migrate(drizzle(client), { migrationsFolder });
} finally {
  await client.close();
}
