//! The code tree of a canonical Huffman code, for drawing (LMC paper §4.2): the paths of the
//! codes as a binary tree, weights summed up from the symbol counts, with only the most frequent
//! symbols as leaves and every subtree without one folded into an "others" node.

use super::Code;

/// A node of the drawn code tree.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TreeNode {
    /// Total count of the symbols below.
    pub weight: u64,
    /// The code bits that lead here, first bit first (`""` at the root).
    pub prefix: String,
    /// What the node is.
    pub kind: NodeKind,
}

/// What a [`TreeNode`] is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum NodeKind {
    /// A symbol.
    Leaf {
        /// The symbol.
        symbol: u16,
    },
    /// An inner node: indices of its children (bit 0, bit 1) in the node list.
    Inner {
        /// The child after a 0 bit.
        zero: usize,
        /// The child after a 1 bit.
        one: usize,
    },
    /// A subtree holding none of the most frequent symbols, folded.
    Others {
        /// How many symbols it holds.
        symbols: usize,
    },
}

/// The code tree of `code`, with the `top` most frequent symbols as leaves and every subtree
/// without one of them folded into an [`NodeKind::Others`] node. Root first.
pub fn tree(code: &Code, top: usize) -> Vec<TreeNode> {
    // The full trie of the codes: node = (children, symbol).
    struct Trie {
        child: [Option<usize>; 2],
        symbol: Option<usize>,
    }
    let mut trie = vec![Trie {
        child: [None, None],
        symbol: None,
    }];
    for (i, s) in code.symbols.iter().enumerate() {
        let mut at = 0;
        for k in (0..u32::from(s.length)).rev() {
            let bit = (s.code >> k & 1) as usize;
            at = match trie[at].child[bit] {
                Some(c) => c,
                None => {
                    trie.push(Trie {
                        child: [None, None],
                        symbol: None,
                    });
                    trie[at].child[bit] = Some(trie.len() - 1);
                    trie.len() - 1
                }
            };
        }
        trie[at].symbol = Some(i);
    }
    let mut by_count: Vec<usize> = (0..code.symbols.len()).collect();
    by_count.sort_by_key(|&i| {
        (
            std::cmp::Reverse(code.symbols[i].count),
            code.symbols[i].symbol,
        )
    });
    let mut shown = vec![false; code.symbols.len()];
    by_count.iter().take(top).for_each(|&i| shown[i] = true);

    /// (weight, symbols, holds a shown symbol) of the subtree at `at`.
    fn summary(trie: &[Trie], code: &Code, shown: &[bool], at: usize) -> (u64, usize, bool) {
        if let Some(i) = trie[at].symbol {
            return (u64::from(code.symbols[i].count), 1, shown[i]);
        }
        trie[at]
            .child
            .iter()
            .flatten()
            .fold((0, 0, false), |acc, &c| {
                let s = summary(trie, code, shown, c);
                (acc.0 + s.0, acc.1 + s.1, acc.2 || s.2)
            })
    }
    fn emit(
        trie: &[Trie],
        code: &Code,
        shown: &[bool],
        at: usize,
        prefix: String,
        out: &mut Vec<TreeNode>,
    ) -> usize {
        let (weight, symbols, any) = summary(trie, code, shown, at);
        let me = out.len();
        let kind = match (trie[at].symbol, any) {
            (Some(i), true) => NodeKind::Leaf {
                symbol: code.symbols[i].symbol,
            },
            (_, false) => NodeKind::Others { symbols },
            (None, true) => NodeKind::Inner { zero: 0, one: 0 },
        };
        out.push(TreeNode {
            weight,
            prefix: prefix.clone(),
            kind,
        });
        if let NodeKind::Inner { .. } = out[me].kind {
            // A complete code: every inner node has both children.
            let [Some(z), Some(o)] = trie[at].child else {
                return me;
            };
            let zero = emit(trie, code, shown, z, format!("{prefix}0"), out);
            let one = emit(trie, code, shown, o, format!("{prefix}1"), out);
            out[me].kind = NodeKind::Inner { zero, one };
        }
        me
    }
    let mut out = Vec::new();
    emit(&trie, code, &shown, 0, String::new(), &mut out);
    out
}
