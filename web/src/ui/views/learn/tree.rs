//! The Huffman code tree as SVG, drawn from the nodes of `bitlens_lessons::huffman::tree` (root first,
//! leaves the most frequent symbols, the rest folded into "others"): leaves spread evenly, each
//! node at the depth of its code length, edges labelled 0 / 1.

use bitlens_lessons::huffman::{NodeKind, TreeNode};
use yew::prelude::*;

const W: f64 = 720.0;
const LEVEL: f64 = 46.0;
const PAD: f64 = 28.0;

/// Leaf order (left to right) and each node's x, by a walk from the root.
fn layout(nodes: &[TreeNode], at: usize, next: &mut f64, x: &mut [f64]) -> f64 {
    let v = match nodes[at].kind {
        NodeKind::Inner { zero, one } => {
            let a = layout(nodes, zero, next, x);
            let b = layout(nodes, one, next, x);
            (a + b) / 2.0
        }
        _ => {
            *next += 1.0;
            *next - 1.0
        }
    };
    x[at] = v;
    v
}

/// The tree of `nodes` with its caption; `top`: how many symbols are leaves.
pub fn view(nodes: &[TreeNode], top: usize) -> Html {
    if nodes.is_empty() {
        return Html::default();
    }
    let mut x = vec![0.0; nodes.len()];
    let mut leaves = 0.0;
    layout(nodes, 0, &mut leaves, &mut x);
    let depth = nodes.iter().map(|n| n.prefix.len()).max().unwrap_or(0) as f64;
    let h = PAD * 2.0 + depth * LEVEL + 50.0;
    let step = (W - 2.0 * PAD) / leaves.max(1.0);
    let px = |i: usize| PAD + (x[i] + 0.5) * step;
    let py = |i: usize| PAD + nodes[i].prefix.len() as f64 * LEVEL;
    let label = |n: &TreeNode| match n.kind {
        NodeKind::Leaf { symbol } => format!("0x{symbol:02x}"),
        NodeKind::Others { symbols } => format!("{symbols} more"),
        NodeKind::Inner { .. } => String::new(),
    };
    let summary = nodes
        .iter()
        .filter_map(|n| match n.kind {
            NodeKind::Leaf { symbol } => Some(format!(
                "0x{symbol:02x}: code {} ({} bits, count {})",
                n.prefix,
                n.prefix.len(),
                n.weight
            )),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("; ");
    let title = format!("The code tree of the {top} most frequent byte values");
    html! {
        <figure class="chart tree" data-chart="huffman-tree" data-nodes={nodes.len().to_string()}>
            <figcaption><span class="chart-title">{ &title }</span>
                <span class="hover">{ "left edge = bit 0, right edge = bit 1; depth = code length" }</span></figcaption>
            <svg viewBox={format!("0 0 {W} {h}")} role="img" aria-label={format!("{title}. {summary}")}>
                <title>{ &title }</title>
                <desc>{ summary }</desc>
                { for nodes.iter().enumerate().filter_map(|(i, n)| match n.kind {
                    NodeKind::Inner { zero, one } => Some(html! {
                        <g class="edges">
                            { for [(zero, "0"), (one, "1")].into_iter().map(|(c, b)| html! {
                                <g>
                                    <line x1={px(i).to_string()} y1={py(i).to_string()} x2={px(c).to_string()} y2={py(c).to_string()} />
                                    <text class="edge-bit" x={((px(i) + px(c)) / 2.0).to_string()} y={((py(i) + py(c)) / 2.0 - 3.0).to_string()}
                                          text-anchor="middle">{ b }</text>
                                </g>
                            }) }
                        </g>
                    }),
                    _ => None,
                }) }
                { for nodes.iter().enumerate().map(|(i, n)| {
                    let kind = match n.kind { NodeKind::Leaf { .. } => "leaf", NodeKind::Others { .. } => "others", NodeKind::Inner { .. } => "inner" };
                    let tip = format!("{} code \"{}\" · weight {}", label(n), n.prefix, n.weight);
                    html! {
                        <g class={classes!("node", kind)}>
                            <circle cx={px(i).to_string()} cy={py(i).to_string()} r={if kind == "inner" { "4" } else { "6" }}>
                                <title>{ tip }</title>
                            </circle>
                            if kind != "inner" {
                                <text x={px(i).to_string()} y={(py(i) + 12.0).to_string()} text-anchor="start"
                                      transform={format!("rotate(60 {} {})", px(i), py(i) + 12.0)}>{ label(n) }</text>
                            }
                        </g>
                    }
                }) }
            </svg>
        </figure>
    }
}
