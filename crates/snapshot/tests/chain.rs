//! The checkpoint-chain manifest: its round trip, one test per validation rule, the walk from a
//! step back to its key, and the fingerprint / link checks on real snapshots of a three-step chain.
#![allow(clippy::unwrap_used)]

use bitlens_snapshot::chain::{
    self, BaseLink, ChainError, FileEntry, FileKind, Manifest, Step, MANIFEST_NAME,
};
use bitlens_snapshot::{compress, BaseSource, Codec, SnapshotReader};
use bitlens_tensors::read_header;
use bitlens_test_support::{rng, safetensors::Builder};

fn entry(name: &str, base: Option<(&str, &str)>) -> FileEntry {
    FileEntry {
        name: name.to_owned(),
        kind: if base.is_some() {
            FileKind::Delta
        } else {
            FileKind::Key
        },
        base: base.map(|(step, file)| BaseLink {
            step: step.to_owned(),
            file: file.to_owned(),
        }),
        codec: "lmc".to_owned(),
        original_size: 100,
        snapshot_size: 50,
        full_size: base.map(|_| 80),
        fingerprint: "0123456789abcdef".to_owned(),
    }
}

/// Three steps of two files: a key, then deltas against the previous step.
fn manifest() -> Manifest {
    let mut m = Manifest::new("lmc", None);
    for (i, name) in ["step-0", "step-10", "step-20"].into_iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| ["step-0", "step-10"][j]);
        m.steps.push(Step {
            name: name.to_owned(),
            files: vec![
                entry("model.safetensors", prev.map(|p| (p, "model.safetensors"))),
                entry("opt.safetensors", prev.map(|p| (p, "opt.safetensors"))),
            ],
        });
    }
    m
}

fn parse(m: &Manifest) -> Result<Manifest, ChainError> {
    Manifest::parse(m.to_json().as_bytes())
}

#[test]
fn manifest_round_trips() {
    let m = manifest();
    assert_eq!(parse(&m).unwrap(), m);
    assert_eq!(MANIFEST_NAME, "chain.json");
    let json: serde_json::Value = serde_json::from_str(&m.to_json()).unwrap();
    assert_eq!(json["steps"][1]["files"][0]["kind"], "delta");
    assert_eq!(json["steps"][1]["files"][0]["base"]["step"], "step-0");
    assert!(json["steps"][0]["files"][0].get("base").is_none());
}

#[test]
fn each_rule_is_a_typed_error() {
    let mut m = manifest();
    m.format = "zip".into();
    assert!(matches!(parse(&m), Err(ChainError::NotAChain { found }) if found == "zip"));

    let mut m = manifest();
    m.version = 9;
    assert!(matches!(
        parse(&m),
        Err(ChainError::UnsupportedVersion { found: 9 })
    ));

    let mut m = manifest();
    m.steps.clear();
    assert!(matches!(parse(&m), Err(ChainError::NoSteps)));

    let mut m = manifest();
    m.steps[1].name = "../etc".into();
    assert!(matches!(
        parse(&m),
        Err(ChainError::BadName { what: "step", .. })
    ));

    let mut m = manifest();
    m.steps[0].files[1].name = "a/b".into();
    assert!(matches!(
        parse(&m),
        Err(ChainError::BadName { what: "file", .. })
    ));

    let mut m = manifest();
    m.steps[2].name = "step-10".into();
    assert!(matches!(parse(&m), Err(ChainError::DuplicateStep { step }) if step == "step-10"));

    let mut m = manifest();
    m.steps[1].files[1].name = "model.safetensors".into();
    assert!(matches!(parse(&m), Err(ChainError::DuplicateFile { .. })));

    let mut m = manifest();
    m.steps[1].files.clear();
    assert!(matches!(parse(&m), Err(ChainError::EmptyStep { .. })));

    let mut m = manifest();
    m.steps[1].files[0].kind = FileKind::Key;
    assert!(matches!(
        parse(&m),
        Err(ChainError::KindMismatch {
            problem: "has a base",
            ..
        })
    ));

    let mut m = manifest();
    m.steps[1].files[0].base = None;
    assert!(matches!(
        parse(&m),
        Err(ChainError::KindMismatch {
            problem: "has no base",
            ..
        })
    ));

    // A missing step: step-10 removed, step-20 names it.
    let mut m = manifest();
    m.steps.remove(1);
    match parse(&m) {
        Err(ChainError::UnknownBase {
            step, base_step, ..
        }) => assert_eq!((step.as_str(), base_step.as_str()), ("step-20", "step-10")),
        other => panic!("{other:?}"),
    }

    // Reordered steps: step-20 before step-10.
    let mut m = manifest();
    m.steps.swap(1, 2);
    match parse(&m) {
        Err(ChainError::BaseNotEarlier {
            step,
            position,
            base_step,
            base_position,
            ..
        }) => {
            assert_eq!((step.as_str(), position), ("step-20", 1));
            assert_eq!((base_step.as_str(), base_position), ("step-10", 2));
        }
        other => panic!("{other:?}"),
    }

    // A delta against itself is not earlier either.
    let mut m = manifest();
    m.steps[1].files[0].base.as_mut().unwrap().step = "step-10".into();
    assert!(matches!(parse(&m), Err(ChainError::BaseNotEarlier { .. })));

    let mut m = manifest();
    m.steps[2].files[1].base.as_mut().unwrap().file = "gone.safetensors".into();
    assert!(
        matches!(parse(&m), Err(ChainError::BaseFileMissing { base_file, .. }) if base_file == "gone.safetensors")
    );

    let mut m = manifest();
    m.steps[0].files[0].fingerprint = "xyz".into();
    assert!(matches!(parse(&m), Err(ChainError::BadFingerprint { .. })));
}

#[test]
fn malformed_json_is_a_parse_error_with_its_position() {
    let json = manifest().to_json();
    match Manifest::parse(&json.as_bytes()[..json.len() / 2]) {
        Err(ChainError::Parse { line, .. }) => assert!(line > 1),
        other => panic!("{other:?}"),
    }
    let extra = json.replacen("\"codec\"", "\"surprise\": 1, \"codec\"", 1);
    assert!(matches!(
        Manifest::parse(extra.as_bytes()),
        Err(ChainError::Parse { .. })
    ));
    assert!(matches!(
        Manifest::parse(b"[]"),
        Err(ChainError::Parse { .. })
    ));
}

#[test]
fn steps_are_found_by_name_or_index_and_walk_back_to_their_key() {
    let m = manifest();
    assert_eq!(m.find_step("step-20").unwrap(), 2);
    assert_eq!(m.find_step("1").unwrap(), 1);
    assert!(matches!(
        m.find_step("step-30"),
        Err(ChainError::NoStep { count: 3, .. })
    ));
    assert!(matches!(m.find_step("3"), Err(ChainError::NoStep { .. })));
    let links: Vec<(usize, &str)> = m
        .links(2, "opt.safetensors")
        .into_iter()
        .map(|(i, f)| (i, f.name.as_str()))
        .collect();
    assert_eq!(
        links,
        [
            (0, "opt.safetensors"),
            (1, "opt.safetensors"),
            (2, "opt.safetensors")
        ]
    );
    let mut keyed = manifest();
    keyed.steps[1].files[0].kind = FileKind::Key;
    keyed.steps[1].files[0].base = None;
    assert_eq!(keyed.links(2, "model.safetensors").len(), 2);
    assert!(keyed.links(2, "nope").is_empty());
}

/// A safetensors file of one f32 tensor and one bf16 tensor whose values drift with `step`.
fn checkpoint(step: u64) -> Vec<u8> {
    let mut w = rng::bytes(7, 4096);
    let drift = rng::bytes(100 + step, 4096);
    for (i, b) in w.iter_mut().enumerate() {
        if i % 4 == 0 && step > 0 {
            *b ^= drift[i] & 0x0f;
        }
    }
    Builder::new()
        .metadata("step", &step.to_string())
        .tensor("w", "F32", &[1024], &w)
        .tensor("b", "BF16", &[8], &rng::bytes(9 + step, 16))
        .build()
}

fn pack(file: &[u8], base: Option<&[u8]>) -> Vec<u8> {
    let header = read_header(&file.to_vec()).unwrap();
    let base_vec = base.map(|b| b.to_vec());
    let base_header = base_vec.as_ref().map(|b| read_header(b).unwrap());
    let base_source = base_vec
        .as_ref()
        .zip(base_header.as_ref())
        .map(|(src, header)| BaseSource { src, header });
    let (out, _) = compress(
        &file.to_vec(),
        &header,
        base_source.as_ref(),
        &|t| Codec::lmc_for_width(t.dtype.lane_bytes()),
        Vec::new(),
        &mut |_| {},
    )
    .unwrap();
    out
}

fn file_entry(name: &str, snapshot: &[u8], base: Option<(&str, &str)>) -> FileEntry {
    let reader = SnapshotReader::open(snapshot.to_vec()).unwrap();
    FileEntry {
        snapshot_size: snapshot.len() as u64,
        fingerprint: chain::format_fingerprint(chain::fingerprint(&reader)),
        ..entry(name, base)
    }
}

#[test]
fn fingerprints_identify_the_original_and_links_the_base() {
    let files: Vec<Vec<u8>> = (0..3).map(|s| checkpoint(s * 10)).collect();
    let key = pack(&files[0], None);
    let d1 = pack(&files[1], Some(&files[0]));
    let d2 = pack(&files[2], Some(&files[1]));
    let open = |b: &[u8]| SnapshotReader::open(b.to_vec()).unwrap();

    // Same original, whatever the encoding: a key and a delta of step 10 agree.
    let full1 = pack(&files[1], None);
    assert_eq!(
        chain::fingerprint(&open(&full1)),
        chain::fingerprint(&open(&d1))
    );
    assert_ne!(
        chain::fingerprint(&open(&key)),
        chain::fingerprint(&open(&d1))
    );

    let e0 = file_entry("m", &key, None);
    let e1 = file_entry("m", &d1, Some(("s0", "m")));
    let e2 = file_entry("m", &d2, Some(("s1", "m")));
    chain::check_snapshot("s0", &e0, &open(&key), key.len() as u64).unwrap();
    chain::check_snapshot("s1", &e1, &open(&d1), d1.len() as u64).unwrap();
    chain::check_link("s1", &e1, &open(&d1), &open(&key)).unwrap();
    chain::check_link("s2", &e2, &open(&d2), &open(&d1)).unwrap();

    // Another step's snapshot in this one's place: the fingerprint (or size) differs.
    let err = chain::check_snapshot("s1", &e1, &open(&d2), d1.len() as u64).unwrap_err();
    assert!(
        matches!(&err, ChainError::SnapshotMismatch { what, step, .. } if what.starts_with("fingerprint") && step == "s1"),
        "{err}"
    );
    let err = chain::check_snapshot("s1", &e1, &open(&d1), 1).unwrap_err();
    assert!(matches!(
        err,
        ChainError::SnapshotMismatch { what: "size", .. }
    ));
    // A key where the manifest says delta.
    let e1_as_full = file_entry("m", &full1, Some(("s0", "m")));
    let err =
        chain::check_snapshot("s1", &e1_as_full, &open(&full1), full1.len() as u64).unwrap_err();
    assert!(matches!(
        err,
        ChainError::SnapshotMismatch { what: "kind", .. }
    ));

    // Step 20's delta is not against step 0 (same header layout, other tensor values).
    let err = chain::check_link("s2", &e2, &open(&d2), &open(&key)).unwrap_err();
    match err {
        ChainError::WrongBase {
            step,
            base_step,
            reason,
            ..
        } => {
            assert_eq!((step.as_str(), base_step.as_str()), ("s2", "s1"));
            assert!(
                reason.contains("header hash") || reason.contains("checksum"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    // Not a delta at all.
    let err = chain::check_link("s1", &e1, &open(&full1), &open(&key)).unwrap_err();
    assert!(matches!(err, ChainError::WrongBase { reason, .. } if reason.contains("not a delta")));
}
