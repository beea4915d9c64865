#!/usr/bin/env python3
"""Keeps section 3 of docs/FORMAT.md (the PLMC / LMC stream) equal to the codec crate's module
documentation, which is the authoritative spec next to the code.

  scripts/format-doc.py          rewrite the section
  scripts/format-doc.py --check  exit 1 if it is out of date (scripts/test.sh runs this)
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "FORMAT.md"
MODULES = [
    ("3.1 PLMC stream (segments)", "plmc/mod.rs"),
    ("3.2 LMC stream (blocks)", "lmc/mod.rs"),
    ("3.3 Byte grouping", "byte_group/mod.rs"),
    ("3.4 Huffman block body", "huffman/mod.rs"),
    ("3.5 Runs", "rle.rs"),
]
BEGIN, END = "<!-- BEGIN generated from crates/codecs module docs -->", "<!-- END generated -->"


def module_doc(name):
    lines = []
    for line in (ROOT / "crates" / "codecs" / "src" / name).read_text().splitlines():
        if not line.startswith("//!"):
            if lines:
                break
            continue
        text = line[3:]
        lines.append(text[1:] if text.startswith(" ") else text)
    text = "\n".join(lines)
    text = re.sub(r"\[`([^`\]]+)`\]", r"`\1`", text)  # rustdoc links → code spans
    text = re.sub(r"^## ", "#### ", text, flags=re.M)
    return text.strip() + "\n"


def generated():
    parts = [BEGIN, ""]
    for title, name in MODULES:
        parts += [f"### {title}", "", f"(from `crates/codecs/src/{name}`)", "", module_doc(name)]
    parts.append(END)
    return "\n".join(parts)


def main():
    doc = DOC.read_text()
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    new = doc[:start] + generated() + doc[end:]
    if "--check" in sys.argv:
        if new != doc:
            print("docs/FORMAT.md section 3 is out of date: run scripts/format-doc.py", file=sys.stderr)
            sys.exit(1)
        return
    DOC.write_text(new)


if __name__ == "__main__":
    main()
