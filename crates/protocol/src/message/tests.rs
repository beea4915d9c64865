use super::*;
use crate::choice::{Choice, CodecKind, Contender, PeerCodec};
use crate::choice::{ComparedCodec, CompressOptions};
use crate::result::Roundtrip;
use crate::result::{DecodedTensor, RoundtripRow, SnapshotInfo};
use bitlens_tensors::format::{Data, ElementType, Format, GgmlType, MetaValue};
use bitlens_tensors::format::{Entry, Layout};
use bitlens_tensors::Dtype;
use serde::Serialize;

fn round_trip<T: Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug>(v: T) {
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(serde_json::from_str::<T>(&json).unwrap(), v, "{json}");
}

/// A PyTorch view: the transpose of a 4 × 6 `F32` storage.
fn view() -> Entry {
    Entry {
        name: "t".into(),
        ty: ElementType::Dtype(Dtype::F32),
        shape: vec![6, 4],
        data: Data::Strided {
            offset: 64,
            len: 96,
            storage_offset: 0,
            strides: vec![1, 6],
        },
    }
}

#[test]
fn requests_round_trip() {
    let files = vec![JobFile {
        blob: "a.safetensors".to_owned(),
        base: Some("b.safetensors".to_owned()),
    }];
    let requests = [
        WorkerRequest::Stats {
            task: 1,
            file: FileRef::Blob("f".to_owned()),
            spans: vec![StatsSpan {
                item: 3,
                ty: ElementType::Dtype(Dtype::BF16),
                offset: 8,
                bytes: 1 << 40,
            }],
        },
        WorkerRequest::Flips {
            task: 2,
            spans: vec![FlipSpan {
                item: 0,
                dtype: Dtype::F32,
                a: FileRef::Blob("a".into()),
                a_offset: 0,
                b: FileRef::Url(RemoteFile {
                    url: "http://127.0.0.1/b.safetensors".into(),
                    size: 1 << 33,
                    credentials: false,
                }),
                b_offset: 4,
                bytes: 16,
            }],
        },
        WorkerRequest::Compress {
            task: 3,
            files: files.clone(),
            options: CompressOptions {
                whole: Choice::neuzip(3),
                overrides: [("t".to_owned(), Choice::new(CodecKind::Stored))].into(),
                inshrink: None,
            },
        },
        WorkerRequest::Decompress {
            task: 4,
            files,
            total: 99,
        },
        WorkerRequest::SnapshotInfo {
            task: 5,
            file: FileRef::Blob("s.bls".into()),
        },
        WorkerRequest::DecodeTensor {
            task: 6,
            file: FileRef::Url(RemoteFile {
                url: "http://127.0.0.1:8000/model.bls".into(),
                size: 1 << 34,
                credentials: true,
            }),
            tensor: "encoder.layer.0.attention.self.query.weight".into(),
            base: Some(FileRef::Blob("base.safetensors".into())),
        },
        WorkerRequest::Roundtrip {
            task: 7,
            blob: "f".into(),
            offset: 8,
            bytes: 64,
            dtype: Dtype::F16,
            codecs: vec![
                ComparedCodec {
                    label: "LMC".into(),
                    codec: Contender::Bitlens(Choice::new(CodecKind::Lmc)),
                },
                ComparedCodec {
                    label: "zstd".into(),
                    codec: Contender::Peer(PeerCodec::Zstd),
                },
            ],
        },
        WorkerRequest::Describe {
            task: 8,
            file: FileRef::Blob("model.gguf".into()),
        },
        WorkerRequest::EntryStats {
            task: 9,
            file: FileRef::Blob("model.npz".into()),
            entries: vec![(
                2,
                Entry {
                    name: "w".into(),
                    ty: ElementType::Ggml(GgmlType(12)),
                    shape: vec![256, 2],
                    data: Data::Deflated {
                        offset: 30,
                        compressed: 100,
                        skip: 128,
                        len: 288,
                    },
                },
            )],
        },
        WorkerRequest::EntryFlips {
            task: 10,
            pairs: vec![EntryPair {
                item: 4,
                a: FileRef::Blob("a.pt".into()),
                a_entry: view(),
                b: FileRef::Url(RemoteFile {
                    url: "http://127.0.0.1/b.pt".into(),
                    size: 1 << 20,
                    credentials: false,
                }),
                b_entry: view(),
            }],
        },
        WorkerRequest::RoundtripEntry {
            task: 11,
            file: FileRef::Blob("a.pt".into()),
            entry: view(),
            codecs: vec![ComparedCodec {
                label: "zstd".into(),
                codec: Contender::Peer(PeerCodec::Zstd),
            }],
        },
        WorkerRequest::InshrinkBins {
            task: 12,
            file: FileRef::Blob("w.safetensors".into()),
            offset: 64,
            bytes: 1 << 19,
            dtype: Dtype::BF16,
            balance: 0.5,
        },
        WorkerRequest::LossySurvey {
            task: 13,
            file: FileRef::Url(RemoteFile {
                url: "https://example.org/w.safetensors".into(),
                size: 1 << 20,
                credentials: false,
            }),
            offset: 64,
            bytes: 1 << 10,
            dtype: Dtype::F32,
        },
        WorkerRequest::WeightMap {
            task: 14,
            file: FileRef::Blob("a.safetensors".into()),
            entry: map_entry(),
            other: Some((FileRef::Blob("b.safetensors".into()), map_entry())),
            window: bitlens_stats::weightmap::Window {
                row0: 1,
                col0: 2,
                rows: 3,
                cols: 4,
                block_rows: 1,
                block_cols: 2,
            },
            layer: bitlens_stats::weightmap::Layer::BitPlane { bit: 15 },
        },
        WorkerRequest::Elements {
            task: 15,
            file: FileRef::Blob("a.safetensors".into()),
            entry: map_entry(),
            start: 10,
            count: 64,
        },
    ];
    for (i, r) in requests.into_iter().enumerate() {
        assert_eq!(r.task(), i as u32 + 1);
        round_trip(r);
    }
}

#[test]
fn events_round_trip() {
    let info = SnapshotInfo {
        size: 10,
        original_size: 20,
        lossy: false,
        delta: true,
        base_file_size: Some(20),
        entries: Vec::new(),
        inshrink: None,
        report: Some(Box::new(crate::result::SnapshotReport {
            path: String::new(),
            snapshot_size: 10,
            original_size: 20,
            ratio: 0.5,
            lossy: false,
            delta: true,
            metadata: Some(vec![("format".into(), "pt".into())]),
            tensors: vec![bitlens_report::snapshot::SnapshotTensor {
                name: "w".into(),
                dtype: bitlens_tensors::Dtype::BF16,
                shape: vec![2, 3],
                codec: "lmc".into(),
                delta: true,
                bytes: 12,
                stored_bytes: 6,
                ratio: 0.5,
                frames: 1,
                error: None,
                inshrink: None,
                piece: None,
                statistics: None,
            }],
            original_format: None,
            inshrink: None,
        })),
    };
    let events: Vec<WorkerEvent<String>> = vec![
        WorkerEvent::Ready(Build {
            kind: BuildKind::Single,
            threads: 1,
            reason: Some("not isolated".into()),
        }),
        WorkerEvent::Update {
            task: 1,
            batch: Batch {
                bytes: 4 << 20,
                results: Results::Stats(Vec::new()),
            },
        },
        WorkerEvent::Progress {
            task: 2,
            done: 1,
            total: 9,
        },
        WorkerEvent::Chunk {
            task: 2,
            file: 0,
            chunk: "buffer".into(),
            bytes: 6,
        },
        WorkerEvent::File {
            task: 2,
            file: 0,
            result: Ok(FileDone {
                seconds: 0.5,
                memory: 1 << 20,
                output: FileOutput::Restored(info.clone()),
            }),
        },
        WorkerEvent::File {
            task: 2,
            file: 1,
            result: Err("checksum mismatch".into()),
        },
        WorkerEvent::Done {
            task: 2,
            seconds: 1.0,
            memory: 1 << 20,
            result: JobResult::Roundtrip(vec![RoundtripRow {
                label: "LMC".into(),
                result: Roundtrip {
                    codec: "lmc".into(),
                    lossy: false,
                    bytes: 4,
                    stored_bytes: 2,
                    ratio: 0.5,
                    encode_seconds: 0.1,
                    decode_seconds: 0.1,
                    error: None,
                },
            }]),
        },
        WorkerEvent::Done {
            task: 3,
            seconds: 0.0,
            memory: 0,
            result: JobResult::Info(info),
        },
        WorkerEvent::Done {
            task: 3,
            seconds: 0.0,
            memory: 0,
            result: JobResult::Layout(
                Box::new(Layout {
                    format: Format::Gguf,
                    kind: "GGUF v3".into(),
                    file_size: 1000,
                    entries: Vec::new(),
                    metadata: vec![
                        ("general.name".into(), MetaValue::Str("tiny".into())),
                        (
                            "general.alignment".into(),
                            MetaValue::Array(vec![MetaValue::UInt(32), MetaValue::Float(0.5)]),
                        ),
                    ],
                }),
                None,
            ),
        },
        WorkerEvent::File {
            task: 4,
            file: 0,
            result: Ok(FileDone {
                seconds: 0.1,
                memory: 1 << 20,
                output: FileOutput::Tensor("w".into()),
            }),
        },
        WorkerEvent::Done {
            task: 4,
            seconds: 0.1,
            memory: 1 << 20,
            result: JobResult::Tensor(Box::new(DecodedTensor {
                name: "w".into(),
                codec: "neuzip-m3".into(),
                lossy: true,
                bytes: 8,
                stored_bytes: 5,
                file_bytes: 8 + 64,
                fetched: 70_000,
                stats: {
                    let mut acc = bitlens_stats::Accumulator::new(Dtype::F32, 8);
                    acc.update(&[0, 0, 128, 63, 0, 0, 0, 192]).unwrap();
                    acc.finish().unwrap()
                },
            })),
        },
        WorkerEvent::Done {
            task: 5,
            seconds: 0.2,
            memory: 1 << 20,
            result: JobResult::Bins(Box::new(crate::bins::BinsReport {
                values: 3,
                balance: 0.5,
                uniform_limit: 256,
                lo: -1.0,
                hi: 1.0,
                histogram: vec![1, 0, 2],
                rows: vec![crate::bins::BinsRow {
                    bins: 4,
                    nonuniform: crate::bins::BinsFit {
                        centroids: vec![-1.0, 0.0, 0.5, 1.0],
                        rel_l2: 0.01,
                        max_abs: 0.25,
                    },
                    uniform: crate::bins::BinsFit {
                        centroids: vec![-1.0, -1.0 / 3.0, 1.0 / 3.0, 1.0],
                        rel_l2: 0.1,
                        max_abs: 1.0 / 3.0,
                    },
                }],
                fewest: vec![crate::bins::BinsFewest {
                    bins: 4,
                    error: 0.01,
                    nonuniform: 4,
                    uniform: None,
                }],
            })),
        },
        WorkerEvent::Done {
            task: 6,
            seconds: 0.2,
            memory: 1 << 20,
            result: JobResult::LossySurvey(Box::new(
                bitlens_lessons::lossy::survey(
                    // Four values whose errors are dyadic, so JSON carries every float exactly.
                    &[0, 0, 128, 63, 0, 0, 0, 192, 0, 0, 64, 64, 0, 0, 0, 63],
                    bitlens_codecs::float::FloatFormat::F32,
                )
                .unwrap(),
            )),
        },
        WorkerEvent::Done {
            task: 7,
            seconds: 0.01,
            memory: 1 << 20,
            result: JobResult::WeightMap(Box::new(map_tile())),
        },
        WorkerEvent::Done {
            task: 8,
            seconds: 0.01,
            memory: 1 << 20,
            result: JobResult::Elements(
                bitlens_stats::weightmap::elements(&map_file(), &map_entry(), 3, 2).unwrap(),
            ),
        },
        WorkerEvent::Failed {
            task: None,
            message: "unreadable request".into(),
        },
    ];
    for e in events {
        round_trip(e);
    }
    assert_eq!(
        serde_json::to_string(&BuildKind::Threads).unwrap(),
        format!("\"{}\"", BuildKind::Threads.name())
    );
    assert!(Results::Flips(Vec::new()).is_empty());
    assert!(Results::Diffs(Vec::new()).is_empty());
    // The flip statistics travel as in `Results::Flips`; the dequantized differences too.
    round_trip(bitlens_stats::DequantDiff {
        values: 64,
        changed: 2,
        changed_fraction: 2.0 / 64.0,
        nonfinite: 1,
        max_abs_diff: 0.5,
        mean_abs_diff: 0.75 / 63.0,
        relative_l2: None,
    });
}

/// A 4 × 8 bf16 tensor at offset 0 of [`map_file`].
fn map_entry() -> bitlens_tensors::format::Entry {
    bitlens_tensors::format::Entry {
        name: "w".into(),
        ty: bitlens_tensors::format::ElementType::Dtype(Dtype::BF16),
        shape: vec![4, 8],
        data: bitlens_tensors::format::Data::Range { offset: 0, len: 64 },
    }
}

/// The bytes of [`map_entry`]: finite values only, so the tile compares equal after a round trip.
fn map_file() -> Vec<u8> {
    (0..32u16)
        // bf16 is the top half of the f32 (exact for these small integers).
        .flat_map(|i| (((f32::from(i) - 16.0).to_bits() >> 16) as u16).to_le_bytes())
        .collect()
}

/// The whole map of [`map_entry`] in 2 × 2 blocks.
fn map_tile() -> bitlens_stats::weightmap::Tile {
    use bitlens_stats::weightmap::{weight_map, Grid, Layer, Window, LOCAL_GAP};
    let window = Window::whole(Grid::of_shape(&[4, 8], 1), 8);
    weight_map(
        &map_file(),
        &map_entry(),
        None,
        &window,
        Layer::Values,
        LOCAL_GAP,
    )
    .unwrap()
}

#[test]
fn results_cross_as_the_bytes_of_their_json_and_come_back_equal() {
    let values = [1f32, -0.0, f32::NAN, 3.5, f32::INFINITY, 1e-40];
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let mut acc = bitlens_stats::Accumulator::new(bitlens_tensors::Dtype::F32, 24);
    acc.update(&bytes).unwrap();
    let results = Results::Stats(vec![(3, acc.finish().unwrap())]);
    round_trip(results.clone());
    // The list is one byte string: the JSON the CLI prints for the same statistics.
    let outer = serde_json::to_value(&results).unwrap();
    let inner: Vec<u8> = serde_json::from_value(outer["Stats"].clone()).unwrap();
    let Results::Stats(list) = &results else {
        unreachable!()
    };
    assert_eq!(inner, serde_json::to_vec(list).unwrap());
    // Bytes that are not JSON are an error, not a panic.
    let bad = serde_json::json!({ "Stats": [1, 2, 3] });
    assert!(serde_json::from_value::<Results>(bad).is_err());
}
