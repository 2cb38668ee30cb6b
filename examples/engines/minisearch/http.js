// MiniSearch behind HTTP, the shape of a TypeScript knowledge-base service:
// `node http.js CORPUS_DIR [PORT]` listens on 127.0.0.1 (PORT 0 or none: a free port) and
// prints the port on stdout. POST /search with {"q": "...", "limit": N} answers
// {"results": [{"id": "...", "score": 1.5}, ...]}; anything else is a 404.
const http = require("http");
const { build, search } = require("./index.js");

const index = build(process.argv[2]);
const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/search") {
    res.writeHead(404, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: `no route ${req.method} ${req.url}` }));
    return;
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    let body;
    try {
      const q = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      body = JSON.stringify({ results: search(index, String(q.q), Number(q.limit) || 10) });
      res.writeHead(200, { "Content-Type": "application/json" });
    } catch (e) {
      body = JSON.stringify({ error: String(e.message || e) });
      res.writeHead(400, { "Content-Type": "application/json" });
    }
    res.end(body);
  });
});
server.keepAliveTimeout = 60000;
server.listen(Number(process.argv[3] || 0), "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
