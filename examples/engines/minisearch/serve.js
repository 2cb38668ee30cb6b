// ranklab's command protocol over MiniSearch: `node serve.js CORPUS_DIR [--boost-title N]`
// (--boost-title: MiniSearch's `boost: { title: N }`, a second setting of the same engine).
// One JSON request per stdin line ({"task", "query", "k"}, or {"version": true}); one JSON
// response per stdout line, in order. Logs go to stderr only.
const readline = require("readline");
const { build, search, version } = require("./index.js");

const index = build(process.argv[2]);
const at = process.argv.indexOf("--boost-title");
const options = at > 0 ? { boost: { title: Number(process.argv[at + 1]) } } : {};
console.error(`minisearch: ${index.documentCount} records from ${process.argv[2]}`);
const rl = readline.createInterface({ input: process.stdin, terminal: false });
rl.on("line", (line) => {
  const req = JSON.parse(line);
  if (req.version) {
    process.stdout.write(JSON.stringify({ version: version() }) + "\n");
    return;
  }
  let out;
  try {
    out = { task: req.task, hits: search(index, req.query, req.k, options) };
  } catch (e) {
    out = { task: req.task, error: String(e && e.message ? e.message : e) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
});
