/**
 * The set of results files the dashboard may read, fixed by the command line: explicit
 * `.duckdb` files or directories of Parquet results (`sim --shard`, read in place), and folders
 * whose `*.duckdb` files are listed afresh on every lookup (so a
 * simulation finished after start-up appears without a restart). Clients name a file only by
 * its catalog name (`default` for `results/default.duckdb`); a name is looked up in this map
 * and never joined to a path, and a folder's entry must resolve (symlinks followed) to a file
 * directly inside that folder — so no request can reach a file outside the results folder.
 */
import { readdirSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { isParquetResultsDir } from '../../simulator/results/parquet-dir.ts';
import { startsLikeDuckDb } from '../../simulator/results/output-shape.ts';
import { notFound, unavailable } from './http-errors.ts';
import { ReadOnlyDb } from './read-only-db.ts';

/** One resolved catalog entry. */
export interface CatalogEntry {
  /** Name clients use: the file name without `.duckdb`, made URL-safe, de-duplicated. */
  name: string;
  /** Real absolute path of the file. */
  path: string;
}

interface OpenDb {
  db: ReadOnlyDb;
  /** Identity of the file when opened: a rewritten file gets a fresh instance. */
  stamp: string;
}

/** How long a replaced instance stays open for queries already running on it, ms. */
const RETIRE_AFTER_MS = 60_000;

function fileStamp(path: string): string {
  const stamp = (p: string) => {
    const s = statSync(p);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  };
  // A Parquet results directory changes where its shards add files: its per-table folders.
  if (statSync(path).isDirectory()) return ['experiments', 'shards', 'runs'].map((sub) => stamp(join(path, sub))).join('|');
  return stamp(path);
}

function safeName(file: string): string {
  const stem = basename(file).replace(/\.duckdb$/i, '');
  const cleaned = stem.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[._-]+/, '');
  return cleaned === '' ? 'results' : cleaned;
}

/**
 * What to do about a results path that does not exist: the `switchyard sim` command of the
 * experiment under `<cwd>/experiments/` whose `output:` (relative to its file) is that path, else
 * the results files that do exist in its folder, else how results files are made.
 */
export function missingResultsHint(abs: string, cwd: string): string {
  const experiments = join(cwd, 'experiments');
  let names: string[] = [];
  try {
    names = readdirSync(experiments).filter((n) => /\.ya?ml$/.test(n)).sort();
  } catch {
    // no experiments folder here
  }
  for (const n of names) {
    const output = /^output:\s*(\S+)\s*$/m.exec(readFileSync(join(experiments, n), 'utf8'))?.[1];
    if (output !== undefined && resolve(experiments, output) === abs) return `run \`npx switchyard sim ${relative(cwd, join(experiments, n))}\` to produce it`;
  }
  let near: string[] = [];
  try {
    near = readdirSync(dirname(abs)).filter((n) => n.toLowerCase().endsWith('.duckdb')).sort();
  } catch {
    // its folder does not exist either
  }
  if (near.length > 0) return `results files in ${relative(cwd, dirname(abs)) || '.'}: ${near.slice(0, 8).join(', ')}${near.length > 8 ? ', …' : ''}`;
  return 'give a results file that `switchyard sim` wrote (the experiment\'s output:, or --output) or a folder of them';
}

/**
 * What to give instead of a file that is not a DuckDB database; for an Arrow trace (by its
 * name) also how to get results from it.
 */
function notResultsHint(abs: string): string {
  const expected = 'expected a .duckdb file that `switchyard sim` wrote, a Parquet results folder (sim --shard), or a folder of .duckdb files';
  if (!/\.(arrow|feather|ipc)$/i.test(abs)) return expected;
  return `${expected}; ${basename(abs)} looks like an Arrow trace: name it as trace: in an experiment, run \`switchyard sim <experiment.yaml>\` and open that experiment's output:`;
}

/** Results files given on the command line, opened read-only on first use. */
export class ResultsCatalog {
  private readonly open = new Map<string, OpenDb>();
  private readonly pending = new Map<string, Promise<OpenDb>>();
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly files: readonly string[],
    private readonly folders: readonly string[],
  ) {}

  /**
   * Builds a catalog from files and folders (relative paths resolve against `cwd`).
   * @throws Error naming the path when one does not exist, is neither a file nor a folder, or is
   *   a file that is not a DuckDB database (with what to give instead).
   */
  static create(paths: readonly string[], cwd = process.cwd()): ResultsCatalog {
    const files: string[] = [];
    const folders: string[] = [];
    for (const p of paths) {
      const abs = resolve(cwd, p);
      let st;
      try {
        st = statSync(abs);
      } catch {
        throw new Error(`${p}: no such file or folder (${missingResultsHint(abs, cwd)})`);
      }
      // A directory of Parquet results (sim --shard) is one entry, read in place.
      if (st.isDirectory() && isParquetResultsDir(abs)) files.push(realpathSync(abs));
      else if (st.isDirectory()) folders.push(realpathSync(abs));
      else if (st.isFile()) {
        // A file named on the command line must be a DuckDB database: an Arrow trace or a YAML
        // file given by mistake is refused here rather than listed as an unreadable entry.
        if (!startsLikeDuckDb(abs)) throw new Error(`${p}: not a DuckDB results file (${notResultsHint(abs)})`);
        files.push(realpathSync(abs));
      } else throw new Error(`${p}: not a file or folder`);
    }
    return new ResultsCatalog(files, folders);
  }

  /**
   * The current entries, in command-line order (folder entries sorted by file name). A file
   * listed twice appears once.
   */
  entries(): CatalogEntry[] {
    const paths: string[] = [...this.files];
    for (const folder of this.folders) {
      let names: string[];
      try {
        names = readdirSync(folder).filter((n) => n.toLowerCase().endsWith('.duckdb')).sort();
      } catch {
        continue; // the folder vanished: it simply lists nothing now
      }
      for (const n of names) {
        try {
          const real = realpathSync(resolve(folder, n));
          // Confinement: a symlink out of the folder is not part of the catalog.
          if (dirname(real) === folder && statSync(real).isFile()) paths.push(real);
        } catch {
          // dangling link or file removed between readdir and stat
        }
      }
    }
    const seen = new Set<string>();
    const used = new Set<string>();
    const out: CatalogEntry[] = [];
    for (const path of paths) {
      if (seen.has(path)) continue;
      seen.add(path);
      const base = safeName(path);
      let name = base;
      for (let i = 2; used.has(name); i++) name = `${base}-${i}`;
      used.add(name);
      out.push({ name, path });
    }
    return out;
  }

  /**
   * The open database of catalog entry `name`, reopened when the file was rewritten.
   * @throws ApiError 404 for a name not in the catalog; 503 when the file cannot be opened
   *   (locked by a writer, not a DuckDB file, removed).
   */
  async db(name: string): Promise<ReadOnlyDb> {
    const entry = this.entries().find((e) => e.name === name);
    if (!entry) throw notFound(`unknown results file '${name}'`);
    let stamp: string;
    try {
      stamp = fileStamp(entry.path);
    } catch {
      throw notFound(`results file '${name}' is gone`);
    }
    const cached = this.open.get(entry.path);
    if (cached && cached.stamp === stamp) return cached.db;
    const key = `${entry.path}@${stamp}`;
    let p = this.pending.get(key);
    if (!p) {
      p = ReadOnlyDb.open(entry.path).then((db) => ({ db, stamp }));
      this.pending.set(key, p);
    }
    let opened: OpenDb;
    try {
      opened = await p;
    } catch (err) {
      throw unavailable(`results file '${name}' cannot be opened: ${firstLine((err as Error).message)}`);
    } finally {
      this.pending.delete(key);
    }
    const previous = this.open.get(entry.path);
    if (previous !== opened) {
      if (previous) this.retire(previous.db);
      this.open.set(entry.path, opened);
    }
    return opened.db;
  }

  /** Closes every open database. */
  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const { db } of this.open.values()) db.close();
    this.open.clear();
  }

  private retire(db: ReadOnlyDb): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      db.close();
    }, RETIRE_AFTER_MS);
    t.unref();
    this.timers.add(t);
  }
}

function firstLine(s: string): string {
  // DuckDB messages name the absolute path; keep the client's view free of server paths.
  return (s.split('\n')[0] ?? s).replace(/"[^"]*\/[^"]*"/g, '"…"').replace(/'[^']*\/[^']*'/g, "'…'");
}
