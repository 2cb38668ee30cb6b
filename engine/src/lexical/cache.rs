//! The built BM25 index of a corpus, kept in the cache directory so that a later process loads
//! it instead of indexing again (on SciFact, tantivy's build of 5,183 sections is most of a warm
//! BM25 run).
//!
//! One file per (corpus, analyzer): `<dir>/<analyzer>-<key>.bm25`, `key` the sha256 of
//! everything the index is built from — a format tag, tantivy's version string (its version
//! and index format), the analyzer's name and the tokens it makes of a fixed probe text (so a
//! change of analysis changes the key), and every section's text in corpus order with the
//! number of sections of each document. BM25's k1 and b are applied at search time and are not
//! part of the index.
//!
//! The file holds the committed index's files (tantivy's `meta.json`, `.managed.json` and
//! segment files) and ends with a sha256 of everything before it. A load reads the whole file,
//! checks the sha256 and the key, puts the files in a tantivy `RamDirectory` (the bytes checked
//! are the bytes searched), opens it, and checks that it holds every section of the corpus
//! exactly once ([`super::LexicalIndex::from_index`]). A file that fails any check is never
//! used: the index is rebuilt and the file replaced ([`IndexCache::Rebuilt`] says why). Files
//! are written with [`crate::atomic::write`] (temporary file, fsync, rename).

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use tantivy::directory::{Directory, RamDirectory};
use tantivy::Index;

use super::{Analyzer, LexicalIndex, ANALYZER};
use crate::corpus::Corpus;
use crate::Result;

/// Corpora with fewer sections are indexed in memory every time rather than cached, so that the
/// many tiny corpora of tests leave nothing in the cache. At 100, docir (148 sections), brain
/// (181) and every size of docir's corpus-size curve load their index from the cache on a warm
/// run: building them was about 2 % of a warm `ranklab bench --from-recording`'s CPU.
pub const CACHED_MIN_SECTIONS: usize = 100;

const MAGIC: &[u8] = b"ranklab bm25 index 2\n";
const FORMAT: &str = "ranklab-bm25-index-2";
/// The file beside tantivy's that holds each section's number of tokens (u32 LE, by global
/// section number), what [`LexicalIndex::restricted`] needs; checked against tantivy's token
/// totals on load.
const TOKENS: &str = "ranklab.section-tokens";
/// Analyzed to fingerprint the analyzer: possessives, hyphens, dots, digits, case, accents,
/// stop words and stems.
const PROBE: &str = "The Runners' RUNNING quickly re-entered the U.S.A. at 3.14pm; naïve \
                     cafés don't e-mail 1,000,000 x_y Wi-Fi's studies of connected caresses";

/// What [`LexicalIndex::cached`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexCache {
    /// Loaded from the cache file and verified.
    Loaded(PathBuf),
    /// Built (no cache file yet) and stored.
    Built(PathBuf),
    /// The cache file failed a check (why): rebuilt and stored again.
    Rebuilt(PathBuf, String),
    /// Built, but the file could not be written (why); the next process builds again.
    NotStored(PathBuf, String),
}

impl LexicalIndex {
    /// The index of `corpus` under `analyzer`, loaded from its file in `dir` when that file is
    /// there and passes every check, else built and stored there (see the module docs). The
    /// index searches exactly as [`LexicalIndex::build_with`]'s.
    pub fn cached(corpus: &Corpus, analyzer: Analyzer, dir: &Path) -> Result<(Self, IndexCache)> {
        let key = key(corpus, analyzer);
        let path = dir.join(format!(
            "{}-{}.bm25",
            analyzer.name(),
            crate::models::hex(&key)
        ));
        let broken = match std::fs::read(&path) {
            Ok(bytes) => match load(corpus, analyzer, &bytes, &key) {
                Ok(index) => return Ok((index, IndexCache::Loaded(path))),
                Err(why) => Some(why),
            },
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => Some(format!("cannot read it: {e}")),
        };
        let index = Self::build_index(corpus, analyzer)?;
        let built = Self::from_index(corpus, &index, analyzer)?;
        let tokens = built.section_tokens();
        let stored =
            pack(&index, &key, tokens).and_then(|bytes| crate::atomic::write(&path, &bytes));
        let outcome = match (stored, broken) {
            (Err(e), _) => IndexCache::NotStored(path, e.to_string()),
            (Ok(()), Some(why)) => IndexCache::Rebuilt(path, why),
            (Ok(()), None) => IndexCache::Built(path),
        };
        Ok((built, outcome))
    }
}

/// The cache key of `corpus` indexed with `analyzer` (see the module docs).
fn key(corpus: &Corpus, analyzer: Analyzer) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(FORMAT.as_bytes());
    field(tantivy::version_string().as_bytes());
    field(analyzer.name().as_bytes());
    let mut a = analyzer.text_analyzer();
    let mut stream = a.token_stream(PROBE);
    while stream.advance() {
        field(stream.token().text.as_bytes());
    }
    field(&(corpus.docs.len() as u64).to_le_bytes());
    for doc in &corpus.docs {
        field(&(doc.sections.len() as u64).to_le_bytes());
        for s in 0..doc.sections.len() {
            field(doc.section_text(s).as_bytes());
        }
    }
    h.finalize().into()
}

/// The committed index's files, sorted by name, and the section token counts when known (as the
/// file [`TOKENS`]), in the cache file's layout: MAGIC, key, file count (u32 LE), per file name
/// length (u32 LE), name, length (u64 LE), bytes; then the sha256 of all of it.
fn pack(index: &Index, key: &[u8; 32], tokens: Option<&[u32]>) -> Result<Vec<u8>> {
    let dir = index.directory();
    let mut names: Vec<PathBuf> = dir.list_managed_files().into_iter().collect();
    names.push(PathBuf::from("meta.json"));
    names.push(PathBuf::from(".managed.json"));
    names.sort();
    names.dedup();
    let mut files = Vec::new();
    for name in names {
        let is_lock = name.to_string_lossy().ends_with(".lock");
        if is_lock || !dir.exists(&name).map_err(tantivy::TantivyError::from)? {
            continue;
        }
        let bytes = dir
            .atomic_read(&name)
            .map_err(tantivy::TantivyError::from)?;
        files.push((name.to_string_lossy().into_owned(), bytes));
    }
    if let Some(tokens) = tokens {
        let bytes = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
        files.push((TOKENS.to_string(), bytes));
    }
    let mut out = Vec::with_capacity(files.iter().map(|(n, b)| n.len() + b.len() + 12).sum());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(key);
    out.extend_from_slice(&(files.len() as u32).to_le_bytes());
    for (name, bytes) in &files {
        out.extend_from_slice(&(name.len() as u32).to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        out.extend_from_slice(bytes);
    }
    let digest = Sha256::digest(&out);
    out.extend_from_slice(&digest);
    Ok(out)
}

/// The index in a cache file's `bytes`, checked (see the module docs); why not, otherwise.
fn load(
    corpus: &Corpus,
    analyzer: Analyzer,
    bytes: &[u8],
    key: &[u8; 32],
) -> std::result::Result<LexicalIndex, String> {
    let body_len = bytes
        .len()
        .checked_sub(32)
        .ok_or("shorter than its checksum")?;
    let (body, digest) = bytes.split_at(body_len);
    if Sha256::digest(body).as_slice() != digest {
        return Err("its sha256 does not match its content".into());
    }
    let mut r = Reader { bytes: body };
    if r.take(MAGIC.len())? != MAGIC {
        return Err("not a ranklab BM25 index file".into());
    }
    if r.take(32)? != key {
        return Err("built from other sections, analyzer or tantivy version".into());
    }
    let ram = RamDirectory::create();
    let mut tokens = None;
    for _ in 0..r.u32()? {
        let name_len = r.u32()? as usize;
        let name =
            std::str::from_utf8(r.take(name_len)?).map_err(|_| "a file name is not UTF-8")?;
        let len = usize::try_from(r.u64()?).map_err(|_| "a file is too long")?;
        let content = r.take(len)?;
        if name == TOKENS {
            let counts = content.chunks_exact(4);
            if !counts.remainder().is_empty() {
                return Err(format!("{TOKENS}: not a whole number of counts"));
            }
            tokens = Some(counts.map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))));
            continue;
        }
        ram.atomic_write(Path::new(name), content)
            .map_err(|e| format!("{name}: {e}"))?;
    }
    if !r.bytes.is_empty() {
        return Err("bytes after the last file".into());
    }
    let index = Index::open(ram).map_err(|e| format!("tantivy cannot open it: {e}"))?;
    index
        .tokenizers()
        .register(ANALYZER, analyzer.text_analyzer());
    let loaded = LexicalIndex::from_index(corpus, &index, analyzer).map_err(|e| e.to_string())?;
    if let Some(tokens) = tokens {
        loaded.set_section_tokens(tokens.collect())?;
    }
    Ok(loaded)
}

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> std::result::Result<&'a [u8], String> {
        if n > self.bytes.len() {
            return Err("truncated".into());
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u32(&mut self) -> std::result::Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }

    fn u64(&mut self) -> std::result::Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::Document;
    use crate::lexical::Bm25Params;

    fn doc(id: &str, body: &str) -> Document {
        crate::corpus::markdown::parse_record(
            Path::new(&format!("{id}.md")),
            format!("---\nid: {id}\ntitle: {id}\n---\n{body}\n").as_bytes(),
        )
        .unwrap()
    }

    fn corpus(last: &str) -> Corpus {
        Corpus::new(
            "t",
            vec![
                doc(
                    "a",
                    "## One\nledger ledger entries\n## Two\nwebhook retries",
                ),
                doc("b", "## One\nwebhook signing secret\n## Two\nledger"),
                doc("c", "## One\nnothing relevant at all"),
                doc("d", last),
            ],
        )
        .unwrap()
    }

    const QUERIES: [&str; 4] = [
        "ledger",
        "webhook secret",
        "retries of the ledger",
        "absent",
    ];

    /// Every query's hits from `index`, beside those of an index built in memory (the oracle:
    /// tantivy's build of the same sections, never written or read back).
    fn assert_searches_like_a_fresh_build(index: &LexicalIndex, corpus: &Corpus, a: Analyzer) {
        let fresh = LexicalIndex::build_with(corpus, a).unwrap();
        let p = Bm25Params {
            analyzer: a,
            ..Bm25Params::default()
        };
        for q in QUERIES {
            assert_eq!(
                index.search(corpus, q, 10, p).unwrap(),
                fresh.search(corpus, q, 10, p).unwrap(),
                "{q}"
            );
        }
        assert!(!fresh.search(corpus, "ledger", 10, p).unwrap().is_empty());
    }

    #[test]
    fn the_first_process_builds_and_stores_the_next_loads_the_same_index() {
        let dir = tempfile::tempdir().unwrap();
        let c = corpus("## One\nwebhook ledger");
        for a in [Analyzer::English, Analyzer::Lucene] {
            let (built, outcome) = LexicalIndex::cached(&c, a, dir.path()).unwrap();
            let IndexCache::Built(path) = outcome else {
                panic!("{outcome:?}")
            };
            assert!(path.exists());
            assert_searches_like_a_fresh_build(&built, &c, a);
            let (loaded, outcome) = LexicalIndex::cached(&c, a, dir.path()).unwrap();
            assert_eq!(outcome, IndexCache::Loaded(path));
            assert_searches_like_a_fresh_build(&loaded, &c, a);
            // The file brought each section's token count (set on load, not counted), and a
            // restriction of the loaded index searches as the part's own index.
            assert!(loaded.tokens.get().is_some_and(Option::is_some));
            let part = c.subset(|i| i != 1).unwrap();
            let restricted = loaded.restricted(&c, &part).unwrap();
            assert_searches_like_a_fresh_build(&restricted, &part, a);
        }
        // One file per analyzer.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn another_corpus_text_gets_another_file_never_the_old_index() {
        let dir = tempfile::tempdir().unwrap();
        let one = corpus("## One\nwebhook ledger");
        let two = corpus("## One\nwebhook ledger ledger");
        let (_, first) = LexicalIndex::cached(&one, Analyzer::English, dir.path()).unwrap();
        let (index, second) = LexicalIndex::cached(&two, Analyzer::English, dir.path()).unwrap();
        assert!(matches!(second, IndexCache::Built(_)), "{second:?}");
        assert_ne!(first, second);
        assert_searches_like_a_fresh_build(&index, &two, Analyzer::English);
    }

    #[test]
    fn a_damaged_file_is_rebuilt_never_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let c = corpus("## One\nwebhook ledger");
        let (_, outcome) = LexicalIndex::cached(&c, Analyzer::English, dir.path()).unwrap();
        let IndexCache::Built(path) = outcome else {
            panic!("{outcome:?}")
        };
        let good = std::fs::read(&path).unwrap();
        let damages: Vec<(Vec<u8>, &str)> = vec![
            (
                {
                    let mut b = good.clone();
                    let mid = b.len() / 2;
                    b[mid] ^= 1;
                    b
                },
                "sha256",
            ),
            (good[..good.len() - 100].to_vec(), "sha256"),
            (Vec::new(), "shorter than its checksum"),
            (
                {
                    // A consistent file (checksum recomputed) of the wrong key.
                    let mut b = good[..good.len() - 32].to_vec();
                    b[MAGIC.len()] ^= 1;
                    let d = Sha256::digest(&b);
                    b.extend_from_slice(&d);
                    b
                },
                "built from other",
            ),
        ];
        for (bytes, why) in damages {
            std::fs::write(&path, &bytes).unwrap();
            let (index, outcome) = LexicalIndex::cached(&c, Analyzer::English, dir.path()).unwrap();
            match &outcome {
                IndexCache::Rebuilt(p, w) => {
                    assert_eq!(p, &path);
                    assert!(w.contains(why), "{w} should say {why}");
                }
                other => panic!("{other:?}"),
            }
            assert_searches_like_a_fresh_build(&index, &c, Analyzer::English);
            // The file was replaced by a good one (not byte-equal: segment names are random).
            let (_, again) = LexicalIndex::cached(&c, Analyzer::English, dir.path()).unwrap();
            assert_eq!(again, IndexCache::Loaded(path.clone()));
        }
    }

    #[test]
    fn an_index_of_other_sections_under_the_right_key_is_refused() {
        // The key is right but the files inside index a corpus with fewer sections: the
        // post-open check refuses it.
        let dir = tempfile::tempdir().unwrap();
        let small = Corpus::new("t", vec![doc("a", "## One\nledger")]).unwrap();
        let c = corpus("## One\nwebhook ledger");
        let other = LexicalIndex::build_index(&small, Analyzer::English).unwrap();
        let k = key(&c, Analyzer::English);
        let bytes = pack(&other, &k, None).unwrap();
        let err = match load(&c, Analyzer::English, &bytes, &k) {
            Err(e) => e,
            Ok(_) => panic!("an index of another corpus was accepted"),
        };
        assert!(err.contains("sections"), "{err}");
        let _ = dir;
    }

    #[test]
    fn section_token_counts_that_do_not_add_up_are_refused() {
        // A file whose sha256 and key are right but whose token counts are not the index's
        // (one token too many, or a section missing): refused on load.
        let c = corpus("## One\nwebhook ledger");
        let index = LexicalIndex::build_index(&c, Analyzer::English).unwrap();
        let counted = LexicalIndex::from_index(&c, &index, Analyzer::English)
            .unwrap()
            .section_tokens()
            .unwrap()
            .to_vec();
        let k = key(&c, Analyzer::English);
        let good = pack(&index, &k, Some(&counted)).unwrap();
        assert!(load(&c, Analyzer::English, &good, &k).is_ok());
        let mut more = counted.clone();
        more[0] += 1;
        let mut short = counted.clone();
        short.pop();
        for (tokens, why) in [(more, "add up to"), (short, "token counts for")] {
            let bytes = pack(&index, &k, Some(&tokens)).unwrap();
            let err = match load(&c, Analyzer::English, &bytes, &k) {
                Err(e) => e,
                Ok(_) => panic!("token counts {tokens:?} were accepted"),
            };
            assert!(err.contains(why), "{err}");
        }
    }
}
