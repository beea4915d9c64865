//! Turns the files of one drop or pick into checkpoints.
//!
//! Rules (paths are relative: `dir/sub/file` for files of a picked or dropped directory, a bare
//! name for loose files):
//! - a parsed shard index claims the shards it names from its own directory; a named shard that was
//!   not given is an error naming the index and the shard;
//! - the other `.safetensors` files of a directory form one checkpoint named after the directory
//!   (as `bitlens inspect DIR` does);
//! - loose files named `PREFIX-00001-of-00003.safetensors` with the same prefix and count form one
//!   checkpoint; every other loose file is a checkpoint of its own;
//! - loose files that are neither `.safetensors` nor an index are reported; other files inside
//!   directories (configs, tokenizers) are ignored silently.
//!
//! Files of other formats (GGUF, PyTorch, NumPy — told by their first bytes, not their names) are
//! checkpoints of their own before this grouping, loose or in a directory (the `.npy` files of a
//! directory together, arrays named by file stem), except in a directory that holds
//! `.safetensors` files: there they stay ignored ([`beside_safetensors`]), so a Hugging
//! Face folder's `training_args.bin` is no checkpoint (as `bitlens inspect DIR`).
//!
//! Checkpoints come out in natural name order (`step-2` before `step-10`), which is the order the
//! Compare view steps through.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashSet};

/// One file offered to the app.
#[derive(Debug, Clone, PartialEq)]
pub struct InputFile {
    /// Relative path (`dir/file.safetensors` or `file.safetensors`).
    pub path: String,
    /// For an index file that parsed: the shard names it lists, in order.
    pub shard_names: Option<Vec<String>>,
}

/// A checkpoint made of some of the input files.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    /// Display name.
    pub name: String,
    /// The index file, if the checkpoint has one.
    pub index: Option<usize>,
    /// Its `.safetensors` files, in shard order.
    pub shards: Vec<usize>,
}

/// A file or index that could not be used, with the reason.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejected {
    /// Index of the file in the input.
    pub file: usize,
    /// Why.
    pub reason: String,
}

/// The checkpoints found and the files rejected.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grouping {
    /// Checkpoints in natural name order.
    pub groups: Vec<Group>,
    /// Rejected files.
    pub rejected: Vec<Rejected>,
}

/// True for a shard index file name.
pub fn is_index(path: &str) -> bool {
    path.ends_with(".index.json")
}

/// True for a safetensors file name ([`bitlens_tensors::naming::is_safetensors_name`]).
pub fn is_safetensors(path: &str) -> bool {
    bitlens_tensors::naming::is_safetensors_name(path)
}

/// A path's directory (`""` for none) and file name.
pub fn split_dir(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("", path),
    }
}

/// For each path: true when it is inside a directory that also holds a `.safetensors` file (a
/// loose file, with no directory, never is), where files of other formats are not checkpoints.
pub fn beside_safetensors<'a>(paths: impl Iterator<Item = &'a str> + Clone) -> Vec<bool> {
    let dirs: HashSet<&str> = paths
        .clone()
        .filter(|p| is_safetensors(p))
        .map(|p| split_dir(p).0)
        .collect();
    paths
        .map(|p| {
            let dir = split_dir(p).0;
            !dir.is_empty() && dirs.contains(dir)
        })
        .collect()
}

/// `PREFIX-00001-of-00003.safetensors` → `(PREFIX, 1, 3)`.
fn shard_pattern(name: &str) -> Option<(&str, u32, u32)> {
    let stem = name.strip_suffix(".safetensors")?;
    let (rest, total) = stem.rsplit_once("-of-")?;
    let (prefix, number) = rest.rsplit_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(number) || !digits(total) {
        return None;
    }
    Some((prefix, number.parse().ok()?, total.parse().ok()?))
}

/// Compares names so that embedded numbers sort by value (`a2` < `a10`).
pub fn natural_cmp(a: &str, b: &str) -> Ordering {
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    while let (Some(&ca), Some(&cb)) = (x.first(), y.first()) {
        if ca.is_ascii_digit() && cb.is_ascii_digit() {
            let na = x.iter().take_while(|c| c.is_ascii_digit()).count();
            let nb = y.iter().take_while(|c| c.is_ascii_digit()).count();
            let (da, db) = (&x[..na], &y[..nb]);
            let ta = da.iter().skip_while(|&&c| c == b'0').count();
            let tb = db.iter().skip_while(|&&c| c == b'0').count();
            let ord = ta
                .cmp(&tb)
                .then_with(|| da[na - ta..].cmp(&db[nb - tb..]))
                .then_with(|| na.cmp(&nb));
            if ord != Ordering::Equal {
                return ord;
            }
            x = &x[na..];
            y = &y[nb..];
        } else {
            if ca != cb {
                return ca.cmp(&cb);
            }
            x = &x[1..];
            y = &y[1..];
        }
    }
    x.len().cmp(&y.len())
}

fn index_name(path: &str) -> String {
    let (_, file) = split_dir(path);
    file.trim_end_matches(".json")
        .trim_end_matches(".index")
        .trim_end_matches(".safetensors")
        .to_owned()
}

/// Groups the files of one drop or pick into checkpoints.
pub fn group(files: &[InputFile]) -> Grouping {
    let mut by_dir: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        by_dir.entry(split_dir(&f.path).0).or_default().push(i);
    }
    let mut out = Grouping::default();
    for (dir, members) in by_dir {
        let mut claimed = HashSet::new();
        let mut had_index = false;
        for &i in &members {
            let f = &files[i];
            if !is_index(&f.path) {
                if !is_safetensors(&f.path) && dir.is_empty() {
                    out.rejected.push(Rejected {
                        file: i,
                        reason: "not a .safetensors file or a *.index.json shard index".into(),
                    });
                }
                continue;
            }
            let Some(names) = &f.shard_names else {
                continue; // the caller already reported why the index did not parse
            };
            had_index = true;
            let mut shards = Vec::with_capacity(names.len());
            let mut missing = None;
            for name in names {
                let want = if dir.is_empty() {
                    name.clone()
                } else {
                    format!("{dir}/{name}")
                };
                match members.iter().find(|&&j| files[j].path == want) {
                    Some(&j) => shards.push(j),
                    None => {
                        missing = Some(name.clone());
                        break;
                    }
                }
            }
            if let Some(name) = missing {
                out.rejected.push(Rejected {
                    file: i,
                    reason: format!(
                        "the index names shard `{name}`, which is not among the given files \
                         (give the index together with all its shards, or their directory)"
                    ),
                });
                continue;
            }
            claimed.extend(shards.iter().copied());
            out.groups.push(Group {
                name: if dir.is_empty() {
                    index_name(&f.path)
                } else {
                    dir.to_owned()
                },
                index: Some(i),
                shards,
            });
        }
        let rest: Vec<usize> = members
            .iter()
            .copied()
            .filter(|&i| is_safetensors(&files[i].path) && !claimed.contains(&i))
            .collect();
        if rest.is_empty() {
            continue;
        }
        if !dir.is_empty() && !had_index {
            let mut shards = rest;
            shards.sort_by(|&a, &b| natural_cmp(&files[a].path, &files[b].path));
            out.groups.push(Group {
                name: dir.to_owned(),
                index: None,
                shards,
            });
            continue;
        }
        let mut sets: BTreeMap<(String, u32), Vec<(u32, usize)>> = BTreeMap::new();
        for i in rest {
            let (_, name) = split_dir(&files[i].path);
            match shard_pattern(name) {
                Some((prefix, n, total)) if dir.is_empty() && total > 1 => sets
                    .entry((prefix.to_owned(), total))
                    .or_default()
                    .push((n, i)),
                _ => out.groups.push(Group {
                    name: files[i].path.clone(),
                    index: None,
                    shards: vec![i],
                }),
            }
        }
        for ((prefix, _), mut shards) in sets {
            shards.sort();
            out.groups.push(Group {
                name: prefix,
                index: None,
                shards: shards.into_iter().map(|(_, i)| i).collect(),
            });
        }
    }
    out.groups.sort_by(|a, b| natural_cmp(&a.name, &b.name));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> InputFile {
        InputFile {
            path: path.into(),
            shard_names: None,
        }
    }

    fn index(path: &str, shards: &[&str]) -> InputFile {
        InputFile {
            path: path.into(),
            shard_names: Some(shards.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn loose_files_are_separate_checkpoints_in_natural_order() {
        let g = group(&[file("step-10.safetensors"), file("step-2.safetensors")]);
        let names: Vec<_> = g.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["step-2.safetensors", "step-10.safetensors"]);
        assert!(g.rejected.is_empty());
    }

    #[test]
    fn index_claims_its_shards() {
        let g = group(&[
            file("model-00002-of-00002.safetensors"),
            index(
                "model.safetensors.index.json",
                &[
                    "model-00001-of-00002.safetensors",
                    "model-00002-of-00002.safetensors",
                ],
            ),
            file("model-00001-of-00002.safetensors"),
            file("other.safetensors"),
        ]);
        assert_eq!(g.groups.len(), 2);
        assert_eq!(g.groups[0].name, "model");
        assert_eq!(g.groups[0].index, Some(1));
        assert_eq!(g.groups[0].shards, vec![2, 0]);
        assert_eq!(g.groups[1].shards, vec![3]);
    }

    #[test]
    fn missing_shard_is_reported() {
        let g = group(&[index("m.safetensors.index.json", &["a.safetensors"])]);
        assert!(g.groups.is_empty());
        assert!(g.rejected[0].reason.contains("`a.safetensors`"));
    }

    #[test]
    fn shard_names_without_index_group_together() {
        let g = group(&[
            file("m-00002-of-00002.safetensors"),
            file("m-00001-of-00002.safetensors"),
        ]);
        assert_eq!(g.groups.len(), 1);
        assert_eq!(g.groups[0].shards, vec![1, 0]);
    }

    #[test]
    fn directories_are_checkpoints_and_other_files_are_ignored() {
        let g = group(&[
            file("run/step-2/model.safetensors"),
            file("run/step-2/config.json"),
            file("run/step-10/model.safetensors"),
            file("notes.txt"),
        ]);
        let names: Vec<_> = g.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["run/step-2", "run/step-10"]);
        assert_eq!(g.rejected.len(), 1);
        assert_eq!(g.rejected[0].file, 3);
    }

    #[test]
    fn other_formats_are_ignored_only_beside_safetensors_files() {
        let paths = [
            "hf/model.safetensors",
            "hf/training_args.bin",
            "hf/sub/model.gguf",
            "gguf/model.gguf",
            "gguf/model.pt",
            "loose.pt",
            "model.safetensors",
        ];
        assert_eq!(
            beside_safetensors(paths.iter().copied()),
            [true, true, false, false, false, false, false]
        );
    }

    #[test]
    fn natural_order() {
        assert_eq!(natural_cmp("a2", "a10"), Ordering::Less);
        assert_eq!(natural_cmp("a02", "a2"), Ordering::Greater);
        assert_eq!(natural_cmp("b", "a"), Ordering::Greater);
    }
}
