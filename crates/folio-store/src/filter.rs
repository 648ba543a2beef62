//! Which sessions a list returns beyond its principal and cursor: a status, created and
//! updated time ranges and one metadata field ([`SessionFilter`]), matched the same way by
//! every backend ([`SessionFilter::matches`] over a [`Filterable`] record).

use chrono::{DateTime, Utc};
use folio_protocol::SessionStatus;

use crate::SessionMeta;

/// A time range: from `from` (inclusive) to `until` (exclusive); either end open when `None`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeRange {
    /// The earliest time in the range.
    pub from: Option<DateTime<Utc>>,
    /// The first time past the range.
    pub until: Option<DateTime<Utc>>,
}

impl TimeRange {
    /// Whether `at` is in the range.
    pub fn contains(&self, at: DateTime<Utc>) -> bool {
        self.from.is_none_or(|from| at >= from) && self.until.is_none_or(|until| at < until)
    }
}

/// A session metadata field a list can filter on (the fields the session index keeps).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetaKey {
    /// The channel that created it (`http`, `cli`, …).
    Channel,
    /// The A/B variant it was assigned.
    Variant,
    /// Why it exists (`eval`…).
    Purpose,
    /// The channel's continuation key it was opened for.
    ContinuationKey,
}

impl MetaKey {
    /// Every key, with its name on the wire (the field's name in `session.json`).
    pub const ALL: [(MetaKey, &'static str); 4] = [
        (MetaKey::Channel, "channel"),
        (MetaKey::Variant, "variant"),
        (MetaKey::Purpose, "purpose"),
        (MetaKey::ContinuationKey, "continuationKey"),
    ];

    /// The key's name on the wire.
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(key, _)| *key == self)
            .map_or("", |(_, name)| name)
    }

    /// The key named `name` (`None`: no such key).
    pub fn parse(name: &str) -> Option<MetaKey> {
        Self::ALL
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(key, _)| *key)
    }
}

/// A metadata field that must be set (`value: None`) or set to `value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldFilter {
    /// The field.
    pub key: MetaKey,
    /// The value it must have (`None`: any).
    pub value: Option<String>,
}

/// What a listed session must match besides its principal and the cursor; the default
/// matches every session.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionFilter {
    /// Only sessions in this status (as their metadata records it).
    pub status: Option<SessionStatus>,
    /// Only sessions created in this range.
    pub created: TimeRange,
    /// Only sessions last updated in this range.
    pub updated: TimeRange,
    /// Only sessions with this metadata field (and value).
    pub field: Option<FieldFilter>,
}

/// A session record a [`SessionFilter`] reads: the metadata, or a backend's index entry.
pub trait Filterable {
    /// The recorded status.
    fn status(&self) -> SessionStatus;
    /// When it was created.
    fn created_at(&self) -> DateTime<Utc>;
    /// When it last changed.
    fn updated_at(&self) -> DateTime<Utc>;
    /// The value of metadata field `key` (`None`: unset).
    fn field(&self, key: MetaKey) -> Option<&str>;
}

impl SessionFilter {
    /// Whether `session` matches.
    pub fn matches(&self, session: &impl Filterable) -> bool {
        self.status.is_none_or(|status| session.status() == status)
            && self.created.contains(session.created_at())
            && self.updated.contains(session.updated_at())
            && self.field.as_ref().is_none_or(|field| {
                session
                    .field(field.key)
                    .is_some_and(|value| field.value.as_deref().is_none_or(|want| want == value))
            })
    }
}

impl Filterable for SessionMeta {
    fn status(&self) -> SessionStatus {
        self.status
    }

    fn created_at(&self) -> DateTime<Utc> {
        self.created_at
    }

    fn updated_at(&self) -> DateTime<Utc> {
        self.updated_at
    }

    fn field(&self, key: MetaKey) -> Option<&str> {
        match key {
            MetaKey::Channel => Some(&self.channel),
            MetaKey::Variant => self.variant.as_deref(),
            MetaKey::Purpose => self.purpose.as_deref(),
            MetaKey::ContinuationKey => self.continuation_key.as_deref(),
        }
    }
}
