//! Which checkpoints make the steps of a chain (LMC §3.1, Fig. 12): a run directory's
//! `step-<number>` folders in number order, or the paths given one by one in training order; each
//! step's checkpoint files by name ([`naming::is_checkpoint_name`]). Pure rules on names, and the
//! directory listings they need.

use crate::bail;
use crate::error::{Context, Result};
use crate::progress::Progress;
use bitlens_tensors::naming;
use std::path::{Path, PathBuf};

/// A step of the input: its name and its checkpoint files.
pub(super) struct StepInput {
    /// The step's name.
    pub name: String,
    /// Its checkpoint files, by name.
    pub files: Vec<PathBuf>,
}

/// The input paths as steps: a run directory's `step-*` folders ordered by their number, or each
/// path a step (numbers in the names, where every name has one, must increase).
pub(super) fn input_steps(inputs: &[PathBuf], progress: &dyn Progress) -> Result<Vec<StepInput>> {
    let steps = match inputs {
        [dir] if dir.is_dir() => {
            let mut numbered = Vec::new();
            for entry in
                std::fs::read_dir(dir).with_context(|| format!("{}: cannot list", dir.display()))?
            {
                let path = entry?.path();
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue; // not a step-<number> name
                };
                if let Some(n) = run_step_number(name).filter(|_| path.is_dir()) {
                    numbered.push((n, name.to_owned(), path));
                }
            }
            if numbered.is_empty() {
                bail!(
                    "{}: no step-* folders: give a run directory of step-<number> folders, or the checkpoints of the chain in order",
                    dir.display()
                );
            }
            numbered.sort();
            if let Some(w) = numbered.windows(2).find(|w| w[0].0 == w[1].0) {
                bail!(
                    "{}: `{}` and `{}` are the same step number",
                    dir.display(),
                    w[0].1,
                    w[1].1
                );
            }
            numbered
                .into_iter()
                .map(|(_, name, path)| step_input(name, &path, progress))
                .collect::<Result<Vec<_>>>()?
        }
        _ => {
            let stems = inputs
                .iter()
                .map(|p| given_step_name(p, false))
                .collect::<Result<Vec<_>>>()?;
            let distinct = (0..stems.len()).all(|i| !stems[..i].contains(&stems[i]));
            let steps = inputs
                .iter()
                .zip(stems)
                .map(|(p, stem)| {
                    let name = if distinct {
                        stem
                    } else {
                        given_step_name(p, true)?
                    };
                    step_input(name, p, progress)
                })
                .collect::<Result<Vec<_>>>()?;
            check_given_order(&steps)?;
            steps
        }
    };
    for (i, s) in steps.iter().enumerate() {
        if let Some(other) = steps[..i].iter().find(|o| o.name == s.name) {
            bail!(
                "two steps are named `{}` ({} and {}): steps need distinct names",
                s.name,
                other.files[0].display(),
                s.files[0].display()
            );
        }
    }
    Ok(steps)
}

/// The name of a step given by its path: a folder's name; a file's name without its extension
/// or, with `by_folder` (for files of the same name in several folders: `step-10/model.safetensors`),
/// its folder's name.
fn given_step_name(path: &Path, by_folder: bool) -> Result<String> {
    // `.` or `..` have their name in the absolute path; a symlink keeps its own name.
    let absolute = if path.file_name().is_some() {
        path.to_path_buf()
    } else {
        path.canonicalize()
            .with_context(|| format!("{}: cannot resolve", path.display()))?
    };
    if absolute.is_dir() {
        return file_name(&absolute);
    }
    if by_folder {
        let absolute = std::path::absolute(&absolute)
            .with_context(|| format!("{}: cannot resolve", path.display()))?;
        let parent = absolute
            .parent()
            .with_context(|| format!("{}: no folder", path.display()))?;
        return file_name(parent);
    }
    let stem = absolute.file_stem().and_then(|s| s.to_str());
    stem.map(str::to_owned)
        .with_context(|| format!("{}: not a UTF-8 file name", path.display()))
}

/// The number of a run directory's step folder: `step-000025`, `step_25`, `step25`.
fn run_step_number(name: &str) -> Option<u64> {
    let rest = name.strip_prefix("step")?.trim_start_matches(['-', '_']);
    if rest.is_empty() || !rest.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// The last run of digits in a name (`ckpt-300` → 300), if any.
fn last_number(name: &str) -> Option<u64> {
    let end = name.rfind(|c: char| c.is_ascii_digit())? + 1;
    let start = name[..end]
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    name[start..end].parse().ok()
}

/// Steps given one by one must be in training order: when every name carries a number, the
/// numbers increase.
fn check_given_order(steps: &[StepInput]) -> Result<()> {
    let numbers: Option<Vec<u64>> = steps.iter().map(|s| last_number(&s.name)).collect();
    let Some(numbers) = numbers else {
        return Ok(());
    };
    if let Some(i) = (1..steps.len()).find(|&i| numbers[i] <= numbers[i - 1]) {
        bail!(
            "steps out of order: `{}` (number {}) is given after `{}` (number {}); give the checkpoints in training order",
            steps[i].name,
            numbers[i],
            steps[i - 1].name,
            numbers[i - 1]
        );
    }
    Ok(())
}

/// One step: a checkpoint file, or a folder's checkpoint files by name.
fn step_input(name: String, path: &Path, progress: &dyn Progress) -> Result<StepInput> {
    if !path.is_dir() {
        if !path.is_file() {
            bail!("{}: no such checkpoint file or folder", path.display());
        }
        return Ok(StepInput {
            name,
            files: vec![path.to_path_buf()],
        });
    }
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for entry in
        std::fs::read_dir(path).with_context(|| format!("{}: cannot list", path.display()))?
    {
        let p = entry?.path();
        let known = naming::is_checkpoint_name(&p.to_string_lossy());
        if p.is_file() && known {
            files.push(p);
        } else {
            skipped.push(
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    // As for a Hugging Face folder: with safetensors files, the others (`training_args.bin`) are
    // not checkpoints.
    let is_safetensors = |p: &PathBuf| naming::is_safetensors_name(&p.to_string_lossy());
    if files.iter().any(is_safetensors) {
        let (kept, others): (Vec<_>, Vec<_>) = files.into_iter().partition(is_safetensors);
        files = kept;
        skipped.extend(others.iter().map(|p| {
            p.file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        }));
    }
    if files.is_empty() {
        bail!("{}: no checkpoint files in the step folder", path.display());
    }
    if !skipped.is_empty() {
        skipped.sort();
        progress.note(&format!(
            "{}: not checkpoint files, left out of the chain: {}",
            path.display(),
            skipped.join(", ")
        ));
    }
    files.sort();
    Ok(StepInput { name, files })
}

/// A path's last component as UTF-8.
pub(super) fn file_name(path: &Path) -> Result<String> {
    path.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .with_context(|| format!("{}: not a UTF-8 file name", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::Silent;

    fn step(name: &str) -> StepInput {
        StepInput {
            name: name.into(),
            files: vec![PathBuf::from(format!("{name}.safetensors"))],
        }
    }

    #[test]
    fn run_folders_are_step_with_a_number() {
        assert_eq!(run_step_number("step-000025"), Some(25));
        assert_eq!(run_step_number("step_25"), Some(25));
        assert_eq!(run_step_number("step25"), Some(25));
        for name in ["step", "step-", "steps-3", "step-3a", "ckpt-3"] {
            assert_eq!(run_step_number(name), None, "{name}");
        }
    }

    #[test]
    fn the_last_run_of_digits_numbers_a_name() {
        assert_eq!(last_number("ckpt-300"), Some(300));
        assert_eq!(last_number("run2-step-40.final"), Some(40));
        assert_eq!(last_number("model"), None);
    }

    #[test]
    fn numbered_steps_given_one_by_one_must_increase() {
        assert!(check_given_order(&[step("ckpt-9"), step("ckpt-10"), step("ckpt-100")]).is_ok());
        let e = check_given_order(&[step("ckpt-10"), step("ckpt-9")]).unwrap_err();
        assert!(
            e.to_string()
                .contains("steps out of order: `ckpt-9` (number 9) is given after `ckpt-10`"),
            "{e}"
        );
        // Names without numbers are taken in the order given.
        assert!(check_given_order(&[step("b"), step("a")]).is_ok());
    }

    #[test]
    fn a_run_directory_orders_its_step_folders_by_number() {
        let dir = std::env::temp_dir().join(format!("bitlens-steps-{}", std::process::id()));
        for s in ["step-10", "step-2", "step-1", "notes"] {
            std::fs::create_dir_all(dir.join(s)).unwrap();
            std::fs::write(dir.join(s).join("model.safetensors"), b"x").unwrap();
        }
        std::fs::write(dir.join("step-2").join("config.json"), b"{}").unwrap();
        let steps = input_steps(std::slice::from_ref(&dir), &Silent).unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["step-1", "step-2", "step-10"]);
        assert!(steps.iter().all(|s| s.files.len() == 1));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
