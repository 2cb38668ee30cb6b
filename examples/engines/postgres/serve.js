// ranklab's command protocol over PostgreSQL full-text search: `node serve.js [--match any|all]`.
// Connection from the PG* environment variables (start.sh prints the port). Each request
// {"task", "query", "k"} runs SEARCH below; {"version": true} answers the server's version.
// Requests are answered one at a time, in order. Logs go to stderr only.
const readline = require("readline");
const { Client } = require("pg");

// The engine's ranking: websearch_to_tsquery (the syntax of a search box), ranked by
// ts_rank_cd (cover density), ties by id descending (C collation: byte order).
// --match all keeps websearch_to_tsquery's AND of the terms (a record must hold every word:
// most natural-language task queries then match nothing); --match any (the default) ORs them.
const MATCH = process.argv.includes("--match") ? process.argv[process.argv.indexOf("--match") + 1] : "any";
if (MATCH !== "any" && MATCH !== "all") {
  console.error(`serve.js: --match ${MATCH}: write any or all`);
  process.exit(2);
}
const QUERY = MATCH === "all"
  ? "websearch_to_tsquery('english', $1)"
  : "to_tsquery('simple', replace(websearch_to_tsquery('english', $1)::text, ' & ', ' | '))";
const SEARCH = `SELECT id, ts_rank_cd(tsv, q) AS score
  FROM docs, ${QUERY} AS q
  WHERE tsv @@ q ORDER BY score DESC, id DESC LIMIT $2`;

async function answer(db, req) {
  if (req.version) {
    const r = await db.query("SHOW server_version");
    return { version: `PostgreSQL ${r.rows[0].server_version}` };
  }
  try {
    const r = await db.query(SEARCH, [req.query, req.k]);
    return { task: req.task, hits: r.rows.map((row) => ({ id: row.id, score: row.score })) };
  } catch (e) {
    return { task: req.task, error: e.message };
  }
}

async function main() {
  const db = new Client();
  await db.connect();
  const rl = readline.createInterface({ input: process.stdin, terminal: false });
  for await (const line of rl) {
    process.stdout.write(JSON.stringify(await answer(db, JSON.parse(line))) + "\n");
  }
  await db.end();
}

main().catch((e) => { console.error(`serve.js: ${e.message}`); process.exit(2); });
