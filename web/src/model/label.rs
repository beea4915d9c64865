//! Display labels that tell loaded checkpoints apart.
//!
//! Each checkpoint has the path the browser gave for it: a directory (`runs/a/ckpt-000100`, from
//! the folder picker's `webkitRelativePath` or a dropped folder's `fullPath`), or only a name (a
//! picked or dropped file, a loose shard set). Its label is the shortest tail of that path, in
//! whole `/`-separated components, that is not also a tail of another checkpoint's path: three
//! folders `run/ckpt-000100`, `run/ckpt-000120`, `run/ckpt-000140` read `ckpt-000100`, ...; `a/ckpt`
//! and `b/ckpt` keep their parents. A path that is a tail of another (`ckpt` beside `b/ckpt`)
//! stays whole.
//!
//! Checkpoints whose whole paths are equal (the same file name picked from three folders, or one
//! folder loaded twice) cannot be told apart by path: they share that tail, and are labelled with the training step their `__metadata__` gives
//! (`model.safetensors · step 120`) when every one of them has a step and no two share it, and
//! otherwise numbered in load order, with the step where there is one
//! (`model.safetensors #2 · step 120`). Labels never repeat: should a path already read like
//! another's label, a number is added until it is unique.

use std::collections::{HashMap, HashSet};

/// What a checkpoint is labelled from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source<'a> {
    /// The path the browser gave: components separated by `/`.
    pub path: &'a str,
    /// The training step from its `__metadata__`, if any.
    pub step: Option<&'a str>,
}

/// The `__metadata__` keys read as the training step, in order of preference.
const STEP_KEYS: [&str; 2] = ["step", "global_step"];

/// The training step a file's `__metadata__` entries give, if any.
pub fn step(metadata: &[(String, String)]) -> Option<&str> {
    STEP_KEYS.iter().find_map(|key| {
        metadata
            .iter()
            .find(|(k, v)| k == key && !v.trim().is_empty())
            .map(|(_, v)| v.trim())
    })
}

/// The path's components, empty ones (doubled or outer slashes) dropped.
fn components(path: &str) -> Vec<&str> {
    path.split('/').filter(|c| !c.is_empty()).collect()
}

/// One label per source, in the same order; see the module doc for the rules.
pub fn labels(sources: &[Source]) -> Vec<String> {
    let paths: Vec<Vec<&str>> = sources.iter().map(|s| components(s.path)).collect();
    // How many distinct paths end with each tail.
    let distinct: HashSet<&[&str]> = paths.iter().map(Vec::as_slice).collect();
    let mut tails: HashMap<&[&str], usize> = HashMap::new();
    for p in distinct {
        for k in 1..=p.len() {
            *tails.entry(&p[p.len() - k..]).or_default() += 1;
        }
    }
    let mut out: Vec<String> = paths
        .iter()
        .map(|p| {
            let k = (1..=p.len())
                .find(|&k| tails[&p[p.len() - k..]] == 1)
                .unwrap_or(p.len());
            p[p.len() - k..].join("/")
        })
        .collect();
    // Equal whole paths: by step, else numbered.
    let mut same: HashMap<&[&str], Vec<usize>> = HashMap::new();
    for (i, p) in paths.iter().enumerate() {
        same.entry(p.as_slice()).or_default().push(i);
    }
    for members in same.values().filter(|m| m.len() > 1) {
        let steps: HashSet<&str> = members.iter().filter_map(|&i| sources[i].step).collect();
        let by_step = steps.len() == members.len();
        for (n, &i) in members.iter().enumerate() {
            let base = std::mem::take(&mut out[i]);
            let numbered = if by_step {
                base
            } else {
                format!("{base} #{}", n + 1)
            };
            out[i] = match sources[i].step {
                Some(step) => format!("{numbered} · step {step}"),
                None => numbered,
            };
        }
    }
    unique(out)
}

/// Adds ` #2`, ` #3`, ... to any label equal to an earlier one.
fn unique(labels: Vec<String>) -> Vec<String> {
    let mut taken: HashSet<String> = labels.iter().cloned().collect();
    let mut seen = HashSet::new();
    labels
        .into_iter()
        .map(|l| {
            if seen.insert(l.clone()) {
                return l;
            }
            let fresh = (2..)
                .map(|n| format!("{l} #{n}"))
                .find(|c| !taken.contains(c))
                .expect("some number is free");
            taken.insert(fresh.clone());
            seen.insert(fresh.clone());
            fresh
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn of(paths: &[&str]) -> Vec<String> {
        let sources: Vec<Source> = paths
            .iter()
            .map(|p| Source {
                path: p,
                step: None,
            })
            .collect();
        labels(&sources)
    }

    fn with_steps(items: &[(&str, Option<&str>)]) -> Vec<String> {
        let sources: Vec<Source> = items
            .iter()
            .map(|&(path, step)| Source { path, step })
            .collect();
        labels(&sources)
    }

    #[test]
    fn folders_are_named_by_their_own_name_when_that_suffices() {
        assert_eq!(
            of(&["run/ckpt-000100", "run/ckpt-000120", "run/ckpt-000140"]),
            ["ckpt-000100", "ckpt-000120", "ckpt-000140"]
        );
        assert_eq!(
            of(&["ckpt-000100", "ckpt-000120"]),
            ["ckpt-000100", "ckpt-000120"]
        );
    }

    #[test]
    fn equal_folder_names_keep_as_many_parents_as_they_need() {
        assert_eq!(
            of(&["x/run-a/ckpt", "x/run-b/ckpt", "x/run-b/other"]),
            ["run-a/ckpt", "run-b/ckpt", "other"]
        );
        assert_eq!(
            of(&["1/a/b/c", "2/a/b/c", "d"]),
            ["1/a/b/c", "2/a/b/c", "d"]
        );
    }

    #[test]
    fn a_path_that_is_a_tail_of_another_stays_whole() {
        assert_eq!(of(&["ckpt", "b/ckpt"]), ["ckpt", "b/ckpt"]);
        assert_eq!(of(&["a/b", "x/a/b", "y/a/b"]), ["a/b", "x/a/b", "y/a/b"]);
    }

    #[test]
    fn a_lone_checkpoint_is_its_last_component() {
        assert_eq!(of(&["run/step-100"]), ["step-100"]);
        assert_eq!(of(&["model.safetensors"]), ["model.safetensors"]);
        assert_eq!(of(&[]), Vec::<String>::new());
    }

    #[test]
    fn equal_names_without_steps_are_numbered_in_order() {
        assert_eq!(
            of(&[
                "model.bf16.safetensors",
                "other.safetensors",
                "model.bf16.safetensors",
                "model.bf16.safetensors"
            ]),
            [
                "model.bf16.safetensors #1",
                "other.safetensors",
                "model.bf16.safetensors #2",
                "model.bf16.safetensors #3"
            ]
        );
    }

    #[test]
    fn equal_names_with_distinct_steps_show_the_step() {
        assert_eq!(
            with_steps(&[
                ("model.bf16.safetensors", Some("100")),
                ("model.bf16.safetensors", Some("120")),
                ("model.bf16.safetensors", Some("140")),
            ]),
            [
                "model.bf16.safetensors · step 100",
                "model.bf16.safetensors · step 120",
                "model.bf16.safetensors · step 140"
            ]
        );
    }

    #[test]
    fn equal_names_with_missing_or_repeated_steps_are_numbered_too() {
        assert_eq!(
            with_steps(&[
                ("m.safetensors", Some("100")),
                ("m.safetensors", None),
                ("m.safetensors", Some("100")),
            ]),
            [
                "m.safetensors #1 · step 100",
                "m.safetensors #2",
                "m.safetensors #3 · step 100"
            ]
        );
    }

    #[test]
    fn steps_are_not_shown_when_paths_already_differ() {
        assert_eq!(
            with_steps(&[("a/m", Some("1")), ("b/m", Some("2"))]),
            ["a/m", "b/m"]
        );
    }

    #[test]
    fn the_same_folder_twice_is_numbered() {
        assert_eq!(of(&["run/ckpt", "run/ckpt"]), ["ckpt #1", "ckpt #2"]);
        assert_eq!(
            of(&["a/ckpt", "a/ckpt", "b/ckpt"]),
            ["a/ckpt #1", "a/ckpt #2", "b/ckpt"]
        );
    }

    #[test]
    fn labels_never_repeat_even_for_tricky_names() {
        let got = of(&["m #2", "m", "m"]);
        assert_eq!(got, ["m #2", "m #1", "m #2 #2"]);
        let distinct: HashSet<&String> = got.iter().collect();
        assert_eq!(distinct.len(), got.len());
    }

    #[test]
    fn empty_components_are_ignored() {
        assert_eq!(of(&["/run//a/", "run/b"]), ["a", "b"]);
    }

    #[test]
    fn steps_come_from_step_or_global_step() {
        let md = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            step(&md(&[("format", "pt"), ("step", " 120 ")])),
            Some("120")
        );
        assert_eq!(step(&md(&[("global_step", "7"), ("step", "8")])), Some("8"));
        assert_eq!(step(&md(&[("global_step", "7")])), Some("7"));
        assert_eq!(step(&md(&[("step", ""), ("format", "pt")])), None);
    }

    #[test]
    fn every_label_is_distinct_and_a_tail_of_its_path() {
        // All paths over a small alphabet, with duplicates.
        let parts = ["a", "b", "c"];
        let mut paths = Vec::new();
        for x in parts {
            paths.push(x.to_string());
            for y in parts {
                paths.push(format!("{x}/{y}"));
            }
        }
        for start in 0..paths.len() {
            let pick: Vec<&str> = paths
                .iter()
                .cycle()
                .skip(start)
                .step_by(3)
                .take(6)
                .map(String::as_str)
                .collect();
            let got = of(&pick);
            let distinct: HashSet<&String> = got.iter().collect();
            assert_eq!(distinct.len(), got.len(), "{pick:?} → {got:?}");
            for (p, l) in pick.iter().zip(&got) {
                let base = l.split(" #").next().unwrap_or(l);
                assert!(p.ends_with(base), "{p} → {l}");
            }
        }
    }
}
