//! Response shapes of the engines teams run: where the hits are in a response, and where the id
//! and score are in each hit (JSON pointers, RFC 6901). A configuration names a preset and
//! writes only the URL and the body; `hits`, `id` and `score` override a preset's pointers.

use anyhow::{bail, Result};

/// The pointers of a response shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// The list of hits in the response.
    pub hits: &'static str,
    /// The id in a hit.
    pub id: &'static str,
    /// The score in a hit (None: the engine's order is the ranking).
    pub score: Option<&'static str>,
}

/// Every preset, by name, with the shape it reads (from each engine's search API reference).
pub const PRESETS: [(&str, Shape); 7] = [
    // OpenSearch and Elasticsearch `_search`: {"hits": {"hits": [{"_id", "_score"}]}}.
    (
        "opensearch",
        Shape {
            hits: "/hits/hits",
            id: "/_id",
            score: Some("/_score"),
        },
    ),
    (
        "elasticsearch",
        Shape {
            hits: "/hits/hits",
            id: "/_id",
            score: Some("/_score"),
        },
    ),
    // Solr `/select` with `fl=id,score`: {"response": {"docs": [{"id", "score"}]}}.
    (
        "solr",
        Shape {
            hits: "/response/docs",
            id: "/id",
            score: Some("/score"),
        },
    ),
    // Vespa `/search/`: {"root": {"children": [{"relevance", "fields": {"id"}}]}} (the
    // document's own `id` field, not Vespa's `id:namespace:type::` document id).
    (
        "vespa",
        Shape {
            hits: "/root/children",
            id: "/fields/id",
            score: Some("/relevance"),
        },
    ),
    // Meilisearch `/indexes/{uid}/search` with `"showRankingScore": true`:
    // {"hits": [{"id", "_rankingScore"}]}.
    (
        "meilisearch",
        Shape {
            hits: "/hits",
            id: "/id",
            score: Some("/_rankingScore"),
        },
    ),
    // Typesense `/collections/{c}/documents/search`:
    // {"hits": [{"document": {"id"}, "text_match"}]}.
    (
        "typesense",
        Shape {
            hits: "/hits",
            id: "/document/id",
            score: Some("/text_match"),
        },
    ),
    // Qdrant `/collections/{c}/points/search`: {"result": [{"id", "score"}]}.
    (
        "qdrant",
        Shape {
            hits: "/result",
            id: "/id",
            score: Some("/score"),
        },
    ),
];

/// The preset named `name`, or an error listing them all.
pub fn preset(name: &str) -> Result<Shape> {
    match PRESETS.iter().find(|(n, _)| *n == name) {
        Some((_, s)) => Ok(*s),
        None => bail!(
            "unknown preset {name:?}; presets: {}",
            PRESETS
                .iter()
                .map(|(n, _)| *n)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One response per preset, shaped as in each engine's API reference; every preset finds
    /// the two hits, their ids and scores.
    #[test]
    fn every_preset_reads_its_engines_response() {
        let samples = [
            (
                "opensearch",
                json!({"took": 3, "hits": {"total": {"value": 2}, "max_score": 2.5, "hits": [
                {"_index": "docs", "_id": "a", "_score": 2.5, "_source": {}},
                {"_index": "docs", "_id": "b", "_score": 1.0, "_source": {}}]}}),
            ),
            (
                "elasticsearch",
                json!({"hits": {"hits": [{"_id": "a", "_score": 2.5}, {"_id": "b", "_score": 1.0}]}}),
            ),
            (
                "solr",
                json!({"responseHeader": {"status": 0}, "response": {"numFound": 2, "start": 0, "maxScore": 2.5,
                "docs": [{"id": "a", "score": 2.5}, {"id": "b", "score": 1.0}]}}),
            ),
            (
                "vespa",
                json!({"root": {"id": "toplevel", "relevance": 1.0, "children": [
                {"id": "id:ns:doc::a", "relevance": 2.5, "fields": {"id": "a"}},
                {"id": "id:ns:doc::b", "relevance": 1.0, "fields": {"id": "b"}}]}}),
            ),
            (
                "meilisearch",
                json!({"hits": [{"id": "a", "_rankingScore": 2.5}, {"id": "b", "_rankingScore": 1.0}],
                "query": "q", "processingTimeMs": 1}),
            ),
            (
                "typesense",
                json!({"found": 2, "hits": [{"document": {"id": "a"}, "text_match": 2.5},
                {"document": {"id": "b"}, "text_match": 1.0}]}),
            ),
            (
                "qdrant",
                json!({"result": [{"id": "a", "version": 0, "score": 2.5}, {"id": "b", "version": 0, "score": 1.0}],
                "status": "ok", "time": 0.001}),
            ),
        ];
        assert_eq!(samples.len(), PRESETS.len());
        for (name, body) in samples {
            let s = preset(name).unwrap();
            let hits = body
                .pointer(s.hits)
                .and_then(|h| h.as_array())
                .unwrap_or_else(|| panic!("{name}"));
            let got: Vec<(&str, f64)> = hits
                .iter()
                .map(|h| {
                    (
                        h.pointer(s.id).unwrap().as_str().unwrap(),
                        h.pointer(s.score.unwrap()).unwrap().as_f64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(got, [("a", 2.5), ("b", 1.0)], "{name}");
        }
    }

    #[test]
    fn an_unknown_preset_lists_them_all() {
        let e = preset("algolia").unwrap_err().to_string();
        assert!(
            e.contains("opensearch, elasticsearch, solr, vespa, meilisearch, typesense, qdrant"),
            "{e}"
        );
    }
}
