//! The file names bitlens recognises and gives, one rule each, for the CLI, the page and the Python
//! package alike: the extensions of checkpoint files, the shard index's suffix, the snapshot
//! extension, a snapshot's name for a checkpoint file and the file it restores, which file of
//! a base checkpoint serves as a delta's base, the dotted name of a value in a nested state
//! dict, and where a file's sidecar of precomputed statistics is. Pure string rules on
//! `/`-separated names (no file system).

/// Extensions (without the dot) of the checkpoint files bitlens reads: safetensors, GGUF, PyTorch
/// (`.pt`, `.pth`, `.bin`, Lightning's `.ckpt`) and NumPy. The format itself is told by a file's
/// first bytes; the extension only says which files of a folder are checkpoints.
pub const CHECKPOINT_EXTENSIONS: [&str; 8] = [
    "safetensors",
    "gguf",
    "pt",
    "pth",
    "bin",
    "ckpt",
    "npy",
    "npz",
];

/// The extension of bitlens snapshot files.
pub const SNAPSHOT_EXTENSION: &str = "bls";

/// The suffix of a sharded checkpoint's index (`model.safetensors.index.json`).
pub const SHARD_INDEX_SUFFIX: &str = ".safetensors.index.json";

/// The suffix of a sidecar, a file's precomputed statistics (`model.safetensors.bitlens.json`).
pub const SIDECAR_SUFFIX: &str = ".bitlens.json";

/// The last component of a `/`- or `\`-separated path or URL path.
pub fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// The extension of a file name (without the dot), if it has one.
fn extension(name: &str) -> Option<&str> {
    let name = file_name(name);
    name.rfind('.').filter(|&i| i > 0).map(|i| &name[i + 1..])
}

/// True when a file name ends with one of [`CHECKPOINT_EXTENSIONS`] (any case).
pub fn is_checkpoint_name(name: &str) -> bool {
    extension(name).is_some_and(|e| {
        CHECKPOINT_EXTENSIONS
            .iter()
            .any(|k| e.eq_ignore_ascii_case(k))
    })
}

/// True when a file name (or URL, query and fragment aside) is a `.safetensors` file.
pub fn is_safetensors_name(name: &str) -> bool {
    let name = name.split(['?', '#']).next().unwrap_or_default();
    name.ends_with(".safetensors")
}

/// True when a file name is a sharded checkpoint's index.
pub fn is_shard_index_name(name: &str) -> bool {
    name.ends_with(SHARD_INDEX_SUFFIX)
}

/// True when a file name is a bitlens snapshot's (`*.bls`).
pub fn is_snapshot_name(name: &str) -> bool {
    extension(name) == Some(SNAPSHOT_EXTENSION)
}

/// The snapshot's name for the checkpoint file `input`: a shard of a sharded checkpoint keeps its
/// whole name (`model-00001-of-00002.safetensors.bls`, as `bitlens compress INDEX -o DIR` writes
/// and `bitlens decompress DIR` expects); a single safetensors file drops its extension
/// (`model.bls`); a file of another format keeps its own (`model.gguf.bls`).
pub fn snapshot_name(input: &str, shard: bool) -> String {
    let base = file_name(input);
    if shard {
        return format!("{base}.{SNAPSHOT_EXTENSION}");
    }
    let stem = base.strip_suffix(".safetensors").unwrap_or(base);
    format!("{stem}.{SNAPSHOT_EXTENSION}")
}

/// The name of the file a snapshot restores: `X.safetensors.bls` → `X.safetensors` (a shard),
/// `model.gguf.bls` → `model.gguf` (the snapshot of a file of another format keeps its name),
/// `model.bls` → `model.safetensors`. The inverse of [`snapshot_name`].
pub fn restored_name(snapshot: &str) -> String {
    let base = file_name(snapshot);
    let stem = base
        .strip_suffix(SNAPSHOT_EXTENSION)
        .and_then(|s| s.strip_suffix('.'))
        .unwrap_or(base);
    if is_checkpoint_name(stem) {
        stem.to_owned()
    } else {
        format!("{stem}.safetensors")
    }
}

/// True when a file name is a NumPy `.npy` file's (any case): a directory's `.npy` files are one
/// checkpoint.
pub fn is_npy_name(name: &str) -> bool {
    extension(name).is_some_and(|e| e.eq_ignore_ascii_case("npy"))
}

/// The name of the array a `.npy` file holds when the file is one of a directory of them (one
/// checkpoint): its file stem, as `numpy.savez` names the members of an `.npz` (`w.npy` → `w`). A
/// lone `.npy` file's array keeps the reader's name.
pub fn npy_array_name(file: &str) -> &str {
    let name = file_name(file);
    name.strip_suffix(".npy").unwrap_or(name)
}

/// Which file of a base checkpoint (its files' paths or names) serves as the base of `file`: the
/// base's file of the same file name, else the base's only file.
pub fn base_file<S: AsRef<str>>(base_files: &[S], file: &str) -> Option<usize> {
    let name = file_name(file);
    base_files
        .iter()
        .position(|b| file_name(b.as_ref()) == name)
        .or((base_files.len() == 1).then_some(0))
}

/// The name of a value inside a nested object (a PyTorch state dict or optimizer state, as
/// `torch.save` pickles it): its keys (list indices in decimal) joined with `.`
/// (`state.0.exp_avg`); a value at the root is named `root`. The PyTorch reader names tensors
/// so; `bitlens.torch.save_file` flattens nested dicts the same way.
pub fn state_dict_name<S: AsRef<str>>(keys: &[S]) -> String {
    let path = keys.iter().fold(String::new(), |path, key| {
        state_dict_child(&path, key.as_ref())
    });
    state_dict_leaf(&path)
}

/// The path of `key` under `path` in a nested object ([`state_dict_name`] of the keys so far).
pub fn state_dict_child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// The name of a value at `path` ([`state_dict_child`]'s result): `root` for the root itself.
pub fn state_dict_leaf(path: &str) -> String {
    if path.is_empty() {
        "root".to_owned()
    } else {
        path.to_owned()
    }
}

/// Where the sidecar of a file or URL is looked for: `<file>.bitlens.json` next to it (for a URL,
/// the suffix goes before its query and fragment: `m.safetensors?x=1` →
/// `m.safetensors.bitlens.json?x=1`).
pub fn sidecar_name(file: &str) -> String {
    let at = file.find(['?', '#']).unwrap_or(file.len());
    format!("{}{SIDECAR_SUFFIX}{}", &file[..at], &file[at..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_and_restored_names_invert_each_other() {
        assert_eq!(snapshot_name("dir/model.safetensors", false), "model.bls");
        assert_eq!(snapshot_name("x", false), "x.bls");
        assert_eq!(
            snapshot_name("dir/m-00001-of-00002.safetensors", true),
            "m-00001-of-00002.safetensors.bls"
        );
        assert_eq!(restored_name("model.bls"), "model.safetensors");
        assert_eq!(snapshot_name("dir/model.gguf", false), "model.gguf.bls");
        assert_eq!(restored_name("model.gguf.bls"), "model.gguf");
        assert_eq!(restored_name("state.pt.bls"), "state.pt");
        assert_eq!(restored_name("w.ckpt.bls"), "w.ckpt");
        assert_eq!(
            restored_name("d/m-00001-of-00002.safetensors.bls"),
            "m-00001-of-00002.safetensors"
        );
        for input in ["a/model.safetensors", "m.gguf", "x.npz", "s.pt"] {
            let restored = restored_name(&snapshot_name(input, false));
            assert_eq!(
                file_name(input).trim_end_matches(".safetensors"),
                restored.trim_end_matches(".safetensors")
            );
        }
    }

    #[test]
    fn nested_values_are_named_by_their_dotted_path() {
        assert_eq!(
            state_dict_name(&["state", "0", "exp_avg"]),
            "state.0.exp_avg"
        );
        assert_eq!(state_dict_name::<&str>(&[]), "root");
        assert_eq!(state_dict_leaf(&state_dict_child("", "w")), "w");
    }

    #[test]
    fn checkpoint_files_are_told_by_their_extension_in_any_case() {
        for name in [
            "m.safetensors",
            "d/w.GGUF",
            "opt.pt",
            "a.pth",
            "pytorch_model.bin",
            "x.ckpt",
            "a.npy",
            "b.npz",
        ] {
            assert!(is_checkpoint_name(name), "{name}");
        }
        for name in ["config.json", "README.md", "safetensors", ".npy", "m.bls"] {
            assert!(!is_checkpoint_name(name), "{name}");
        }
        assert!(is_snapshot_name("d/m.safetensors.bls") && !is_snapshot_name("bls"));
        assert!(is_shard_index_name("model.safetensors.index.json"));
        assert!(is_safetensors_name("https://h/m.safetensors?download=1"));
    }

    #[test]
    fn a_sidecar_is_next_to_its_file() {
        assert_eq!(
            sidecar_name("run/model.safetensors"),
            "run/model.safetensors.bitlens.json"
        );
        assert_eq!(
            sidecar_name("https://h/m.gguf?download=true#x"),
            "https://h/m.gguf.bitlens.json?download=true#x"
        );
    }

    #[test]
    fn npy_files_are_told_by_their_extension_in_any_case() {
        assert!(is_npy_name("run/w.npy") && is_npy_name("W.NPY"));
        assert!(!is_npy_name("w.npz") && !is_npy_name(".npy") && !is_npy_name("npy"));
    }

    #[test]
    fn npy_files_of_a_directory_name_their_arrays_by_stem() {
        assert_eq!(
            npy_array_name("run/step-1/layer.0.weight.npy"),
            "layer.0.weight"
        );
        assert_eq!(npy_array_name("x"), "x");
    }

    #[test]
    fn base_files_by_name_else_the_only_one() {
        let shards = ["b/m-1.safetensors", "b/m-2.safetensors"];
        assert_eq!(base_file(&shards, "a/m-2.safetensors"), Some(1));
        assert_eq!(base_file(&shards, "m-3.safetensors"), None);
        assert_eq!(
            base_file(&["one.safetensors"], "a/m-2.safetensors"),
            Some(0)
        );
        assert_eq!(base_file::<&str>(&[], "a"), None);
    }
}
