//! Cron slots in a time zone: exact UTC instants across daylight-saving changes in
//! Europe/Berlin and America/New_York (a time that does not exist fires once at the end of the
//! gap; a time that occurs twice fires once, at its first occurrence), and the frontmatter's
//! diagnostics, each naming its field.

use std::path::Path;

use chrono::{DateTime, Utc};
use folio_project::{Cadence, CadenceError, CatchUp, Overlap, discover};
use pretty_assertions::assert_eq;

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

fn slots(cron: &str, zone: &str, after: &str, count: usize) -> Vec<String> {
    Cadence::parse(cron, zone)
        .unwrap()
        .upcoming(at(after), count)
        .iter()
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .collect()
}

#[test]
fn berlin_spring_forward_fires_a_missing_time_once_at_the_end_of_the_gap() {
    // 2027-03-28: 02:00 CET becomes 03:00 CEST (01:00Z); 02:30 does not exist.
    assert_eq!(
        slots("30 2 * * *", "Europe/Berlin", "2027-03-26T12:00:00Z", 3),
        [
            "2027-03-27T01:30:00Z",
            "2027-03-28T01:00:00Z",
            "2027-03-29T00:30:00Z"
        ]
    );
    // Every wall-clock slot in the gap and 03:00 itself land on one instant: one firing.
    assert_eq!(
        slots("*/30 * * * *", "Europe/Berlin", "2027-03-28T00:00:00Z", 4),
        [
            "2027-03-28T00:30:00Z",
            "2027-03-28T01:00:00Z",
            "2027-03-28T01:30:00Z",
            "2027-03-28T02:00:00Z"
        ]
    );
    // A 09:00 job stays at 09:00 local: 08:00Z before the change, 07:00Z after.
    assert_eq!(
        slots("0 9 * * *", "Europe/Berlin", "2027-03-27T00:00:00Z", 2),
        ["2027-03-27T08:00:00Z", "2027-03-28T07:00:00Z"]
    );
}

#[test]
fn berlin_fall_back_fires_a_repeated_time_once_at_its_first_occurrence() {
    // 2027-10-31: 03:00 CEST becomes 02:00 CET (01:00Z); 02:00-02:59 occurs twice.
    assert_eq!(
        slots("30 2 * * *", "Europe/Berlin", "2027-10-29T12:00:00Z", 3),
        [
            "2027-10-30T00:30:00Z",
            "2027-10-31T00:30:00Z",
            "2027-11-01T01:30:00Z"
        ]
    );
    assert_eq!(
        slots("*/30 * * * *", "Europe/Berlin", "2027-10-30T23:00:00Z", 5),
        [
            "2027-10-30T23:30:00Z",
            "2027-10-31T00:00:00Z",
            "2027-10-31T00:30:00Z",
            "2027-10-31T02:00:00Z",
            "2027-10-31T02:30:00Z"
        ]
    );
    // Asked from inside the second 02:xx hour, the repeated times are not fired again.
    assert_eq!(
        slots("*/30 * * * *", "Europe/Berlin", "2027-10-31T01:10:00Z", 1),
        ["2027-10-31T02:00:00Z"]
    );
}

#[test]
fn new_york_spring_forward_and_fall_back() {
    // 2027-03-14: 02:00 EST becomes 03:00 EDT (07:00Z).
    assert_eq!(
        slots("30 2 * * *", "America/New_York", "2027-03-12T12:00:00Z", 3),
        [
            "2027-03-13T07:30:00Z",
            "2027-03-14T07:00:00Z",
            "2027-03-15T06:30:00Z"
        ]
    );
    // 2027-11-07: 02:00 EDT becomes 01:00 EST (06:00Z); 01:30 occurs twice.
    assert_eq!(
        slots("30 1 * * *", "America/New_York", "2027-11-05T12:00:00Z", 3),
        [
            "2027-11-06T05:30:00Z",
            "2027-11-07T05:30:00Z",
            "2027-11-08T06:30:00Z"
        ]
    );
    assert_eq!(
        slots("0 * * * *", "America/New_York", "2027-11-07T04:30:00Z", 3),
        [
            "2027-11-07T05:00:00Z",
            "2027-11-07T07:00:00Z",
            "2027-11-07T08:00:00Z"
        ]
    );
}

#[test]
fn nicknames_and_utc_default() {
    assert_eq!(
        slots("@daily", "UTC", "2027-01-01T00:00:00Z", 2),
        ["2027-01-02T00:00:00Z", "2027-01-03T00:00:00Z"]
    );
    assert_eq!(
        slots("0 9 * * 1-5", "UTC", "2027-01-01T10:00:00Z", 2),
        ["2027-01-04T09:00:00Z", "2027-01-05T09:00:00Z"]
    );
}

#[test]
fn bad_cron_and_zone_are_refused_naming_the_field() {
    assert_eq!(
        Cadence::parse("0 9 * *", "UTC")
            .unwrap_err()
            .to_string()
            .split(" (")
            .next(),
        Some("cron: \"0 9 * *\" is not a valid cron expression")
    );
    assert_eq!(
        Cadence::parse("0 9 * * *", "Europe/Berlim").unwrap_err(),
        CadenceError::Timezone {
            name: "Europe/Berlim".into()
        }
    );
    // Seconds are not a field of a schedule.
    assert!(Cadence::parse("0 0 9 * * *", "UTC").is_err());
}

fn project(schedule: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    std::fs::create_dir_all(agent.join("schedules")).unwrap();
    std::fs::write(agent.join("instructions.md"), "Be brief.").unwrap();
    std::fs::write(agent.join("schedules/daily.md"), schedule).unwrap();
    dir
}

fn diagnostics(dir: &Path) -> Vec<String> {
    discover(dir)
        .diagnostics
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn frontmatter_is_typed_with_defaults() {
    let dir = project("---\ncron: \"0 9 * * 1-5\"\n---\nSummarize.\n");
    let schedule = discover(dir.path()).definition.unwrap().schedules.remove(0);
    assert_eq!(
        (
            schedule.name.as_str(),
            schedule.cadence,
            schedule.overlap,
            schedule.catch_up,
            schedule.jitter_secs,
            schedule.enabled,
            schedule.prompt.as_str()
        ),
        (
            "daily",
            Cadence::parse("0 9 * * 1-5", "UTC").unwrap(),
            Overlap::Skip,
            CatchUp::Latest,
            0,
            true,
            "Summarize."
        )
    );
    let dir = project(
        "---\ncron: \"@hourly\"\ntimezone: Europe/Berlin\noverlap: buffer_one\ncatch_up: all\ncatch_up_limit: 3\njitter_secs: 30\nenabled: false\n---\nGo.\n",
    );
    let schedule = discover(dir.path()).definition.unwrap().schedules.remove(0);
    assert_eq!(
        (
            schedule.cadence,
            schedule.overlap,
            schedule.catch_up,
            schedule.jitter_secs,
            schedule.enabled
        ),
        (
            Cadence::parse("@hourly", "Europe/Berlin").unwrap(),
            Overlap::BufferOne,
            CatchUp::All { limit: 3 },
            30,
            false
        )
    );
}

#[test]
fn every_bad_field_is_an_error_naming_it() {
    let dir = project(
        "---\ncron: \"0 9 * * *\"\ntimezone: Mars/Olympus\noverlap: skipp\ncatch_up: every\n---\nGo.\n",
    );
    assert_eq!(
        diagnostics(dir.path()),
        [
            "error: agent/schedules/daily.md: timezone: \"Mars/Olympus\" is not an IANA time zone name (use e.g. \"UTC\", \"Europe/Berlin\", \"America/New_York\")",
            "error: agent/schedules/daily.md: overlap: \"skipp\" is not valid (did you mean \"skip\"?); use one of \"skip\", \"buffer_one\", \"allow\"",
            "error: agent/schedules/daily.md: catch_up: \"every\" is not valid; use one of \"latest\", \"none\", \"all\"",
        ]
    );
    let dir = project("---\ncron: \"0 9 * * *\"\ncatch_up_limit: 0\ncatch_up: all\n---\n\n");
    assert_eq!(
        diagnostics(dir.path()),
        [
            "error: agent/schedules/daily.md: catch_up_limit: must be at least 1 (use catch_up: \"none\" to run no missed slot)",
            "error: agent/schedules/daily.md: prompt: the body is empty (it is the first message of each run)",
        ]
    );
    let dir = project("---\ntimezone: UTC\n---\nGo.\n");
    assert_eq!(
        diagnostics(dir.path()),
        [
            "error: agent/schedules/daily.md: cron: missing (frontmatter `cron: \"0 9 * * 1-5\"`: minute hour day month weekday, or @daily)"
        ]
    );
}

#[test]
fn wrongly_typed_values_name_the_field() {
    for (front, field) in [
        ("jitter_secs: soon", "jitter_secs"),
        ("enabled: maybe", "enabled"),
    ] {
        let dir = project(&format!("---\ncron: \"0 9 * * *\"\n{front}\n---\nGo.\n"));
        let found = diagnostics(dir.path());
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains(field),
            "{field} is not named in {found:?}"
        );
    }
}
