//! Names and their near misses: what makes a slug, and the valid key a typo most likely meant.
//! A leaf: every manifest reader uses it, and it uses none of them.

/// The valid key closest to `unknown`, when one is close enough to be a likely typo.
pub(crate) fn nearest_key<'a>(unknown: &str, valid: &[&'a str]) -> Option<&'a str> {
    valid
        .iter()
        .map(|key| (strsim::damerau_levenshtein(unknown, key), *key))
        .filter(|(distance, key)| *distance <= 2.max(key.len() / 3))
        .min()
        .map(|(_, key)| key)
}

/// Why `slug` cannot name an agent mounted next to others (`[A-Za-z0-9][A-Za-z0-9_-]*`, not
/// `v1`, `playground` or `docs`), or `None` when it can.
pub fn slug_problem(slug: &str) -> Option<String> {
    let mut chars = slug.chars();
    let shaped = chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !shaped {
        return Some(format!(
            "slug \"{slug}\" must match [A-Za-z0-9][A-Za-z0-9_-]* (rename the directory)"
        ));
    }
    if ["v1", "playground", "docs"].contains(&slug) {
        return Some(format!(
            "slug \"{slug}\" is reserved (v1, playground and docs are server routes): rename the directory"
        ));
    }
    None
}
