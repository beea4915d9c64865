//! Per-element importance (Inshrinkerator §4.1) and the layer types of §4.2.
//!
//! The paper ranks by magnitude `|w|` and by first-order sensitivity `|w · ∂L/∂w|`, with the
//! gradient an exponential moving average collected during training (§4.5). A checkpoint holds no
//! gradients, but an Adam checkpoint holds the second moment `v = EMA(g²)`, the usual diagonal
//! (empirical) Fisher estimate; `sqrt(v)` is the RMS gradient over the EMA window, the natural
//! stand-in for the paper's averaged `|g|` (an average of signed gradients would cancel, the RMS
//! does not). So the sensitivity used here is `|w| · sqrt(v)`. It ranks elements exactly as
//! `w² · v` (the Fisher/OBD saliency `½ F w²`), so both readings agree on every threshold.

use crate::config::Metric;

/// Layer types that get their own thresholds (§4.2: "per-layer type pruning").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LayerKind {
    /// Token / position embeddings and tied output heads (searched separately, §5).
    Embedding,
    /// Attention projections (query, key, value, output).
    Attention,
    /// Other linear and convolution weights.
    Linear,
    /// Normalisation weights and all biases.
    NormBias,
}

impl LayerKind {
    /// All kinds, in a fixed order.
    pub const ALL: [LayerKind; 4] = [
        LayerKind::Embedding,
        LayerKind::Attention,
        LayerKind::Linear,
        LayerKind::NormBias,
    ];

    /// Short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            LayerKind::Embedding => "embedding",
            LayerKind::Attention => "attention",
            LayerKind::Linear => "linear",
            LayerKind::NormBias => "norm/bias",
        }
    }

    /// Classifies a tensor by its name (case-insensitive substrings of the common PyTorch, Hugging
    /// Face and GGUF spellings). Norm/bias is tested first, so an embedding's LayerNorm is a norm.
    pub fn classify(name: &str) -> LayerKind {
        let n = name.to_ascii_lowercase();
        let has = |keys: &[&str]| keys.iter().any(|k| n.contains(k));
        if n.ends_with("bias")
            || has(&[
                "norm",
                "ln_",
                ".ln",
                "_ln",
                "layernorm",
                "rmsnorm",
                "bn",
                "batchnorm",
            ])
        {
            LayerKind::NormBias
        } else if n
            .split('.')
            .any(|seg| matches!(seg, "pos" | "position" | "positions" | "positional"))
            || has(&[
                "embed",
                "wte",
                "wpe",
                "tok_embeddings",
                "token_embd",
                "lm_head",
            ])
        {
            LayerKind::Embedding
        } else if has(&[
            "attn",
            "attention",
            "q_proj",
            "k_proj",
            "v_proj",
            "o_proj",
            "query",
            "key",
            "value",
            "qkv",
        ]) {
            LayerKind::Attention
        } else {
            LayerKind::Linear
        }
    }
}

/// `|w|` for each element.
pub fn magnitude(weights: &[f32]) -> Vec<f32> {
    weights.iter().map(|w| w.abs()).collect()
}

/// `|w| · sqrt(v)` for each element (see the module doc); `v` is Adam's second moment of the same
/// length (negative or NaN moments count as 0).
pub fn sensitivity(weights: &[f32], second_moment: &[f32]) -> Vec<f32> {
    weights
        .iter()
        .zip(second_moment)
        .map(|(w, v)| w.abs() * v.max(0.0).sqrt())
        .collect()
}

/// The importance of each element under `metric`; `None` for [`Metric::Sensitivity`] without a
/// second moment, with one of the wrong length, or with one that has no positive entry (an
/// optimizer state saved before its first step): every sensitivity would be 0, a tie that ranks
/// nothing (the protect threshold would be 0 and protect every element), so the search uses
/// magnitude alone there.
pub fn importance(
    weights: &[f32],
    second_moment: Option<&[f32]>,
    metric: Metric,
) -> Option<Vec<f32>> {
    match (metric, second_moment) {
        (Metric::Magnitude, _) => Some(magnitude(weights)),
        (Metric::Sensitivity, Some(v))
            if v.len() == weights.len() && v.iter().any(|&x| x > 0.0) =>
        {
            Some(sensitivity(weights, v))
        }
        (Metric::Sensitivity, _) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_minilm_and_gpt_names() {
        use LayerKind::*;
        for (name, kind) in [
            ("embeddings.word_embeddings.weight", Embedding),
            ("embeddings.LayerNorm.weight", NormBias),
            ("encoder.layer.0.attention.self.query.weight", Attention),
            ("encoder.layer.0.attention.self.query.bias", NormBias),
            ("encoder.layer.0.intermediate.dense.weight", Linear),
            ("transformer.h.0.attn.c_attn.weight", Attention),
            ("transformer.wte.weight", Embedding),
            ("pos.weight", Embedding),
            ("encoder.pos_proj.weight", Linear),
            ("model.layers.0.input_layernorm.weight", NormBias),
            ("conv1.weight", Linear),
        ] {
            assert_eq!(LayerKind::classify(name), kind, "{name}");
        }
    }

    #[test]
    fn sensitivity_is_w_times_rms_gradient() {
        let s = sensitivity(&[-2.0, 3.0, 1.0], &[4.0, 0.25, -1.0]);
        assert_eq!(s, vec![4.0, 1.5, 0.0]);
        assert!(importance(&[1.0], None, Metric::Sensitivity).is_none());
        // A moment saved before the first step ranks nothing.
        assert!(importance(&[1.0, 2.0], Some(&[0.0, 0.0]), Metric::Sensitivity).is_none());
        assert!(importance(&[1.0, 2.0], Some(&[0.0, 1e-12]), Metric::Sensitivity).is_some());
        assert_eq!(
            importance(&[-1.5], None, Metric::Magnitude),
            Some(vec![1.5])
        );
    }
}
