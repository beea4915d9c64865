//! Whether a remote file's sidecar (`<url>.bitlens.json`, `bitlens_report::sidecar`: its
//! statistics — LMC §3's bits and byte groups, the §4.1 block-entropy bound — computed once)
//! gives the page its tensors' statistics: what the lookup fetched, judged against the file the
//! page read (its size from the probe, its header hash from the header bytes read anyway) by the
//! rule the CLI uses ([`statistics`]), into the statistics and the note the visitor sees.
//!
//! A sidecar looked for at its default place that is not there (or cannot be fetched: a server
//! that sends no CORS headers on a 404 looks the same to the page) says nothing; one named by the
//! `stats` attribute or parameter that cannot be read is noted.

use crate::model::checkpoint::FileInfo;
use crate::model::report::file_report;
use bitlens_report::sidecar::{ignored_note, statistics, used_note, Fingerprint, Sidecar};
use bitlens_stats::TensorStats;
use std::fmt::Display;

/// What looking for a file's sidecar fetched.
#[derive(Debug, Clone, PartialEq)]
pub struct Fetched {
    /// Where it was looked for.
    pub location: String,
    /// Named by the page (`stats`), rather than the default `<url>.bitlens.json`.
    pub given: bool,
    /// Its bytes; `None` when the server has none (404); why it could not be read.
    pub bytes: Result<Option<Vec<u8>>, String>,
}

/// What a sidecar gives a file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Every tensor's statistics, in the file's layout order, when the sidecar matches.
    pub stats: Option<Vec<TensorStats>>,
    /// What the visitor is told (that the statistics come from it, or why it is ignored).
    pub note: Option<String>,
}

/// Judges what was fetched against `file` as the page read it, whose fingerprint is
/// `fingerprint` (or why it could not be taken).
pub fn judge(
    fetched: Fetched,
    file: &FileInfo,
    fingerprint: Result<&Fingerprint, String>,
) -> Verdict {
    let ignored = |why: &dyn Display| Verdict {
        stats: None,
        note: Some(ignored_note(&fetched.location, why)),
    };
    let bytes = match fetched.bytes {
        Ok(Some(bytes)) => bytes,
        Ok(None) if fetched.given => return ignored(&"there is none (HTTP 404)"),
        Err(e) if fetched.given => return ignored(&format!("it could not be read: {e}")),
        _ => return Verdict::default(),
    };
    let expected = file_report(String::new(), file, |_| None);
    match statistics(&Sidecar::parse(&bytes), fingerprint, &expected) {
        Ok(stats) => Verdict {
            stats: Some(stats),
            note: Some(used_note(&fetched.location)),
        },
        Err(why) => ignored(&why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bitlens_report::inspect::InspectReport;
    use bitlens_stats::Accumulator;
    use bitlens_tensors::{Dtype, Header};

    const AT: &str = "http://h/m.safetensors.bitlens.json";

    /// A safetensors file of two BF16 tensors.
    fn bytes() -> Vec<u8> {
        let json = br#"{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[4,6]}}"#;
        let mut f = (json.len() as u64).to_le_bytes().to_vec();
        f.extend_from_slice(json);
        f.extend_from_slice(&[1, 63, 2, 64, 0, 128]);
        f
    }

    fn info(bytes: &[u8]) -> FileInfo {
        FileInfo::safetensors(
            "h/m.safetensors".into(),
            Header::parse(bytes, bytes.len() as u64).unwrap(),
        )
    }

    /// The sidecar the CLI writes for `bytes`, as JSON.
    fn sidecar(bytes: &[u8]) -> Vec<u8> {
        let file = info(bytes);
        let header = file.header.as_ref().unwrap();
        let report = file_report("m.safetensors".into(), &file, |i| {
            let t = &header.tensors[i];
            let at = (header.data_start() + t.data_offsets.0) as usize;
            let mut acc = Accumulator::new(Dtype::BF16, t.byte_len());
            acc.update(&bytes[at..at + t.byte_len() as usize]).unwrap();
            Some(acc.finish().unwrap())
        });
        let s = Sidecar::new(
            "m.safetensors",
            Fingerprint::read(&bytes).unwrap(),
            InspectReport::new(vec![report]),
        );
        serde_json::to_vec(&s).unwrap()
    }

    fn fetched(bytes: Result<Option<Vec<u8>>, String>, given: bool) -> Fetched {
        Fetched {
            location: AT.into(),
            given,
            bytes,
        }
    }

    #[test]
    fn a_matching_sidecar_gives_every_tensors_statistics_and_says_so() {
        let file = bytes();
        let fp = Fingerprint::read(&file).unwrap();
        let v = judge(
            fetched(Ok(Some(sidecar(&file))), false),
            &info(&file),
            Ok(&fp),
        );
        let stats = v.stats.unwrap();
        assert_eq!((stats.len(), stats[0].bytes, stats[1].bytes), (2, 4, 2));
        assert_eq!(
            v.note.unwrap(),
            format!("statistics from {AT} (matches size and header)")
        );
    }

    #[test]
    fn another_files_or_a_malformed_sidecar_is_ignored_with_why() {
        let file = bytes();
        let mut other = file.clone();
        *other.last_mut().unwrap() = 7; // same size and header: still its sidecar
        let fp = Fingerprint::read(&other).unwrap();
        assert!(judge(
            fetched(Ok(Some(sidecar(&file))), false),
            &info(&other),
            Ok(&fp)
        )
        .stats
        .is_some());
        let longer = Fingerprint {
            file_size: fp.file_size + 1,
            ..fp.clone()
        };
        let v = judge(
            fetched(Ok(Some(sidecar(&file))), false),
            &info(&file),
            Ok(&longer),
        );
        assert_eq!(v.stats, None);
        let note = v.note.unwrap();
        assert!(
            note.starts_with(&format!("{AT} ignored: it describes a file of")),
            "{note}"
        );
        let v = judge(
            fetched(Ok(Some(b"<html>".to_vec())), false),
            &info(&file),
            Ok(&fp),
        );
        assert!(v.note.unwrap().contains("ignored: not a bitlens sidecar"));
        let v = judge(
            fetched(Ok(Some(sidecar(&file))), false),
            &info(&file),
            Err("cut".into()),
        );
        assert!(v
            .note
            .unwrap()
            .contains("the file's header could not be read: cut"));
    }

    #[test]
    fn no_sidecar_says_nothing_unless_one_was_named() {
        let file = bytes();
        let fp = Fingerprint::read(&file).unwrap();
        for bytes in [Ok(None), Err("network".to_owned())] {
            assert_eq!(
                judge(fetched(bytes.clone(), false), &info(&file), Ok(&fp)),
                Verdict::default()
            );
            let v = judge(fetched(bytes, true), &info(&file), Ok(&fp));
            assert!(v.stats.is_none() && v.note.unwrap().starts_with(&format!("{AT} ignored: ")));
        }
    }
}
