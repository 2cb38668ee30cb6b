//! What the rerank benchmarks share (`rerank.rs`, `llm.rs`): the topics their passages are built
//! from, ten made-up sections of a payments team's design documents.

/// One sentence per topic.
pub const TOPICS: [&str; 10] = [
        "Idempotency keys for payment capture: the client sends a key with every capture request and the server stores the first response under it, returning it for any retry with the same key.",
        "Retry budgets for outbound calls: each service gets a budget of retries per minute so that a failing dependency is not hammered by synchronized retries.",
        "Ledger double-entry invariants: every posting has a debit and a credit of equal amount, checked in the same transaction.",
        "Refund flow: refunds are created against a captured payment and may be partial; the sum of refunds never exceeds the captured amount.",
        "Webhook delivery guarantees: deliveries are retried with exponential backoff for three days and receivers must deduplicate by event id.",
        "After-action report, GCP exodus: the July decision to move the payment workloads off the cloud provider, with costs and timeline.",
        "How-to: rotating database credentials without downtime, using dual credentials and a staged rollout.",
        "Rate limiting at the edge: token buckets per API key, with headers that tell clients when to retry.",
        "Payment authorization holds expire after seven days; captures after expiry are rejected with a clear error code.",
        "Outbox pattern: state changes and the messages announcing them are written in one transaction and relayed asynchronously.",
];
