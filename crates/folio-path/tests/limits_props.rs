//! Generated paths against the shape limits: the verdict follows a plain model of the rules,
//! does not depend on how the path is spelled, and its message names the limit.

use folio_path::{
    MAX_PATH_BYTES, MAX_PATH_SEGMENTS, MAX_SEGMENT_BYTES, PathLimit, check_path_limits,
    normalize_fs_path,
};
use proptest::prelude::*;

/// The rules written out plainly over the segments of a normalized path.
fn model(segments: &[String]) -> Result<(), PathLimit> {
    let bytes: usize = segments.iter().map(|s| s.len() + 1).sum::<usize>().max(1);
    if segments.len() > MAX_PATH_SEGMENTS {
        return Err(PathLimit::TooDeep {
            segments: segments.len(),
        });
    }
    if let Some(longest) = segments.iter().map(String::len).max()
        && longest > MAX_SEGMENT_BYTES
    {
        return Err(PathLimit::SegmentTooLong { bytes: longest });
    }
    if bytes > MAX_PATH_BYTES {
        return Err(PathLimit::TooLong { bytes });
    }
    Ok(())
}

/// A segment of 1 to 300 bytes (ASCII or multi-byte letters), never `.` or `..`.
fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z0-9_-]{1,300}",
        "[é中]{1,120}",
        (1usize..=8).prop_map(|n| "x".repeat(MAX_SEGMENT_BYTES - 4 + n)),
    ]
}

/// Depths around the limit are as likely as short and very deep paths.
fn segments() -> impl Strategy<Value = Vec<String>> {
    prop_oneof![
        prop::collection::vec(segment(), 0..8),
        prop::collection::vec("[a-z]{1,3}", 60..70),
        prop::collection::vec("[a-z]{1,70}", 50..70),
        prop::collection::vec("d", 1000..3001),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn verdict_follows_the_model(segments in segments()) {
        let path = format!("/{}", segments.join("/"));
        prop_assert_eq!(check_path_limits(&path), model(&segments));
    }

    #[test]
    fn spelling_does_not_change_the_verdict(segments in segments(), dots in 0usize..3) {
        let plain = format!("/{}", segments.join("/"));
        let spelled = format!(
            "{}{}/",
            "./".repeat(dots),
            segments.join(&"/./".repeat(dots.max(1)))
        );
        prop_assert_eq!(normalize_fs_path(&spelled), normalize_fs_path(&plain));
        prop_assert_eq!(check_path_limits(&spelled), check_path_limits(&plain));
        // `..` that climbs back out of an extra segment changes nothing either.
        let climbed = format!("/extra/..{plain}");
        prop_assert_eq!(check_path_limits(&climbed), check_path_limits(&plain));
    }

    #[test]
    fn refusals_name_their_limit_in_a_short_message(segments in segments()) {
        let path = format!("/{}", segments.join("/"));
        if let Err(limit) = check_path_limits(&path) {
            let message = limit.describe(&path);
            let (prefix, number) = match limit {
                PathLimit::TooLong { .. } => ("path too long: ", MAX_PATH_BYTES),
                PathLimit::TooDeep { .. } => ("path too deep: ", MAX_PATH_SEGMENTS),
                PathLimit::SegmentTooLong { .. } => ("path segment too long: ", MAX_SEGMENT_BYTES),
            };
            prop_assert!(message.starts_with(prefix), "{}", message);
            prop_assert!(message.contains(&format!("at most {number}")), "{}", message);
            prop_assert!(message.chars().count() < 400, "{}", message);
        }
    }
}
