//! The PyTorch reader against files written by torch (tests/fixtures/torch, made by
//! tests/python/make_torch_fixtures.py with torch 2.15): names, dtypes, shapes and the sha256 of
//! every tensor's contiguous bytes (gathered from the reported range or strided view) equal what
//! torch said; hostile pickles are refused by name with nothing run; one malformed file per rule,
//! each with its error.

#![allow(clippy::unwrap_used)]

use bitlens_tensors::format::pickle::{self, PickleError};
use bitlens_tensors::format::pytorch::{self, TorchError};
use bitlens_tensors::format::{Data, ElementType, Entry, Format, Layout};
use bitlens_tensors::{ReadAt, SourceError};
use serde_json::Value;
use std::cell::Cell;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/torch")
}

fn load(rel: &str) -> Vec<u8> {
    std::fs::read(fixtures().join(rel)).unwrap()
}

/// SHA-256 (FIPS 180-4), enough for comparing fixture digests.
fn sha256(data: &[u8]) -> String {
    const K: [u32; 64] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
        0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
        0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
        0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
        0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
        0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
        0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
        0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
        0xc67178f2,
    ];
    let mut h: [u32; 8] = [
        0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
        0x5be0cd19,
    ];
    let mut msg = data.to_vec();
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&((data.len() as u64) * 8).to_be_bytes());
    for block in msg.chunks(64) {
        let mut w = [0u32; 64];
        for i in 0..16 {
            w[i] = u32::from_be_bytes(block[i * 4..i * 4 + 4].try_into().unwrap());
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let mut v = h;
        for i in 0..64 {
            let s1 = v[4].rotate_right(6) ^ v[4].rotate_right(11) ^ v[4].rotate_right(25);
            let ch = (v[4] & v[5]) ^ (!v[4] & v[6]);
            let t1 = v[7]
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = v[0].rotate_right(2) ^ v[0].rotate_right(13) ^ v[0].rotate_right(22);
            let maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
            let t2 = s0.wrapping_add(maj);
            v = [
                t1.wrapping_add(t2),
                v[0],
                v[1],
                v[2],
                v[3].wrapping_add(t1),
                v[4],
                v[5],
                v[6],
            ];
        }
        for (a, b) in h.iter_mut().zip(v) {
            *a = a.wrapping_add(b);
        }
    }
    h.iter().map(|x| format!("{x:08x}")).collect()
}

#[test]
fn sha256_matches_the_standard_vectors() {
    assert_eq!(
        sha256(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    assert_eq!(
        sha256(b""),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
}

/// A tensor's elements in row-major order, gathered from its range or strided view.
fn contiguous_bytes(file: &[u8], e: &Entry) -> Vec<u8> {
    let ElementType::Dtype(dt) = e.ty else {
        panic!("not a dtype")
    };
    let es = (dt.bits() / 8) as usize;
    match &e.data {
        Data::Range { offset, len } => file[*offset as usize..(*offset + *len) as usize].to_vec(),
        Data::Strided {
            offset,
            len,
            storage_offset,
            strides,
        } => {
            let storage = &file[*offset as usize..(*offset + *len) as usize];
            let numel: u64 = e.shape.iter().product();
            let mut out = Vec::new();
            let mut index = vec![0u64; e.shape.len()];
            for _ in 0..numel {
                let el =
                    storage_offset + index.iter().zip(strides).map(|(i, s)| i * s).sum::<u64>();
                let at = el as usize * es;
                out.extend_from_slice(&storage[at..at + es]);
                for d in (0..index.len()).rev() {
                    index[d] += 1;
                    if index[d] < e.shape[d] {
                        break;
                    }
                    index[d] = 0;
                }
            }
            out
        }
        Data::Deflated { .. } => panic!("torch storages are stored"),
    }
}

/// Checks a fixture against its JSON; returns the layout.
fn check(name: &str) -> Layout {
    let file = load(&format!("{name}.pt"));
    let want: Value = serde_json::from_slice(&load(&format!("{name}.json"))).unwrap();
    let layout = pytorch::read(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
    let legacy = want["format"] == "legacy";
    assert_eq!(
        layout.format,
        if legacy {
            Format::PyTorchLegacy
        } else {
            Format::Zip
        }
    );
    assert_eq!(layout.file_size, file.len() as u64);
    let tensors = want["tensors"].as_array().unwrap();
    assert_eq!(layout.entries.len(), tensors.len(), "{name}: tensor count");
    for (e, t) in layout.entries.iter().zip(tensors) {
        assert_eq!(e.name, t["name"].as_str().unwrap(), "{name}");
        let ElementType::Dtype(dt) = e.ty else {
            panic!()
        };
        assert_eq!(
            dt.to_string(),
            t["dtype"].as_str().unwrap(),
            "{name}: {}",
            e.name
        );
        let shape: Vec<u64> = serde_json::from_value(t["shape"].clone()).unwrap();
        assert_eq!(e.shape, shape, "{name}: {}", e.name);
        assert_eq!(
            matches!(e.data, Data::Range { .. }),
            t["contiguous"].as_bool().unwrap(),
            "{name}: {} contiguity",
            e.name
        );
        assert_eq!(
            sha256(&contiguous_bytes(&file, e)),
            t["sha256"].as_str().unwrap(),
            "{name}: {} bytes",
            e.name
        );
    }
    let meta: Vec<(String, Value)> = layout
        .metadata
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap()))
        .collect();
    let want_meta: Vec<(String, Value)> = want["metadata"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(meta, want_meta, "{name}: metadata");
    layout
}

#[test]
fn state_dicts_in_every_float_type_and_both_formats_match_torch() {
    for dt in ["f32", "f16", "bf16"] {
        let zip = check(&format!("state_{dt}"));
        let legacy = check(&format!("state_{dt}_legacy"));
        assert_eq!(zip.kind, "PyTorch zip");
        assert_eq!(legacy.kind, "PyTorch legacy");
        assert_eq!(zip.entries.len(), 5);
    }
}

#[test]
fn a_model_and_adam_checkpoint_flattens_to_dotted_names() {
    for name in ["adam", "adam_legacy"] {
        let l = check(name);
        let names: Vec<&str> = l.entries.iter().map(|e| e.name.as_str()).collect();
        assert!(names.contains(&"model.0.weight"));
        assert!(names.contains(&"optimizer.state.0.exp_avg"));
        assert!(names.contains(&"optimizer.state.3.exp_avg_sq"));
        let step = l
            .entries
            .iter()
            .find(|e| e.name == "optimizer.state.0.step")
            .unwrap();
        assert!(step.shape.is_empty(), "step is a 0-d tensor");
        let meta = |k: &str| l.metadata.iter().find(|(n, _)| n == k).map(|(_, v)| v);
        assert!(meta("optimizer.param_groups.0.betas").is_some());
        assert!(meta("epoch").is_some());
        assert!(meta("note").is_some());
    }
}

#[test]
fn views_sharing_one_storage_are_each_their_own_entry() {
    for name in ["views", "views_legacy"] {
        let l = check(name);
        let get = |n: &str| l.entries.iter().find(|e| e.name == n).unwrap();
        let Data::Range { offset: base, .. } = get("base").data else {
            panic!("base is contiguous")
        };
        let Data::Strided {
            offset,
            storage_offset,
            ref strides,
            ..
        } = get("transposed").data
        else {
            panic!("a transpose is strided")
        };
        assert_eq!(
            (offset, storage_offset, strides.as_slice()),
            (base, 0, &[1, 24][..])
        );
        let Data::Strided { storage_offset, .. } = get("column").data else {
            panic!("a column is strided")
        };
        assert_eq!(storage_offset, 3);
        let Data::Range { offset: rows, .. } = get("rows").data else {
            panic!("rows are contiguous")
        };
        assert_eq!(rows, base + 2 * 24 * 4);
    }
}

#[test]
fn every_storage_type_a_scalar_and_an_empty_tensor() {
    check("dtypes");
    check("dtypes_legacy");
}

#[test]
fn float8_and_wide_unsigned_tensors_over_untyped_storages() {
    for name in ["v3", "v3_legacy"] {
        let l = check(name);
        let t = l.entries.iter().find(|e| e.name == "f8_e5m2_t").unwrap();
        assert!(matches!(t.data, Data::Strided { .. }), "{name}");
    }
}

/// A source counting the bytes read.
struct Counting<'a>(&'a [u8], Cell<u64>);

impl ReadAt for Counting<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.1.set(self.1.get() + buf.len() as u64);
        self.0.read_exact_at(offset, buf)
    }
}

#[test]
fn only_the_pickles_and_headers_are_read_never_the_data() {
    for name in ["state_f32", "state_f32_legacy"] {
        let file = load(&format!("{name}.pt"));
        let src = Counting(&file, Cell::new(0));
        pytorch::read(&src).unwrap();
        let read = src.1.get();
        eprintln!("{name}: {read} of {} bytes read", file.len());
        // The zip reader looks for its end record in the last 64 KiB + 22 bytes.
        let tail = if name.ends_with("legacy") { 0 } else { 65_557 };
        assert!(read < tail + 16 * 1024, "{name}: read {read} bytes");
    }
}

const PWNED: &str = "/tmp/bitlens_hostile_pickle_ran";

#[test]
fn hostile_pickles_are_refused_by_name_and_nothing_runs() {
    let _ = std::fs::remove_file(PWNED);
    for (file, global) in [
        ("os_system", "os.system"),
        ("builtins_eval", "builtins.eval"),
        ("subprocess_popen", "subprocess.Popen"),
    ] {
        for suffix in ["", "_legacy"] {
            let bytes = load(&format!("hostile/{file}{suffix}.pt"));
            let err = pytorch::read(&bytes).unwrap_err();
            match &err {
                TorchError::Pickle {
                    source: PickleError::ForbiddenGlobal { global: g, .. },
                    ..
                } => assert_eq!(g, global),
                e => panic!("{file}{suffix}: {e}"),
            }
            assert!(err.to_string().contains(global), "{err}");
        }
    }
    assert!(!Path::new(PWNED).exists(), "a hostile payload ran");
}

#[test]
fn one_malformed_file_per_rule_each_with_its_error() {
    type Check = fn(&TorchError) -> bool;
    let cases: &[(&str, Check)] = &[
        ("truncated_pickle", |e| {
            matches!(
                e,
                TorchError::Pickle {
                    source: PickleError::Truncated { .. },
                    ..
                }
            )
        }),
        ("unknown_opcode", |e| {
            matches!(
                e,
                TorchError::Pickle {
                    source: PickleError::UnknownOpcode { opcode: 0xff, .. },
                    ..
                }
            )
        }),
        ("stack_underflow", |e| {
            matches!(
                e,
                TorchError::Pickle {
                    source: PickleError::StackUnderflow { .. },
                    ..
                }
            )
        }),
        ("memo_missing", |e| {
            matches!(
                e,
                TorchError::Pickle {
                    source: PickleError::MemoMissing { index: 7, .. },
                    ..
                }
            )
        }),
        ("oversized_count", |e| {
            matches!(
                e,
                TorchError::Pickle {
                    source: PickleError::Truncated { .. },
                    ..
                }
            )
        }),
        ("deep_nesting", |e| matches!(e, TorchError::TooDeep { .. })),
        ("shared_blowup", |e| {
            matches!(e, TorchError::TooManyItems { .. })
        }),
        (
            "recursive",
            |e| matches!(e, TorchError::Recursive { path } if path == "self"),
        ),
        (
            "bad_persistent_id",
            |e| matches!(e, TorchError::BadPersistentId { path, .. } if path == "w"),
        ),
        (
            "unknown_storage_type",
            |e| matches!(e, TorchError::Pickle { source: PickleError::ForbiddenGlobal { global, .. }, .. } if global == "torch.QInt8Storage"),
        ),
        ("storage_header_mismatch", |e| {
            matches!(
                e,
                TorchError::StorageHeaderMismatch {
                    expected: 4,
                    found: 5,
                    ..
                }
            )
        }),
        ("storage_beyond_file", |e| {
            matches!(
                e,
                TorchError::StorageTooSmall {
                    needed: 16,
                    available: 13,
                    ..
                }
            )
        }),
        (
            "storage_key_missing",
            |e| matches!(e, TorchError::StorageMissing { key, .. } if key == "1"),
        ),
        ("view_out_of_bounds", |e| {
            matches!(
                e,
                TorchError::ViewOutOfBounds {
                    needed: 5,
                    available: 4,
                    ..
                }
            )
        }),
        (
            "zip_storage_missing",
            |e| matches!(e, TorchError::StorageMissing { key, .. } if key == "0"),
        ),
        ("zip_storage_too_small", |e| {
            matches!(
                e,
                TorchError::StorageTooSmall {
                    needed: 16,
                    available: 12,
                    ..
                }
            )
        }),
        (
            "zip_compressed_storage",
            |e| matches!(e, TorchError::CompressedStorage { member } if member == "archive/data/0"),
        ),
        ("zip_view_out_of_bounds", |e| {
            matches!(
                e,
                TorchError::ViewOutOfBounds {
                    needed: 5,
                    available: 4,
                    ..
                }
            )
        }),
        ("zip_big_endian", |e| {
            matches!(e, TorchError::BigEndian { .. })
        }),
    ];
    for ok in ["ok_legacy", "ok_zip"] {
        let l = pytorch::read(&load(&format!("malformed/{ok}.pt"))).unwrap();
        assert_eq!(l.entries.len(), 1, "{ok}");
    }
    let mut files: Vec<String> = std::fs::read_dir(fixtures().join("malformed"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with("ok_"))
        .collect();
    files.sort();
    assert_eq!(files.len(), cases.len(), "one check per malformed file");
    for (name, ok) in cases {
        let bytes = load(&format!("malformed/{name}.pt"));
        let err = pytorch::read(&bytes).expect_err(name);
        assert!(ok(&err), "{name}: wrong error: {err}");
    }
}

#[test]
fn a_zip_without_data_pkl_is_not_pytorch() {
    let npz_like = load("malformed/ok_zip.pt");
    // Rename the pickle member in both headers (same length): `data.pkl` → `data.pkz`.
    let renamed: Vec<u8> = {
        let mut v = npz_like.clone();
        let needle = b"archive/data.pkl";
        let mut i = 0;
        while i + needle.len() <= v.len() {
            if &v[i..i + needle.len()] == needle {
                v[i + needle.len() - 1] = b'z';
            }
            i += 1;
        }
        v
    };
    assert!(matches!(
        pytorch::read(&renamed),
        Err(TorchError::NotPyTorch)
    ));
}

#[test]
fn every_prefix_of_a_real_checkpoint_is_an_error_not_a_panic() {
    for name in ["adam.pt", "adam_legacy.pt", "views.pt"] {
        let file = load(name);
        for cut in (0..file.len()).step_by(7) {
            assert!(
                pytorch::read(&file[..cut].to_vec()).is_err(),
                "{name} cut at {cut}"
            );
        }
    }
}

#[test]
fn every_prefix_of_a_pickle_is_truncated() {
    let legacy = load("adam_legacy.pt");
    // The magic number pickle is 15 bytes: PROTO 2, LONG1 of 10 bytes, STOP.
    for cut in 0..15 {
        assert!(matches!(
            pickle::parse(&legacy[..cut], &|_| true),
            Err(PickleError::Truncated { .. })
        ));
    }
    assert_eq!(pickle::parse(&legacy[..15], &|_| true).unwrap().end, 15);
}

/// A file source for the timing test (reads with `pread`-like seeks).
struct FileSource(std::fs::File, u64, Cell<u64>, Cell<u64>);

impl ReadAt for FileSource {
    fn size(&self) -> u64 {
        self.1
    }
    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        use std::os::unix::fs::FileExt;
        self.2.set(self.2.get() + buf.len() as u64);
        self.3.set(self.3.get() + 1);
        self.0
            .read_exact_at(buf, offset)
            .map_err(|source| SourceError::Backend {
                offset,
                len: buf.len() as u64,
                source,
            })
    }
}

/// Reading the tensor table of big checkpoints against the safetensors header of the same model:
/// `BITLENS_TIMING="a.pt b.pt c.safetensors" cargo test --release -p bitlens-tensors --test
/// pytorch -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing() {
    let paths = std::env::var("BITLENS_TIMING").unwrap_or_default();
    for path in paths.split_whitespace() {
        let f = std::fs::File::open(path).unwrap();
        let size = f.metadata().unwrap().len();
        let src = FileSource(f, size, Cell::new(0), Cell::new(0));
        let runs: u32 = std::env::var("BITLENS_RUNS").map_or(20, |r| r.parse().unwrap());
        let start = std::time::Instant::now();
        let mut n = 0;
        for _ in 0..runs {
            n = if path.ends_with(".safetensors") {
                bitlens_tensors::read_header(&src).unwrap().tensors.len()
            } else {
                pytorch::read(&src).unwrap().entries.len()
            };
        }
        let per = start.elapsed() / runs;
        eprintln!(
            "{path}: {n} tensors in {per:?}; {} bytes in {} reads per pass of a {size}-byte file",
            src.2.get() / u64::from(runs),
            src.3.get() / u64::from(runs)
        );
    }
}

/// Inputs the fuzzer found crashing (tests/fixtures/torch/fuzz): each is an error now.
#[test]
fn fuzz_regressions_are_errors() {
    for entry in std::fs::read_dir(fixtures().join("fuzz")).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        assert!(pytorch::read(&bytes).is_err(), "{}", path.display());
    }
}

/// A source counting its reads.
struct Reads<'a>(&'a [u8], Cell<u64>);

impl ReadAt for Reads<'_> {
    fn size(&self) -> u64 {
        self.0.len() as u64
    }

    fn read_exact_at(&self, offset: u64, buf: &mut [u8]) -> Result<(), SourceError> {
        self.1.set(self.1.get() + 1);
        self.0.read_exact_at(offset, buf)
    }
}

#[test]
fn predicted_offsets_equal_the_local_headers_and_cost_a_few_reads() {
    use bitlens_tensors::format::zip::{Archive, Locate};
    let numpy = fixtures().join("../numpy");
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures())
        .unwrap()
        .chain(std::fs::read_dir(&numpy).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            (name.ends_with(".pt") && !name.contains("legacy")) || name.ends_with(".npz")
        })
        .collect();
    files.sort();
    assert!(files.len() >= 10, "{files:?}");
    for path in &files {
        let file = std::fs::read(path).unwrap();
        let src: &dyn ReadAt = &file.as_slice();
        let archive = Archive::open(src).unwrap();
        // torch (miniz, with data descriptors and 64-byte alignment) and numpy (Python zipfile)
        // both tile their archives: the prediction is each member's real data offset.
        for m in archive.members() {
            assert_eq!(
                archive.predicted_data_offset(m),
                Some(archive.data_offset(src, m).unwrap()),
                "{}: {}",
                path.display(),
                m.name
            );
        }
        if path.extension().unwrap() != "pt" {
            continue;
        }
        let verified = Reads(&file, Cell::new(0));
        let a = pytorch::read_zip_with(&verified, &archive, Locate::Verify).unwrap();
        let predicted = Reads(&file, Cell::new(0));
        let b = pytorch::read_zip_with(&predicted, &archive, Locate::Predict).unwrap();
        assert_eq!(a, b, "{}", path.display());
        // data.pkl and byteorder: one read each, whatever the number of storages.
        assert!(
            predicted.1.get() <= 2,
            "{}: {} reads",
            path.display(),
            predicted.1.get()
        );
        eprintln!(
            "{}: {} storages, {} reads verified, {} predicted",
            path.display(),
            a.entries.len(),
            verified.1.get(),
            predicted.1.get()
        );
    }
}
