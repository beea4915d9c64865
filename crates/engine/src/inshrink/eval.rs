//! The paper's quality threshold (Inshrinkerator, paper 002 §5.1): the relative degradation of
//! the model's loss as the user's `--eval-cmd` measures it on every candidate checkpoint the search
//! asks about (written as a safetensors file of the original dtypes to a temporary directory).

use bitlens_inshrink::search::{QualityError, Trial, Verdict};
use bitlens_inshrink::Quality;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The quality threshold measured by the user's command on each candidate checkpoint.
pub(super) struct EvalCommand<'a> {
    pub cmd: String,
    pub max_degradation: f64,
    pub original_loss: f64,
    /// The original file's header bytes (`8 + N`).
    pub prefix: &'a [u8],
    /// Per tensor of the file, in file order: its original bytes (empty for searched tensors)
    /// and, for searched tensors, its index in the trial.
    pub tensors: &'a [(Vec<u8>, Option<usize>)],
    pub dir: PathBuf,
    pub evaluations: usize,
    pub time: Duration,
}

/// `cmd` with `{}` replaced by `path`, single-quoted for `sh`.
fn command_for(cmd: &str, path: &Path) -> String {
    let quoted = format!("'{}'", path.display().to_string().replace('\'', r"'\''"));
    cmd.replace("{}", &quoted)
}

/// Runs `cmd` on `path` through `sh -c` and reads the loss: the last number on its stdout.
pub(super) fn run_eval(cmd: &str, path: &Path) -> Result<f64, QualityError> {
    let line = command_for(cmd, path);
    let out = Command::new("sh")
        .arg("-c")
        .arg(&line)
        .output()
        .map_err(|e| QualityError(format!("--eval-cmd `{line}` did not start: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(3).collect();
        return Err(QualityError(format!(
            "--eval-cmd `{line}` failed ({}){}",
            out.status,
            if tail.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
                )
            }
        )));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .split_whitespace()
        .rev()
        .find_map(|w| {
            w.trim_matches(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '-'))
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
        })
        .ok_or_else(|| {
            QualityError(format!(
                "--eval-cmd `{line}` printed no number on stdout (the loss is the last number it prints)"
            ))
        })
}

impl Quality for EvalCommand<'_> {
    fn name(&self) -> String {
        format!(
            "loss degradation ≤ {} by --eval-cmd `{}` (original loss {})",
            self.max_degradation, self.cmd, self.original_loss
        )
    }

    fn check(&mut self, trial: &Trial<'_>) -> Result<Verdict, QualityError> {
        let started = Instant::now();
        let path = self.dir.join("candidate.safetensors");
        let write = || -> std::io::Result<()> {
            let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
            f.write_all(self.prefix)?;
            for (bytes, searched) in self.tensors {
                match searched {
                    Some(i) => f.write_all(&trial.restored_bytes(*i))?,
                    None => f.write_all(bytes)?,
                }
            }
            f.flush()
        };
        write().map_err(|e| {
            QualityError(format!(
                "cannot write the candidate {}: {e}",
                path.display()
            ))
        })?;
        let loss = run_eval(&self.cmd, &path)?;
        self.evaluations += 1;
        self.time += started.elapsed();
        let degradation = (loss - self.original_loss) / self.original_loss;
        Ok(Verdict {
            accepted: degradation <= self.max_degradation,
            score: degradation,
        })
    }
}

impl Drop for EvalCommand<'_> {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
