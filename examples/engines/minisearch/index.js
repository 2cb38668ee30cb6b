// MiniSearch over a folder of ranklab Markdown records (front matter between `---` lines).
// build(dir) indexes every record's title and body; search(index, query, k, options) returns
// MiniSearch's ranking, best first: [{ id, score }] (options: MiniSearch's search options, e.g.
// { boost: { title: 3 } }; none by default). serve.js puts this behind ranklab's command protocol;
// the tests call it directly (a Node one-liner) as the oracle for ranklab's run file.
const fs = require("fs");
const path = require("path");
const MiniSearch = require("minisearch");

function readRecord(file) {
  const text = fs.readFileSync(file, "utf8").replace(/^\uFEFF/, "").replace(/\r\n/g, "\n");
  const m = text.match(/^---\n([\s\S]*?)\n---\n?([\s\S]*)$/);
  const front = m ? m[1] : "";
  const body = m ? m[2] : text;
  const field = (name) => {
    const f = front.match(new RegExp(`^${name}:\\s*(.*)$`, "m"));
    return f ? f[1].trim().replace(/^["']|["']$/g, "") : "";
  };
  return { id: field("id") || path.basename(file, ".md"), title: field("title"), text: body };
}

function build(dir) {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith(".md")).sort();
  const index = new MiniSearch({ fields: ["title", "text"], idField: "id" });
  index.addAll(files.map((f) => readRecord(path.join(dir, f))));
  return index;
}

function search(index, query, k, options = {}) {
  return index.search(query, options).slice(0, k).map((r) => ({ id: r.id, score: r.score }));
}

function version() {
  const pkg = path.join(__dirname, "node_modules", "minisearch", "package.json");
  return `minisearch ${JSON.parse(fs.readFileSync(pkg, "utf8")).version}`;
}

module.exports = { build, search, version };
