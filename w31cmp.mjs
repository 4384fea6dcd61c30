import { DuckDBInstance } from '@duckdb/node-api';
const i = await DuckDBInstance.create(':memory:'); const c = await i.connect();
await c.run(`ATTACH '${process.argv[2]}' AS a (READ_ONLY); ATTACH '${process.argv[3]}' AS b (READ_ONLY)`);
for (const [t, ex] of [['requests',''],['attempts',''],['endpoint_timeseries',''],['events',''],['summary',''],['runs','EXCLUDE (experiment_id, wall_seconds, git_revision)']]) {
  const q = (x, y) => `SELECT count(*) n FROM (SELECT * ${ex} FROM ${x}.${t} EXCEPT ALL SELECT * ${ex} FROM ${y}.${t})`;
  const r1 = (await c.runAndReadAll(q('a','b'))).getRowObjectsJS()[0].n, r2 = (await c.runAndReadAll(q('b','a'))).getRowObjectsJS()[0].n;
  const n = (await c.runAndReadAll(`select count(*) n from a.${t}`)).getRowObjectsJS()[0].n;
  console.log(t, n, 'diff', r1, r2);
}
