//! Lifecycle and history demotion (issue 5).
