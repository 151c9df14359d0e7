// nostr-outbox/sqlite: a storage adapter (see storage-adapter.d.ts) on a SQLite database:
// Bun's `bun:sqlite` `Database` or Node's / Deno's `node:sqlite` `DatabaseSync`. Nothing is
// evicted; a commit is one `BEGIN IMMEDIATE … COMMIT` transaction, so a crash (of the
// process or, with `synchronous=FULL`, SQLite's default, of the machine) keeps it whole or
// not at all. The file outlives redeploys only where the disk does (a volume, not a
// container's ephemeral layer).
//
// One table per adapter: `(key TEXT PRIMARY KEY, value TEXT NOT NULL, version INTEGER NOT
// NULL)`, and a one-row table `<table>_version` with the last version given (versions never
// repeat, even after a delete). The adapter leaves the journal mode alone: WAL is the
// user's choice (`PRAGMA journal_mode=WAL` lets readers in other connections run during a
// commit; it is a property of the file, and on a network file system it does not work).
// It sets `PRAGMA busy_timeout` (default 5000 ms) on the connection, so a commit waits for
// another connection's write instead of failing at once.

const GET_MANY_CHUNK = 500; // bound parameters per statement (SQLite allows 32766)

/**
 * A storage adapter on a SQLite database. The calls are synchronous underneath (both
 * drivers are): each answer is a resolved promise.
 * @param {object} db a `bun:sqlite` `Database` or a `node:sqlite` `DatabaseSync`
 * @param {{ table?: string, busyTimeout?: number }} [options] `table` (default
 *   "nostr_outbox"; letters, digits and `_`): separates several adapters in one file.
 */
export function sqliteStorage(db, options = {}) {
  const table = options.table ?? "nostr_outbox";
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(table)) throw new TypeError(`sqliteStorage: table name ${JSON.stringify(table)}: use letters, digits and _`);
  const busyTimeout = options.busyTimeout ?? 5000;
  const t = `"${table}"`;
  const counter = `"${table}_version"`;
  db.exec(`PRAGMA busy_timeout = ${Math.max(0, Math.floor(busyTimeout))}`);
  db.exec(`CREATE TABLE IF NOT EXISTS ${t} (key TEXT PRIMARY KEY, value TEXT NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID`);
  db.exec(`CREATE TABLE IF NOT EXISTS ${counter} (id INTEGER PRIMARY KEY CHECK (id = 0), last INTEGER NOT NULL)`);
  db.exec(`INSERT OR IGNORE INTO ${counter} (id, last) VALUES (0, 0)`);

  const statements = new Map();
  const prepare = (sql) => {
    let s = statements.get(sql);
    if (!s) {
      s = db.prepare(sql);
      statements.set(sql, s);
    }
    return s;
  };
  const run = (sql, ...params) => prepare(sql).run(...params);
  const select = (sql, ...params) => prepare(sql).all(...params);

  return {
    async getMany(keys) {
      const found = new Map();
      for (let i = 0; i < keys.length; i += GET_MANY_CHUNK) {
        const chunk = keys.slice(i, i + GET_MANY_CHUNK);
        const rows = select(`SELECT key, value, version FROM ${t} WHERE key IN (${chunk.map(() => "?").join(",")})`, ...chunk);
        for (const r of rows) found.set(r.key, { value: r.value, version: String(r.version) });
      }
      return keys.map((k) => found.get(k) ?? null);
    },
    async list({ start, end, limit, reverse }) {
      if (limit <= 0 || !(start < end)) return [];
      const rows = select(`SELECT key, value, version FROM ${t} WHERE key >= ? AND key < ? ORDER BY key ${reverse ? "DESC" : "ASC"} LIMIT ?`, start, end, limit);
      return rows.map((r) => ({ key: r.key, value: r.value, version: String(r.version) }));
    },
    async commit({ checks, puts, deletes }) {
      for (const { key, value } of puts) {
        if (typeof value !== "string") throw new TypeError(`sqliteStorage: the value of ${key} is not a string`);
      }
      run("BEGIN IMMEDIATE");
      try {
        for (const { key, version } of checks) {
          const rows = select(`SELECT version FROM ${t} WHERE key = ?`, key);
          const current = rows.length ? String(rows[0].version) : null;
          if (current !== version) {
            run("ROLLBACK");
            return false;
          }
        }
        if (puts.length) {
          let last = Number(select(`SELECT last FROM ${counter} WHERE id = 0`)[0].last);
          for (const { key, value } of puts) {
            run(`INSERT INTO ${t} (key, value, version) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, version = excluded.version`, key, value, ++last);
          }
          run(`UPDATE ${counter} SET last = ? WHERE id = 0`, last);
        }
        for (const key of deletes) run(`DELETE FROM ${t} WHERE key = ?`, key);
        run("COMMIT");
        return true;
      } catch (err) {
        try {
          run("ROLLBACK");
        } catch {
          // SQLite rolled back already (some errors end the transaction themselves).
        }
        throw err;
      }
    },
  };
}
