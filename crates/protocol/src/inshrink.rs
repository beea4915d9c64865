//! What the page asks of an Inshrinkerator compression (paper 002): its error budget. What such a
//! snapshot says about itself is `bitlens_report::inshrink`.

use serde::{Deserialize, Serialize};

/// The options of an Inshrinkerator compression the page asks for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct InshrinkOptions {
    /// The model-free proxy's budget: per-tensor relative L2 error `‖w − ŵ‖ / ‖w‖` (the CLI's
    /// `--max-error`).
    pub max_error: f64,
}
