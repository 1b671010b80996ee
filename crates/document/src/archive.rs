//! Office files are zip archives; this reads them under the limits. The entry count comes from the
//! central directory; inflated bytes are counted as they come out of the decompressor, across
//! every entry read, so an entry that declares 1 KB and inflates to 10 GB stops at the limit.

use std::io::{self, Cursor, Read};

use hands_core::document::DocumentError;
use zip::ZipArchive;

use crate::limits::{Limits, human};

/// A zip archive read under [`Limits`].
pub struct Archive<'a> {
    zip: ZipArchive<Cursor<&'a [u8]>>,
    /// Inflated bytes still allowed.
    budget: u64,
    limit: u64,
    what: &'static str,
}

impl<'a> Archive<'a> {
    /// Open `bytes` as a zip archive, `what` naming its format in messages (`DOCX`).
    pub fn open(
        bytes: &'a [u8],
        limits: &Limits,
        what: &'static str,
    ) -> Result<Self, DocumentError> {
        let zip = ZipArchive::new(Cursor::new(bytes)).map_err(|err| {
            DocumentError::Invalid(format!(
                "this {what} is damaged: its zip structure does not read ({err})"
            ))
        })?;
        if zip.len() > limits.max_entries {
            return Err(DocumentError::Limit(format!(
                "this {what} holds {} archive entries, over the {} parse_document reads: it may \
                 be a zip bomb",
                zip.len(),
                limits.max_entries
            )));
        }
        Ok(Self { zip, budget: limits.max_inflated_bytes, limit: limits.max_inflated_bytes, what })
    }

    /// True when the archive has an entry `name`.
    pub fn has(&self, name: &str) -> bool {
        self.zip.index_for_name(name).is_some()
    }

    /// The entries' names, in the archive's order.
    pub fn names(&self) -> Vec<String> {
        self.zip.file_names().filter_map(Result::ok).map(|n| n.into_owned()).collect()
    }

    /// Entry `name` inflated, or `None` when there is none.
    pub fn read(&mut self, name: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        let Some(index) = self.zip.index_for_name(name) else { return Ok(None) };
        let mut out = Vec::new();
        self.inflate(index, &mut out)?;
        Ok(Some(out))
    }

    /// Inflate every entry (into nothing), so that the whole archive is known to stay within the
    /// limits before another reader (calamine) opens it.
    pub fn check_all(&mut self) -> Result<(), DocumentError> {
        for index in 0..self.zip.len() {
            self.inflate(index, &mut io::sink())?;
        }
        Ok(())
    }

    fn inflate(&mut self, index: usize, out: &mut impl io::Write) -> Result<(), DocumentError> {
        let (what, limit) = (self.what, self.limit);
        let damaged = |name: &str, err: &dyn std::fmt::Display| {
            DocumentError::Invalid(format!(
                "this {what} is damaged: entry {name} does not read ({err})"
            ))
        };
        let mut entry = self.zip.by_index(index).map_err(|err| damaged("?", &err))?;
        let name = String::from_utf8_lossy(entry.name_raw()).into_owned();
        // One byte more than the budget: reading it means the limit is passed.
        let copied = io::copy(&mut entry.by_ref().take(self.budget + 1), out)
            .map_err(|err| damaged(&name, &err))?;
        if copied > self.budget {
            return Err(DocumentError::Limit(format!(
                "this {what} inflates past {} (entry {name}; its entries together may hold at \
                 most that): it may be a zip bomb",
                human(limit)
            )));
        }
        self.budget -= copied;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn zip_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Cursor::new(Vec::new());
        let mut w = zip::ZipWriter::new(&mut out);
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for (name, data) in entries {
            w.start_file(*name, options).unwrap();
            w.write_all(data).unwrap();
        }
        w.finish().unwrap();
        out.into_inner()
    }

    #[test]
    fn inflated_bytes_are_counted_across_entries() {
        let zeros = vec![0u8; 600];
        let bytes = zip_of(&[("a", &zeros), ("b", &zeros)]);
        let limits = Limits { max_inflated_bytes: 1000, ..Limits::default() };
        let mut archive = Archive::open(&bytes, &limits, "DOCX").unwrap();
        assert_eq!(archive.read("a").unwrap().unwrap().len(), 600);
        let err = archive.read("b").unwrap_err().to_string();
        assert!(err.contains("inflates past") && err.contains("entry b"), "{err}");
        assert!(Archive::open(&bytes, &limits, "DOCX").unwrap().check_all().is_err());
    }

    #[test]
    fn too_many_entries_and_garbage_are_refused() {
        let bytes = zip_of(&[("a", b"1"), ("b", b"2"), ("c", b"3")]);
        let limits = Limits { max_entries: 2, ..Limits::default() };
        let err = Archive::open(&bytes, &limits, "XLSX").err().unwrap().to_string();
        assert!(err.contains("3 archive entries") && err.contains("zip bomb"), "{err}");
        let err = Archive::open(b"PK\x03\x04garbage", &limits, "XLSX").err().unwrap();
        assert!(matches!(err, DocumentError::Invalid(_)), "{err}");
    }
}
