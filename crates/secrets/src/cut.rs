//! Secrets a producer cut short. A language server's type printer shortens a long string literal
//! type to its first bytes and `...`; the whole value is then not in the text, so the engine's
//! scan does not find it, yet its first part is shown. [`cut`] finds such an end before a cut
//! mark: the first bytes of a stored value, or a key shape's prefix with part of its token.

use hands_core::redact::MIN_CUT;

use crate::rules;

/// The longest end of `before` that starts a stored form (at least [`MIN_CUT`] bytes and not the
/// whole form, which the scan replaces) or a key shape's token, with its replacement. `cuts` is
/// every stored form with the index of its replacement in `replacements`, sorted.
pub(crate) fn cut(
    cuts: &[(Vec<u8>, usize)],
    replacements: &[Vec<u8>],
    before: &[u8],
) -> Option<(usize, Vec<u8>)> {
    let longest = cuts.iter().map(|(form, _)| form.len()).max().unwrap_or(0);
    let most = before.len().min(longest.saturating_sub(1));
    let stored = (MIN_CUT..=most).rev().find_map(|len| {
        let end = &before[before.len() - len..];
        let at = cuts.partition_point(|(form, _)| form.as_slice() < end);
        let (form, owner) = cuts.get(at)?;
        form.starts_with(end).then(|| (len, replacements[*owner].clone()))
    });
    let shaped = rules::cut(before, MIN_CUT);
    match (stored, shaped) {
        (Some(s), Some(r)) => Some(if r.0 > s.0 { r } else { s }),
        (s, r) => s.or(r),
    }
}
