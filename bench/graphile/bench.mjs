// graphile-worker on the same server as pg_tide: N jobs inserted at once
// (graphile_worker.add_jobs, one statement), then one worker process with
// CONCURRENCY slots starts them; prints jobs started per second from the
// worker's start to the last start, and to the last completion.
//   TASK=noop: the task is an empty async function (in-process work);
//   TASK=spawn: the task runs /bin/sh -c true, as a pg_tide launcher does.
// Run by bench/graphile/run.sh (it starts the server); by hand:
//   DATABASE_URL=postgres:///db?host=/sock node bench.mjs 20000 32 noop
import { Logger, run, runMigrations } from "graphile-worker";
import { spawn } from "node:child_process";
import pg from "pg";

const N = Number(process.argv[2] || 20000);
const CONCURRENCY = Number(process.argv[3] || 32);
const TASK = process.argv[4] || "noop";
const connectionString = process.env.DATABASE_URL;

const sh = () =>
  new Promise((resolve, reject) => {
    const p = spawn("/bin/sh", ["-c", "true"], { stdio: "ignore" });
    p.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`exit ${code}`))));
    p.on("error", reject);
  });

// errors only: a log line per job would cost more than the job
const logger = new Logger(() => (level, message) => {
  if (level === "error") console.error(message);
});
await runMigrations({ connectionString, logger });
const client = new pg.Client({ connectionString });
await client.connect();
await client.query("DELETE FROM graphile_worker._private_jobs");
let t = Date.now();
await client.query(
  `SELECT count(*) FROM graphile_worker.add_jobs(ARRAY(
     SELECT ROW('bench', '{}'::json, NULL, NULL, 1, NULL, NULL, NULL)::graphile_worker.job_spec
       FROM generate_series(1, $1)))`,
  [N],
);
console.log(`graphile-worker: inserted ${N} jobs in one add_jobs call in ${Date.now() - t} ms`);

let started = 0;
let done = 0;
let lastStart = 0;
let finish;
const allDone = new Promise((r) => (finish = r));
t = Date.now();
const runner = await run({
  connectionString,
  concurrency: CONCURRENCY,
  noHandleSignals: true,
  pollInterval: 1000,
  logger,
  taskList: {
    bench: async () => {
      started++;
      lastStart = Date.now();
      if (TASK === "spawn") await sh();
      if (++done === N) finish();
    },
  },
});
await allDone;
const end = Date.now();
await runner.stop();
const left = (await client.query("SELECT count(*) FROM graphile_worker._private_jobs")).rows[0].count;
await client.end();
console.log(
  `graphile-worker ${TASK}, concurrency ${CONCURRENCY}: N=${N}: all started after ${((lastStart - t) / 1000).toFixed(2)} s ` +
    `(${Math.round(N / ((lastStart - t) / 1000))} starts/s); all done after ${((end - t) / 1000).toFixed(2)} s ` +
    `(${Math.round(N / ((end - t) / 1000))}/s); jobs left in the table: ${left}`,
);
