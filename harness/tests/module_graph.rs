//! No circle between modules: in each crate (`engine/src`, `harness/src`), the top-level modules
//! referenced from each file (`crate::x`, `use crate::{x, y::z}`, and `super::x` where it reaches
//! the crate root) draw a graph whose edges all point one way. A cycle (two modules importing
//! each other, or a longer ring) fails the test, naming the modules and a file and line behind
//! each edge.
//!
//! And no import upward: the harness's modules are in layers ([`LAYERS`], lowest first), and a
//! module may import only from its own layer or a lower one (cmd → suite_run → report → paired →
//! replay → external → suite → foundations → the evaluator). A module in no layer fails too,
//! so a new module is placed on purpose.
//!
//! The graph is read as `../shared/checks/house` reads it (a file belongs to the top-level module
//! of its path; `lib.rs`, `main.rs` and `cli.rs` are the roots and are not nodes; lines that
//! start with `//` are comments), with grouped imports and `super::` paths read as well. The
//! finder itself is checked on small fixtures written here, with and without a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Where an edge was seen: file (relative to the crate's `src/`) and 1-based line.
type Site = (String, usize);

/// The edges of one crate: module -> referenced module -> the first place it is referenced.
type Graph = BTreeMap<String, BTreeMap<String, Site>>;

/// The module path of a file under `src/` (`report/plots/tasks.rs` -> `report::plots::tasks`,
/// `report/mod.rs` -> `report`).
fn module_path(rel: &str) -> Vec<String> {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut parts: Vec<String> = rel.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Whether `c` can be part of a Rust identifier.
fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The leading identifier of `s`.
fn ident(s: &str) -> &str {
    let end = s.find(|c: char| !ident_char(c)).unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of each item of a `{...}` group starting at `s` (just after the `{`),
/// nested groups skipped.
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut at_item = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if at_item && depth == 0 && !c.is_whitespace() => {
                at_item = false;
                let name = ident(&s[i..]);
                if !name.is_empty() && name != "self" {
                    heads.push(name.to_string());
                }
            }
            _ => {}
        }
    }
    heads
}

/// The top-level modules `code` (the text of the file at `module`) references, with their
/// lines: `crate::x`, `crate::{x, y}`, and `super::...::x` when the `super`s reach the root.
fn references(module: &[String], code: &str) -> Vec<(String, usize)> {
    // Comment lines are blanked (not removed), so line numbers stay those of the file.
    let text: String = code
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut out = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        if text[..at].ends_with(|c: char| ident_char(c)) {
            continue; // `my_crate::`, not `crate::`
        }
        let rest = &text[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            out.extend(group_heads(group).into_iter().map(|m| (m, line_of(at))));
        } else {
            out.push((ident(rest).to_string(), line_of(at)));
        }
    }
    for (at, _) in text.match_indices("super::") {
        let before = &text[..at];
        if before.ends_with("super::") || before.ends_with(|c: char| ident_char(c)) {
            continue; // counted from the first `super` of the chain
        }
        let mut rest = &text[at..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        // `super` from the module `a::b::c` is `a::b`: three of them reach the root, where the
        // next segment names a top-level module (fewer stay inside `a`; more do not compile).
        if ups != module.len() {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            out.extend(group_heads(group).into_iter().map(|m| (m, line_of(at))));
        } else {
            out.push((ident(rest).to_string(), line_of(at)));
        }
    }
    out.retain(|(m, _)| !m.is_empty());
    out
}

/// The graph of a crate given as `(path under src/, text)` pairs.
fn graph<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Graph {
    let mut g = Graph::new();
    for (rel, code) in files {
        let module = module_path(rel);
        let top = &module[0];
        if ["lib", "main", "cli"].contains(&top.as_str()) {
            continue;
        }
        for (to, line) in references(&module, code) {
            if to != *top {
                g.entry(top.clone())
                    .or_default()
                    .entry(to)
                    .or_insert((rel.to_string(), line));
            }
        }
    }
    g
}

/// Every cycle of the graph, one per strongly connected component of more than one module
/// (Tarjan), as a ring of modules `a -> b -> ... -> a` found by a walk inside the component.
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        g: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        components: Vec<BTreeSet<&'g str>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            let g = self.g;
            for w in g.get(v).into_iter().flat_map(|e| e.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(lw);
                } else if self.on_stack.contains(w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).expect("visited");
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = BTreeSet::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.insert(w);
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    self.components.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    // In a strongly connected component every module reaches every other: the shortest ring
    // through its first module (breadth first, neighbours in name order).
    let mut out = Vec::new();
    for c in &t.components {
        let start = *c.iter().next().expect("non-empty");
        let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut last = None;
        while let Some(v) = queue.pop_front() {
            let next = g[v].keys().map(String::as_str).filter(|w| c.contains(w));
            for w in next {
                if w == start {
                    last = Some(v);
                    break;
                }
                if !parent.contains_key(w) {
                    parent.insert(w, v);
                    queue.push_back(w);
                }
            }
            if last.is_some() {
                break;
            }
        }
        let mut path = Vec::new();
        let mut at = last.expect("a strongly connected component has a ring through each module");
        while at != start {
            path.push(at.to_string());
            at = parent[at];
        }
        path.reverse();
        let mut ring = vec![start.to_string()];
        ring.extend(path);
        ring.push(start.to_string());
        out.push(ring);
    }
    out
}

/// The cycles of `g` as a message: each ring, and the file and line behind each of its edges.
fn describe(g: &Graph, rings: &[Vec<String>]) -> String {
    let mut s = String::new();
    for ring in rings {
        s.push_str(&format!("  cycle: {}\n", ring.join(" -> ")));
        for pair in ring.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let how = match g.get(a).and_then(|e| e.get(b)) {
                Some((file, line)) => format!("{file}:{line}"),
                None => "(through the component)".to_string(),
            };
            s.push_str(&format!("    {a} -> {b}: {how}\n"));
        }
    }
    s
}

/// Every `.rs` file under `dir`, as (path relative to `dir` with `/`, text).
fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut todo: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let entries =
            std::fs::read_dir(&d).unwrap_or_else(|e| panic!("cannot list {}: {e}", d.display()));
        for entry in entries {
            let p = entry.expect("a directory entry").path();
            if p.is_dir() {
                todo.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let rel = p.strip_prefix(dir).expect("under dir");
                let rel = rel
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                let text = std::fs::read_to_string(&p)
                    .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
                out.push((rel, text));
            }
        }
    }
    out.sort();
    out
}

/// The graph of the crate whose sources are in `src`.
fn crate_graph(src: &Path) -> Graph {
    let files = sources(src);
    assert!(
        files.len() > 5,
        "{}: only {} source files found; is this the crate's src/?",
        src.display(),
        files.len()
    );
    graph(files.iter().map(|(p, t)| (p.as_str(), t.as_str())))
}

/// The crate's source folders: the engine's and the harness's.
fn roots() -> [(&'static str, PathBuf); 2] {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        ("engine/src", harness.join("../engine/src")),
        ("harness/src", harness.join("src")),
    ]
}

/// The harness's layers, lowest first: a module imports only from its own layer or lower ones.
/// `compare`, `metrics`, `stats` and `trec` are the evaluator crate's, re-exported.
const LAYERS: [(&str, &[&str]); 9] = [
    ("evaluator", &["compare", "metrics", "stats", "trec"]),
    (
        "foundations",
        &[
            "root",
            "exit",
            "progress",
            "judgments",
            "engine_spec",
            "finetune",
            "cluster",
            "stats_cache",
        ],
    ),
    ("suites", &["suite"]),
    ("engines", &["external"]),
    ("replay", &["replay"]),
    ("checks", &["paired"]),
    ("rendering", &["report"]),
    ("work", &["suite_run", "gate", "tune", "pool", "judge"]),
    ("interface", &["cmd", "help_formats"]),
];

/// The edges of `g` that point from a lower layer to a higher one, and its modules in no layer,
/// each as a line naming the file and line behind it.
fn layer_violations(g: &Graph, layers: &[(&str, &[&str])]) -> Vec<String> {
    let layer_of = |m: &str| layers.iter().position(|(_, ms)| ms.contains(&m));
    let mut out = Vec::new();
    for (from, edges) in g {
        let Some(lf) = layer_of(from) else {
            out.push(format!("{from}: in no layer (add it to LAYERS)"));
            continue;
        };
        // `super::Exit` from a top-level module names an item of the crate root, not a module:
        // a target counts when it is a module, one placed in a layer or importing something.
        let modules = edges
            .iter()
            .filter(|(to, _)| layer_of(to).is_some() || g.contains_key(to.as_str()));
        for (to, (file, line)) in modules {
            match layer_of(to) {
                Some(lt) if lt > lf => out.push(format!(
                    "{from} ({}) imports {to} ({}), a higher layer, at {file}:{line}",
                    layers[lf].0, layers[lt].0
                )),
                Some(_) => {}
                None => out.push(format!("{to}: in no layer (add it to LAYERS)")),
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The property: no harness module imports from a higher layer.
#[test]
fn no_module_imports_from_a_higher_layer() {
    let [_, (_, harness)] = roots();
    let bad = layer_violations(&crate_graph(&harness), &LAYERS);
    assert!(
        bad.is_empty(),
        "imports against the layer order (move the type or function down, or give the lower \
         module its own type):\n{}",
        bad.join("\n")
    );
}

/// The layer check on fixtures: an upward import and a module in no layer are reported; the
/// same tree with the edge pointing down is not.
#[test]
fn the_layer_check_reports_an_upward_import_and_an_unplaced_module() {
    let layers: [(&str, &[&str]); 2] = [("low", &["suite"]), ("high", &["report"])];
    let up = graph([
        ("suite.rs", "use crate::report::x;\n"),
        ("report.rs", "fn f() {}\n"),
        ("stray.rs", "use crate::suite::y;\n"),
    ]);
    let bad = layer_violations(&up, &layers);
    assert_eq!(
        bad,
        [
            "stray: in no layer (add it to LAYERS)".to_string(),
            "suite (low) imports report (high), a higher layer, at suite.rs:1".to_string(),
        ]
    );
    let down = graph([
        ("suite.rs", "fn f() {}\n"),
        ("report.rs", "use crate::suite::x;\n"),
    ]);
    assert!(layer_violations(&down, &layers).is_empty());
}

/// The property: neither crate has a cycle between its top-level modules.
#[test]
fn no_two_modules_import_each_other_directly_or_around_a_ring() {
    let mut failures = String::new();
    for (name, src) in roots() {
        let g = crate_graph(&src);
        let rings = cycles(&g);
        if !rings.is_empty() {
            failures.push_str(&format!("{name}:\n{}", describe(&g, &rings)));
        }
    }
    assert!(
        failures.is_empty(),
        "modules import each other (make the edge point one way: move the type or function \
         to the lower module, or give the lower module its own type):\n{failures}"
    );
}

/// The graph read from the real tree holds edges known by hand from the code (so an empty graph
/// cannot pass the test above): the replay runs the external engines, the report renders a
/// replay, and the suite parses the external engines' `engine:` from the leaf `engine_spec`.
#[test]
fn the_graph_of_the_tree_has_the_edges_the_code_makes() {
    let [(_, engine), (_, harness)] = roots();
    let h = crate_graph(&harness);
    for (a, b) in [
        ("replay", "external"),
        ("report", "replay"),
        ("suite", "engine_spec"),
        ("external", "suite"),
        ("cmd", "report"),
    ] {
        assert!(
            h.get(a).is_some_and(|e| e.contains_key(b)),
            "harness/src: no edge {a} -> {b} found; graph: {h:?}"
        );
    }
    assert!(
        !h.contains_key("engine_spec"),
        "engine_spec is a leaf, yet imports {:?}",
        h.get("engine_spec")
    );
    let e = crate_graph(&engine);
    assert!(
        e.get("lexical").is_some_and(|m| m.contains_key("ranking")),
        "engine/src: no edge lexical -> ranking found; graph: {e:?}"
    );
}

/// The reading of one file, against references written by hand: plain and grouped `crate::`
/// paths, `super::` from a top-level module and from two levels down, with comment lines and
/// identifiers ending in `crate` ignored.
#[test]
fn references_are_read_from_paths_groups_and_supers_and_not_from_comments() {
    let code = "\
use crate::alpha::A;
use crate::{beta::B, gamma, self as _};
// use crate::commented::C;
/// [`crate::doc_only`]
fn f() { my_crate::not_this(); crate::delta::g(); }
use super::epsilon::E;
use super::super::zeta::Z;
";
    let names = |module: &[&str]| -> Vec<(String, usize)> {
        let m: Vec<String> = module.iter().map(|s| s.to_string()).collect();
        references(&m, code)
    };
    let own = |v: &[(&str, usize)]| -> Vec<(String, usize)> {
        v.iter().map(|(m, l)| (m.to_string(), *l)).collect()
    };
    let crate_paths = [("alpha", 1), ("beta", 2), ("gamma", 2), ("delta", 5)];
    // From a top-level module (`top.rs`): one `super` reaches the root, so `epsilon` is a
    // module of the crate (`super::super` from there would not compile).
    assert_eq!(
        names(&["top"]),
        own(&[crate_paths.as_slice(), &[("epsilon", 6)]].concat())
    );
    // From `top::sub`: `super::super` reaches the root, `super` is `top`.
    assert_eq!(
        names(&["top", "sub"]),
        own(&[crate_paths.as_slice(), &[("zeta", 7)]].concat())
    );
    // From `top::sub::leaf`: `super` is `top::sub`, `super::super` is `top`; neither reaches
    // the root.
    assert_eq!(names(&["top", "sub", "leaf"]), own(&crate_paths));
    assert_eq!(
        module_path("report/plots/tasks.rs"),
        ["report", "plots", "tasks"]
    );
    assert_eq!(module_path("report/mod.rs"), ["report"]);
}

/// The finder fails on a cycle and passes without one, on fixtures whose graphs are known by
/// hand: a ring of three (a -> b -> c -> a, through a grouped import and a `super` path), a
/// pair importing each other, and the same trees with the closing edge removed or commented
/// out.
#[test]
fn the_finder_reports_a_ring_and_a_pair_and_nothing_when_the_edges_point_one_way() {
    let ring = [
        ("a.rs", "use crate::b::Thing;\n"),
        ("b/mod.rs", "use crate::{c::Other, d};\n"),
        ("b/inner.rs", "use super::super::d::More;\n"),
        ("c.rs", "fn f() -> crate::a::Back { todo!() }\n"),
        ("d.rs", "pub struct More;\n"),
        ("lib.rs", "use crate::a; use crate::d;\n"),
    ];
    let g = graph(ring);
    let rings = cycles(&g);
    assert_eq!(rings, [["a", "b", "c", "a"]], "{g:?}");
    let message = describe(&g, &rings);
    assert!(message.contains("cycle: a -> b -> c -> a"), "{message}");
    assert!(message.contains("c -> a: c.rs:1"), "{message}");
    // `lib.rs` is the root, not a node: its imports make no edge.
    assert!(!g.contains_key("lib"), "{g:?}");

    // The closing edge commented out: no cycle.
    let mut open = ring;
    open[3] = ("c.rs", "// fn f() -> crate::a::Back\n");
    assert_eq!(cycles(&graph(open)), Vec::<Vec<String>>::new());

    // Two modules importing each other, one through `super` from its top-level file.
    let pair = [
        ("suite.rs", "use crate::report::Names;\n"),
        ("report/mod.rs", "use super::suite::Suite;\n"),
        ("report/table.rs", "use crate::report::x;\n"),
    ];
    assert_eq!(cycles(&graph(pair)), [["report", "suite", "report"]]);
    // One way only: none.
    let one_way = [
        ("suite.rs", "pub struct Suite;\n"),
        ("report/mod.rs", "use super::suite::Suite;\n"),
    ];
    assert_eq!(cycles(&graph(one_way)), Vec::<Vec<String>>::new());
}
