// Runs each SQL argument in an in-memory DuckDB and prints its rows as one
// JSON array per line. Used by llmrec's tests to read recorded Parquet with
// DuckDB itself.
import { DuckDBInstance } from '@duckdb/node-api';

const inst = await DuckDBInstance.create(':memory:');
const conn = await inst.connect();
for (const sql of process.argv.slice(2)) {
  const reader = await conn.runAndReadAll(sql);
  console.log(JSON.stringify(reader.getRowObjectsJson()));
}
