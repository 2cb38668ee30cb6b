//! Reading a rerank endpoint's response: the yes/no score of `api: completions` and `api: chat`
//! from the answer token's top log-probabilities, the relevance scores of `api: rerank`.
//!
//! Every function reads the response as recorded (`{"status", "body"}`, `{"status", "text"}`
//! or `{"error"}`, see [`crate::external::http::Poster::post`]), so a live response and a
//! recorded one are read by the same code. Whatever cannot give a score is an error in one
//! line naming what is missing; nothing is guessed.
//!
//! Shapes read (the first position of the first choice):
//! - completions (OpenAI's legacy API, llama-cpp-python, vLLM):
//!   `choices[0].logprobs.top_logprobs[0]` is an object `{token: logprob}`;
//! - chat: `choices[0].logprobs.content[0].top_logprobs` is a list of `{token, logprob}`;
//! - rerank: `results` (Cohere, Jina), `data` (Voyage) or the body itself (text-embeddings-
//!   inference) is a list of `{index, relevance_score}` (TEI: `score`), one per document.

use ranklab_engine::rerank::prompt::{answer_class, yes_no_score};
use serde_json::Value;

use crate::external::{cut, snippet};

/// The body of a 2xx JSON response, or why there is none (a request that failed after its
/// retries, an HTTP error, a body that is not JSON).
pub fn body(response: &Value) -> Result<&Value, String> {
    if let Some(e) = response.get("error").and_then(Value::as_str) {
        return Err(format!("{e} (after the retries)"));
    }
    let status = response.get("status").and_then(Value::as_u64).unwrap_or(0);
    if !(200..300).contains(&status) {
        let text = match response.get("text").and_then(Value::as_str) {
            Some(t) => t.to_string(),
            None => response
                .get("body")
                .map(Value::to_string)
                .unwrap_or_default(),
        };
        return Err(format!("HTTP {status}: {}", cut(&text, 200)));
    }
    match (
        response.get("body"),
        response.get("text").and_then(Value::as_str),
    ) {
        (Some(b), _) => Ok(b),
        (None, Some(t)) => Err(format!("the response is not JSON: {}", cut(t, 200))),
        (None, None) => Err("the response has no body".into()),
    }
}

/// The yes/no score of a `completions` response body.
pub fn completions_score(body: &Value) -> Result<f32, String> {
    yes_no(&completions_tokens(body)?)
}

/// The yes/no score of a `chat` response body.
pub fn chat_score(body: &Value) -> Result<f32, String> {
    yes_no(&chat_tokens(body)?)
}

/// The alternatives of a `completions` answer's first token with their log-probabilities
/// (`choices[0].logprobs.top_logprobs[0]`, an object `{token: logprob}`).
pub fn completions_tokens(body: &Value) -> Result<Vec<(&str, f32)>, String> {
    let first = body
        .pointer("/choices/0/logprobs/top_logprobs/0")
        .filter(|v| !v.is_null())
        .ok_or_else(|| no_logprobs(body, "choices[0].logprobs.top_logprobs[0]"))?;
    let top = first.as_object().ok_or_else(|| {
        format!(
            "choices[0].logprobs.top_logprobs[0] is {}, not an object of token: logprob",
            snippet(first)
        )
    })?;
    let mut tokens = Vec::with_capacity(top.len());
    for (t, v) in top {
        tokens.push((t.as_str(), logprob(t, v)?));
    }
    Ok(tokens)
}

/// The alternatives of a `chat` answer's first token with their log-probabilities
/// (`choices[0].logprobs.content[0].top_logprobs`, a list of `{token, logprob}`).
pub fn chat_tokens(body: &Value) -> Result<Vec<(&str, f32)>, String> {
    let at = "choices[0].logprobs.content[0].top_logprobs";
    let top = body
        .pointer("/choices/0/logprobs/content/0/top_logprobs")
        .filter(|v| !v.is_null())
        .ok_or_else(|| no_logprobs(body, at))?;
    let top = top
        .as_array()
        .ok_or_else(|| format!("{at} is {}, not a list", snippet(top)))?;
    let mut tokens = Vec::with_capacity(top.len());
    for alt in top {
        let t = alt
            .get("token")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("an entry of {at} has no \"token\": {}", snippet(alt)))?;
        let v = alt.get("logprob").unwrap_or(&Value::Null);
        tokens.push((t, logprob(t, v)?));
    }
    Ok(tokens)
}

fn no_logprobs(body: &Value, at: &str) -> String {
    format!(
        "the response has no log-probabilities ({at} is missing): {}; ask a server that returns \
         `logprobs` (llama-cpp-python: start it with --logits_all true; OpenAI: chat models)",
        snippet(body)
    )
}

fn logprob(token: &str, v: &Value) -> Result<f32, String> {
    match v.as_f64() {
        // A log-probability is at most 0 (a probability at most 1): a larger one was edited in.
        Some(x) if x > 0.0 && x.is_finite() => Err(format!(
            "token {token:?} has log-probability {x}, above 0 (a probability above 1), which no model gives; if this response comes from a recording, the recording was edited: restore it or record it again"
        )),
        Some(x) if x.is_finite() || x == f64::NEG_INFINITY => Ok(x as f32),
        _ => Err(format!(
            "token {token:?} has log-probability {}, not a number",
            snippet(v)
        )),
    }
}

/// The score of one answer position, or an error saying which of "yes" and "no" is missing
/// among the tokens given.
fn yes_no(tokens: &[(&str, f32)]) -> Result<f32, String> {
    if let Some(s) = yes_no_score(tokens.iter().copied()) {
        return if s.is_finite() {
            Ok(s)
        } else {
            Err(format!(
                "the yes/no score is {s}: a log-probability was -inf"
            ))
        };
    }
    let has = |c: bool| tokens.iter().any(|(t, _)| answer_class(t) == Some(c));
    let missing = match (has(true), has(false)) {
        (false, false) => "neither \"yes\" nor \"no\"",
        (true, false) => "\"yes\" but no \"no\"",
        _ => "\"no\" but no \"yes\"",
    };
    let shown: Vec<&str> = tokens.iter().map(|(t, _)| *t).take(20).collect();
    Err(format!(
        "the answer's {} most likely tokens hold {missing} ({shown:?}); raise `top_logprobs`, or \
         check that the prompt asks for yes or no",
        tokens.len()
    ))
}

/// The relevance scores of a `rerank` response body for `n` documents, in document order:
/// every index from 0 to n-1 exactly once.
pub fn rerank_scores(body: &Value, n: usize) -> Result<Vec<f32>, String> {
    let list = match body {
        Value::Array(a) => a,
        _ => body
            .get("results")
            .or_else(|| body.get("data"))
            .and_then(Value::as_array)
            .ok_or_else(|| {
                format!(
                    "the response has no list `results` (Cohere, Jina), `data` (Voyage) or a \
                     bare list (text-embeddings-inference): {}",
                    snippet(body)
                )
            })?,
    };
    let mut out: Vec<Option<f32>> = vec![None; n];
    for r in list {
        let i = r
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("a result has no integer \"index\": {}", snippet(r)))?
            as usize;
        let s = r
            .get("relevance_score")
            .or_else(|| r.get("score"))
            .and_then(Value::as_f64)
            .ok_or_else(|| {
                format!(
                    "result {i} has no number \"relevance_score\": {}",
                    snippet(r)
                )
            })?;
        let slot = out.get_mut(i).ok_or_else(|| {
            format!(
                "result index {i} is out of range: {n} documents were sent (indexes 0 to {})",
                n.saturating_sub(1)
            )
        })?;
        if slot.is_some() {
            return Err(format!("result index {i} appears twice"));
        }
        if !(s as f32).is_finite() {
            return Err(format!(
                "result {i} has relevance_score {s}, not a finite 32-bit number"
            ));
        }
        *slot = Some(s as f32);
    }
    let missing: Vec<usize> = (0..n).filter(|&i| out[i].is_none()).collect();
    if let Some(first) = missing.first() {
        return Err(format!(
            "{} of {n} documents have no result (first: index {first}); a /rerank service must \
             score every document sent (send no top_n)",
            missing.len()
        ));
    }
    Ok(out.into_iter().map(|s| s.expect("checked above")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every expected score below is a subtraction done by hand from the literals.
    #[test]
    fn completions_and_chat_read_the_first_positions_top_logprobs() {
        let c = json!({"choices": [{"logprobs": {"top_logprobs": [
            {"Yes": -0.25, " no": -1.75, "Maybe": -3.0}, {"x": 0.0}]}}]});
        assert_eq!(completions_score(&c), Ok(1.5));
        let ch = json!({"choices": [{"logprobs": {"content": [{"token": "No", "logprob": -0.5,
            "top_logprobs": [{"token": "No", "logprob": -0.5}, {"token": "yes", "logprob": -2.5},
                             {"token": "YES", "logprob": -2.0}]}]}}]});
        assert_eq!(chat_score(&ch), Ok(-1.5));
    }

    #[test]
    fn a_response_without_logprobs_or_without_yes_and_no_is_an_error_naming_it() {
        let none = json!({"choices": [{"text": "yes", "logprobs": null}]});
        let e = completions_score(&none).unwrap_err();
        assert!(
            e.contains("no log-probabilities") && e.contains("top_logprobs[0]"),
            "{e}"
        );
        let e = chat_score(&json!({"choices": [{"message": {"content": "yes"}}]})).unwrap_err();
        assert!(e.contains("no log-probabilities"), "{e}");
        let neither =
            json!({"choices": [{"logprobs": {"top_logprobs": [{"A": -1.0, "B": -2.0}]}}]});
        let e = completions_score(&neither).unwrap_err();
        assert!(
            e.contains("neither \"yes\" nor \"no\"") && e.contains("top_logprobs"),
            "{e}"
        );
        let only_yes = json!({"choices": [{"logprobs": {"top_logprobs": [{"yes": -1.0}]}}]});
        let e = completions_score(&only_yes).unwrap_err();
        assert!(e.contains("\"yes\" but no \"no\""), "{e}");
    }

    /// Issue 42 case 2: a log-probability above 0 (a probability above 1, which no model
    /// gives: what an edited recording holds) is refused naming the token; 0 itself (a
    /// probability of 1) and minus infinity (a probability of 0) are a model's.
    #[test]
    fn a_log_probability_above_zero_is_refused_naming_the_token() {
        let edited =
            json!({"choices": [{"logprobs": {"top_logprobs": [{"yes": 0.7, "no": -2.0}]}}]});
        let e = completions_score(&edited).unwrap_err();
        assert!(e.contains("\"yes\"") && e.contains("above 0"), "{e}");
        let chat = json!({"choices": [{"logprobs": {"content": [{"top_logprobs": [
            {"token": "no", "logprob": 1e-3}, {"token": "yes", "logprob": -1.0}]}]}}]});
        let e = chat_score(&chat).unwrap_err();
        assert!(e.contains("\"no\"") && e.contains("above 0"), "{e}");
        let certain =
            json!({"choices": [{"logprobs": {"top_logprobs": [{"yes": 0.0, "no": -30.0}]}}]});
        assert!(completions_score(&certain).is_ok());
    }

    #[test]
    fn rerank_reads_cohere_voyage_and_tei_shapes_in_document_order() {
        let cohere = json!({"results": [{"index": 1, "relevance_score": 0.75},
                                        {"index": 0, "relevance_score": 0.25}]});
        assert_eq!(rerank_scores(&cohere, 2), Ok(vec![0.25, 0.75]));
        let voyage = json!({"data": [{"index": 0, "relevance_score": 0.5},
                                     {"index": 1, "relevance_score": 0.125}]});
        assert_eq!(rerank_scores(&voyage, 2), Ok(vec![0.5, 0.125]));
        let tei = json!([{"index": 1, "score": 2.0}, {"index": 0, "score": -1.0}]);
        assert_eq!(rerank_scores(&tei, 2), Ok(vec![-1.0, 2.0]));
    }

    #[test]
    fn rerank_refuses_missing_duplicate_and_out_of_range_indexes() {
        let r = |v: Value| rerank_scores(&json!({ "results": v }), 3).unwrap_err();
        let e =
            r(json!([{"index": 0, "relevance_score": 1.0}, {"index": 2, "relevance_score": 1.0}]));
        assert!(
            e.contains("1 of 3 documents have no result (first: index 1)"),
            "{e}"
        );
        let e = r(
            json!([{"index": 0, "relevance_score": 1.0}, {"index": 0, "relevance_score": 2.0},
                         {"index": 1, "relevance_score": 1.0}]),
        );
        assert!(e.contains("index 0 appears twice"), "{e}");
        let e = r(json!([{"index": 3, "relevance_score": 1.0}]));
        assert!(
            e.contains("index 3 is out of range") && e.contains("0 to 2"),
            "{e}"
        );
        let e = r(json!([{"relevance_score": 1.0}]));
        assert!(e.contains("no integer \"index\""), "{e}");
    }

    #[test]
    fn an_http_error_a_failed_request_and_a_non_json_body_are_errors() {
        let e = body(&json!({"status": 503, "text": "overloaded"})).unwrap_err();
        assert_eq!(e, "HTTP 503: overloaded");
        let e = body(&json!({"error": "request failed: connection refused"})).unwrap_err();
        assert!(
            e.contains("connection refused") && e.contains("after the retries"),
            "{e}"
        );
        let e = body(&json!({"status": 200, "text": "<html>"})).unwrap_err();
        assert!(e.contains("not JSON"), "{e}");
        assert_eq!(body(&json!({"status": 200, "body": [1]})), Ok(&json!([1])));
    }
}
