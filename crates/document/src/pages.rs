//! Page selections: `1-3,7`, `5-` (to the end), `2`. Parsed once into sorted, merged ranges; a
//! selection is checked against the document's page count only when that is known.

use std::fmt;

/// The most ranges one selection may list.
const MAX_RANGES: usize = 100;

/// A parsed page selection (1-based, inclusive ranges, sorted and merged).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pages {
    ranges: Vec<(u32, Option<u32>)>,
}

/// Why a selection does not parse. The message shows the form it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PagesError(String);

impl fmt::Display for PagesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`pages` {}: give page numbers from 1 and ranges separated by commas, like \"1-3,7\" \
             or \"5-\" (page 5 to the end)",
            self.0
        )
    }
}

impl Pages {
    /// Parse `spec`.
    pub fn parse(spec: &str) -> Result<Self, PagesError> {
        let bad = |why: String| Err(PagesError(why));
        let number = |s: &str| -> Result<u32, PagesError> {
            let s = s.trim();
            match s.parse::<u32>() {
                Ok(0) => Err(PagesError("counts pages from 1, not 0".into())),
                Ok(n) => Ok(n),
                Err(_) => Err(PagesError(format!("has `{s}`, which is not a page number"))),
            }
        };
        let parts: Vec<&str> = spec.split(',').map(str::trim).collect();
        if spec.trim().is_empty() {
            return bad("is empty".into());
        }
        if parts.len() > MAX_RANGES {
            return bad(format!("lists {} ranges (at most {MAX_RANGES})", parts.len()));
        }
        let mut ranges = Vec::with_capacity(parts.len());
        for part in parts {
            let range = match part.split_once('-') {
                None => {
                    let n = number(part)?;
                    (n, Some(n))
                }
                Some((from, "")) => (number(from)?, None),
                Some((from, to)) => {
                    let (from, to) = (number(from)?, number(to)?);
                    if to < from {
                        return bad(format!("has `{part}`, which runs backwards"));
                    }
                    (from, Some(to))
                }
            };
            ranges.push(range);
        }
        ranges.sort_unstable_by_key(|&(from, to)| (from, to.unwrap_or(u32::MAX)));
        let mut merged: Vec<(u32, Option<u32>)> = Vec::with_capacity(ranges.len());
        for (from, to) in ranges {
            if let Some(last) = merged.last_mut()
                && last.1.is_none_or(|end| from <= end.saturating_add(1))
            {
                last.1 = match (last.1, to) {
                    (Some(a), Some(b)) => Some(a.max(b)),
                    _ => None,
                };
                continue;
            }
            merged.push((from, to));
        }
        Ok(Self { ranges: merged })
    }

    /// True when page `n` (1-based) is selected.
    pub fn contains(&self, n: u32) -> bool {
        self.ranges.iter().any(|&(from, to)| n >= from && to.is_none_or(|to| n <= to))
    }

    /// The first page selected.
    pub fn first(&self) -> u32 {
        self.ranges.first().map_or(1, |r| r.0)
    }

    /// The last page selected, if the selection is bounded.
    pub fn last(&self) -> Option<u32> {
        self.ranges.last().and_then(|r| r.1)
    }

    /// The pages selected of a document of `count` pages, in order.
    pub fn of(&self, count: u32) -> Vec<u32> {
        (1..=count).filter(|&n| self.contains(n)).collect()
    }
}

impl fmt::Display for Pages {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, &(from, to)) in self.ranges.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            match to {
                Some(to) if to == from => write!(f, "{from}")?,
                Some(to) => write!(f, "{from}-{to}")?,
                None => write!(f, "{from}-")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_sort_and_merge() {
        let p = Pages::parse("7, 1-3,2-4").unwrap();
        assert_eq!(p.to_string(), "1-4,7");
        assert_eq!(p.of(10), [1, 2, 3, 4, 7]);
        let open = Pages::parse("5-,2").unwrap();
        assert_eq!(open.to_string(), "2,5-");
        assert_eq!(open.of(7), [2, 5, 6, 7]);
        assert_eq!(Pages::parse("3-,4-6").unwrap().to_string(), "3-");
        assert_eq!(Pages::parse("1,2,3").unwrap().to_string(), "1-3");
    }

    #[test]
    fn bad_selections_say_what_is_wrong() {
        for (spec, why) in [
            ("", "is empty"),
            ("0", "from 1"),
            ("3-1", "backwards"),
            ("a-b", "`a`"),
            ("1;2", "`1;2`"),
            ("-3", "``"),
        ] {
            let err = Pages::parse(spec).unwrap_err().to_string();
            assert!(err.contains(why) && err.contains("\"1-3,7\""), "{spec}: {err}");
        }
        let many = vec!["1"; 101].join(",");
        assert!(Pages::parse(&many).unwrap_err().to_string().contains("101 ranges"));
    }
}
