//! "Did you mean": the name of a pool closest to a name that matched none,
//! when it is close enough to be a slip. One rule for config names and
//! called tool names.

/// The name of `pool` closest to `name` when it is close enough to be a slip
/// (`write-file` for `write_file`, `evalute` for `evaluate`): case and `-`
/// versus `_` do not count, and at most a third of the letters (at least
/// one) may differ. None for glob patterns, or when nothing is close.
pub(crate) fn closest<'a>(name: &str, pool: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    if name.contains(['*', '?']) {
        return None;
    }
    let fold = |s: &str| s.to_lowercase().replace('-', "_");
    let wanted = fold(name);
    let allowed = (wanted.chars().count() / 3).max(1);
    pool.into_iter()
        .filter(|candidate| *candidate != name)
        .map(|candidate| {
            (
                strsim::damerau_levenshtein(&wanted, &fold(candidate)),
                candidate,
            )
        })
        .filter(|(distance, _)| *distance <= allowed)
        .min()
        .map(|(_, candidate)| candidate)
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn suggestions_are_only_for_slips() {
        let pool = ["write_file", "fs", "evaluate", "word_count"];
        assert_eq!(closest("Write-File", pool), Some("write_file"));
        assert_eq!(closest("fss", pool), Some("fs"));
        assert_eq!(closest("evalute", pool), Some("evaluate"));
        assert_eq!(closest("nosuchtool", pool), None);
        assert_eq!(closest("write_*", pool), None);
    }
}
