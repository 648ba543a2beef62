//! Schedules as data: the policies of `agent/schedules/<name>.md` and the [`Cadence`] that turns a
//! cron expression in a time zone into the UTC instants of its slots.
//!
//! Daylight saving is explicit: cron fields match the *wall clock* of the schedule's time zone.
//! A wall-clock time that does not exist (spring forward) fires once, at the first valid instant
//! after the gap; a wall-clock time that occurs twice (fall back) fires once, at its first
//! occurrence. Several wall-clock matches that land on one instant are one slot.

use chrono::{DateTime, LocalResult, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// How many missed slots `catch_up = "all"` runs at most when `catch_up_limit` is not set.
pub const DEFAULT_CATCH_UP_LIMIT: u32 = 10;

/// The `overlap` values, in the order the diagnostics list them.
pub const OVERLAP_VALUES: &[&str] = &["skip", "buffer_one", "allow"];

/// The `catch_up` values, in the order the diagnostics list them.
pub const CATCH_UP_VALUES: &[&str] = &["latest", "none", "all"];

/// What a slot does when the schedule's previous run is still going.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overlap {
    /// The slot is recorded as skipped (default).
    #[default]
    Skip,
    /// One slot waits for the running one and fires when it ends; further slots are skipped.
    BufferOne,
    /// The slot fires anyway; runs overlap.
    Allow,
}

impl Overlap {
    /// The frontmatter spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Overlap::Skip => "skip",
            Overlap::BufferOne => "buffer_one",
            Overlap::Allow => "allow",
        }
    }

    /// Reads the frontmatter spelling; `None` for an unknown value.
    pub fn parse(value: &str) -> Option<Overlap> {
        match value {
            "skip" => Some(Overlap::Skip),
            "buffer_one" => Some(Overlap::BufferOne),
            "allow" => Some(Overlap::Allow),
            _ => None,
        }
    }
}

/// What the scheduler does at start with the slots it missed while no server ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CatchUp {
    /// Run the latest missed slot once; the others are recorded as skipped (default).
    #[default]
    Latest,
    /// Run none; every missed slot is recorded as skipped.
    None,
    /// Run the missed slots in order, at most `limit` of them (the latest ones); older ones are
    /// recorded as skipped.
    All {
        /// The most missed slots to run.
        limit: u32,
    },
}

impl CatchUp {
    /// The frontmatter spelling (without the limit).
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::Latest => "latest",
            CatchUp::None => "none",
            CatchUp::All { .. } => "all",
        }
    }

    /// How many of `missed` slots run.
    pub fn runs(self, missed: usize) -> usize {
        match self {
            CatchUp::Latest => missed.min(1),
            CatchUp::None => 0,
            CatchUp::All { limit } => missed.min(limit as usize),
        }
    }
}

/// A cron expression in a time zone: the instants of a schedule's slots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cadence {
    expression: String,
    cron: Cron,
    timezone: Tz,
}

/// Why a cron expression or time zone was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CadenceError {
    /// The cron expression does not parse.
    #[error(
        "cron: \"{expression}\" is not a valid cron expression ({reason}); use five fields (minute hour day month weekday) or @hourly, @daily, @weekly, @monthly, @yearly"
    )]
    Cron {
        /// The expression as written.
        expression: String,
        /// What the parser said.
        reason: String,
    },
    /// The time zone is not an IANA name.
    #[error(
        "timezone: \"{name}\" is not an IANA time zone name (use e.g. \"UTC\", \"Europe/Berlin\", \"America/New_York\")"
    )]
    Timezone {
        /// The name as written.
        name: String,
    },
}

impl Cadence {
    /// Parses a five-field (or `@hourly`-style) cron expression evaluated in `timezone`.
    pub fn parse(expression: &str, timezone: &str) -> Result<Cadence, CadenceError> {
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build()
            .parse(expression)
            .map_err(|err| CadenceError::Cron {
                expression: expression.to_string(),
                reason: err.to_string(),
            })?;
        let timezone = timezone.parse::<Tz>().map_err(|_| CadenceError::Timezone {
            name: timezone.to_string(),
        })?;
        Ok(Cadence {
            expression: expression.to_string(),
            cron,
            timezone,
        })
    }

    /// The cron expression as written.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The time zone the cron fields are read in.
    pub fn timezone(&self) -> Tz {
        self.timezone
    }

    /// The first slot strictly after `after`, or `None` when the expression never matches again.
    pub fn next_after(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        // Wall-clock matches are visited in order from the wall-clock time of `after`; the
        // instants they map to never decrease, and none before that wall-clock time maps past
        // `after` (see the module docs for the mapping).
        let mut wall = after.with_timezone(&self.timezone).naive_local();
        loop {
            wall = self.cron.find_next_occurrence(&wall, false).ok()?;
            let instant = self.instant_of(wall)?;
            if instant > after {
                return Some(instant);
            }
        }
    }

    /// The next `count` slots after `after`.
    pub fn upcoming(&self, after: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
        let mut slots = Vec::with_capacity(count);
        let mut cursor = after;
        while slots.len() < count {
            let Some(next) = self.next_after(cursor) else {
                break;
            };
            slots.push(next);
            cursor = next;
        }
        slots
    }

    /// The instant a wall-clock match fires at: the earliest of an ambiguous time, the end of
    /// the gap for a time that does not exist.
    fn instant_of(&self, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
        match self.timezone.from_local_datetime(&wall) {
            LocalResult::Single(at) => Some(at.with_timezone(&Utc)),
            LocalResult::Ambiguous(first, _) => Some(first.with_timezone(&Utc)),
            LocalResult::None => gap_end(self.timezone, wall),
        }
    }
}

/// The instant a daylight-saving gap holding the wall-clock time `wall` ends (the transition):
/// between `wall` read with the offset after the gap and `wall` read with the offset before it,
/// the first second whose offset is already the later one.
fn gap_end(timezone: Tz, wall: NaiveDateTime) -> Option<DateTime<Utc>> {
    let offset_at = |at: NaiveDateTime| timezone.offset_from_utc_datetime(&at).fix();
    let day = chrono::Duration::days(1);
    let (before, after) = (offset_at(wall - day), offset_at(wall + day));
    let read_with = |offset: chrono::FixedOffset| {
        (wall - chrono::Duration::seconds(i64::from(offset.local_minus_utc()))).and_utc()
    };
    let mut lo = read_with(after);
    let mut hi = read_with(before);
    if lo >= hi {
        return None;
    }
    // Invariant: `lo` still has the offset before the gap, `hi` the one after it.
    while hi - lo > chrono::Duration::seconds(1) {
        let mid = lo + (hi - lo) / 2;
        if offset_at(mid.naive_utc()) == after {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// Why a delay such as `"1h30m"` was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "\"{0}\" is not a delay; use a number with a unit (s, m, h, d), e.g. \"90s\", \"15m\", \"1h30m\""
)]
pub struct DelayError(pub String);

/// Reads a delay: `90s`, `15m`, `2h`, `1d`, or combinations such as `1h30m` (a reminder's `in`).
pub fn parse_delay(text: &str) -> Result<chrono::Duration, DelayError> {
    let invalid = || DelayError(text.to_string());
    let mut total = chrono::Duration::zero();
    let mut digits = String::new();
    for c in text.trim().chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let amount: i64 = digits.parse().map_err(|_| invalid())?;
        digits.clear();
        let part = match c {
            's' => chrono::Duration::try_seconds(amount),
            'm' => chrono::Duration::try_minutes(amount),
            'h' => chrono::Duration::try_hours(amount),
            'd' => chrono::Duration::try_days(amount),
            _ => None,
        }
        .ok_or_else(invalid)?;
        total = total.checked_add(&part).ok_or_else(invalid)?;
    }
    if !digits.is_empty() || total <= chrono::Duration::zero() {
        return Err(invalid());
    }
    Ok(total)
}
