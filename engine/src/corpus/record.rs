//! The record model: a document, its sections, and its lifecycle over time.

use std::path::PathBuf;

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};

/// Where a record stands: current, replaced by a successor, or withdrawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Lifecycle {
    /// Current (the default).
    #[default]
    Active,
    /// Replaced by a successor (`superseded_by`).
    Superseded,
    /// Withdrawn: no longer to be followed.
    Deprecated,
}

/// What kind of edit produced a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum History {
    /// An original record (the default).
    #[default]
    FirstClass,
    /// Amends another record.
    Amendment,
    /// A pass-through that only re-edits another record (formatting, links).
    EditorialOnly,
}

impl Lifecycle {
    /// The allowed values, as written in front matter.
    pub const ALLOWED: &'static str = "active, superseded, deprecated";
    /// The name as written in front matter.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Active => "active",
            Lifecycle::Superseded => "superseded",
            Lifecycle::Deprecated => "deprecated",
        }
    }
}

impl History {
    /// The allowed values, as written in front matter.
    pub const ALLOWED: &'static str = "first-class, amendment, editorial-only";
    /// The name as written in front matter.
    pub fn as_str(self) -> &'static str {
        match self {
            History::FirstClass => "first-class",
            History::Amendment => "amendment",
            History::EditorialOnly => "editorial-only",
        }
    }
}

/// One dated lifecycle transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LifecycleEntry {
    /// When the record entered this state.
    pub date: NaiveDate,
    /// The state it entered.
    pub lifecycle: Lifecycle,
    /// The record that caused the transition, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by: Option<String>,
}

/// A heading and the text under it: the unit that is indexed and embedded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading text (without `#`); the title for text before the first heading.
    pub heading: String,
    /// The lines under the heading.
    pub body: String,
}

/// One record of a corpus.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Unique id.
    pub id: String,
    /// Title.
    pub title: String,
    /// Current lifecycle (the last `lifecycle_log` entry when there is a log).
    pub lifecycle: Lifecycle,
    /// What kind of edit produced it.
    pub history: History,
    /// When its text last changed; an index that reindexes on this date saw the state then.
    pub updated_at: Option<NaiveDate>,
    /// Topic (free text).
    pub topic: String,
    /// The record that replaced it.
    pub superseded_by: Option<String>,
    /// Ids it links to.
    pub cites: Vec<String>,
    /// Dated lifecycle transitions, oldest first (may be empty).
    pub lifecycle_log: Vec<LifecycleEntry>,
    /// Its sections, in order.
    pub sections: Vec<Section>,
    /// The file it came from (and line, for BEIR jsonl).
    pub source: PathBuf,
}

impl Document {
    /// A document with no lifecycle metadata (default lifecycle and history; no date, topic,
    /// successor, citations or log): what a BEIR record, or a hit outside the corpus, becomes.
    pub fn plain(id: String, title: String, sections: Vec<Section>, source: PathBuf) -> Document {
        Document {
            id,
            title,
            lifecycle: Default::default(),
            history: Default::default(),
            updated_at: None,
            topic: String::new(),
            superseded_by: None,
            cites: Vec::new(),
            lifecycle_log: Vec::new(),
            sections,
            source,
        }
    }

    /// The text indexed and embedded for section `i`: title, heading (when it differs) and body.
    pub fn section_text(&self, i: usize) -> String {
        let s = &self.sections[i];
        let mut t = String::with_capacity(self.title.len() + s.heading.len() + s.body.len() + 2);
        t.push_str(&self.title);
        if !s.heading.is_empty() && s.heading != self.title {
            t.push('\n');
            t.push_str(&s.heading);
        }
        if !s.body.is_empty() {
            t.push('\n');
            t.push_str(&s.body);
        }
        t
    }

    /// The lifecycle an index built at `updated_at` saw: the last log entry dated on or before
    /// `updated_at`, else the current lifecycle (no log, or no date to compare with).
    pub fn index_snapshot(&self) -> Lifecycle {
        match (self.updated_at, self.lifecycle_log.is_empty()) {
            (Some(at), false) => self
                .lifecycle_log
                .iter()
                .rev()
                .find(|e| e.date <= at)
                .map(|e| e.lifecycle)
                .unwrap_or(Lifecycle::Active),
            _ => self.lifecycle,
        }
    }

    /// Everything that identifies the record's content, for hashing.
    pub fn fingerprint(&self) -> String {
        let mut s = format!(
            "{}\u{1}{}\u{1}{}\u{1}{}\u{1}{:?}\u{1}{}\u{1}{:?}\u{1}{:?}\u{1}{:?}",
            self.id,
            self.title,
            self.lifecycle.as_str(),
            self.history.as_str(),
            self.updated_at,
            self.topic,
            self.superseded_by,
            self.cites,
            self.lifecycle_log
        );
        for sec in &self.sections {
            s.push('\u{2}');
            s.push_str(&sec.heading);
            s.push('\u{1}');
            s.push_str(&sec.body);
        }
        s
    }
}
