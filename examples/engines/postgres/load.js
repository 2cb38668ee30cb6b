// load.js CORPUS_DIR: (re)creates table `docs` from ranklab Markdown records, with a stored
// English tsvector over title and body. Connection from the PG* environment variables.
const fs = require("fs");
const path = require("path");
const { Client } = require("pg");

function readRecord(file) {
  const text = fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
  const m = text.match(/^---\n([\s\S]*?)\n---\n?([\s\S]*)$/);
  const front = m ? m[1] : "";
  const field = (name) => {
    const f = front.match(new RegExp(`^${name}:\\s*(.*)$`, "m"));
    return f ? f[1].trim().replace(/^["']|["']$/g, "") : "";
  };
  return { id: field("id") || path.basename(file, ".md"), title: field("title"), body: m ? m[2] : text };
}

async function main() {
  const dir = process.argv[2];
  const records = fs.readdirSync(dir).filter((f) => f.endsWith(".md")).sort()
    .map((f) => readRecord(path.join(dir, f)));
  const db = new Client();
  await db.connect();
  await db.query("DROP TABLE IF EXISTS docs");
  await db.query(`CREATE TABLE docs (
    id text PRIMARY KEY, title text NOT NULL, body text NOT NULL,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || body)) STORED)`);
  for (const r of records) {
    await db.query("INSERT INTO docs (id, title, body) VALUES ($1, $2, $3)", [r.id, r.title, r.body]);
  }
  await db.query("CREATE INDEX docs_tsv ON docs USING gin (tsv)");
  console.log(`load.js: ${records.length} records into docs`);
  await db.end();
}

main().catch((e) => { console.error(`load.js: ${e.message}`); process.exit(2); });
