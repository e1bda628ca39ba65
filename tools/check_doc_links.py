#!/usr/bin/env python3
"""Checks that the documentation's links and results citations name files that exist.

Reads README.md and every docs/*.md under --root and checks:
  - every markdown link or image target, `](target)` and `[label]: target`, resolved from
    the linking file's folder (http(s), mailto and #anchor-only links are skipped; a
    #fragment is stripped: only the file is checked, not the heading);
  - every backquoted path that starts with bench/results/, resolved from the root;
  - every backquoted bare results file name (no folder) that ends in -intel-xeon.txt,
    -amd-epyc.txt or -amd-epyc-avx2.txt: the figures' citations, files in bench/results/.
    A brace form, `step-cpu-resnet18-64px-b32-{intel-xeon,amd-epyc-avx2}.txt`, expands to
    each name; a glob or placeholder (`*-amd-epyc-avx2.txt`, `NAME-<cpu>.txt`) is skipped.
Fenced code blocks are skipped: they hold commands, not citations.

    python3 tools/check_doc_links.py [--root DIR]

Prints one line per missing target (file:line: what is missing) and exits 1 if there is
any; else prints a one-line summary and exits 0. Standard library only.
"""
import argparse
import os
import re
import sys

RESULTS = "bench/results/"
RESULT_SUFFIXES = ("-intel-xeon.txt", "-amd-epyc.txt", "-amd-epyc-avx2.txt")

# A link or image target: `](target)`, the target up to the first space (a title may follow).
INLINE_LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+[^)]*)?\)")
# A reference definition: `[label]: target` at the start of a line.
REFERENCE_LINK = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
# An inline code span; it may wrap onto the next line, as markdown allows.
CODE_SPAN = re.compile(r"`([^`]+)`")
# What a cited path may hold: a single token, braces allowed, no globs or placeholders.
PATH_TOKEN = re.compile(r"^[A-Za-z0-9._,{}/+-]+$")
FENCE = re.compile(r"^\s*(```|~~~)")


def default_root():
    # The script lives in tools/, one level below the repository root.
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def without_fences(text):
    """The text with fenced code blocks blanked, line count kept, so offsets map to lines."""
    lines = text.split("\n")
    inside = False
    for i, line in enumerate(lines):
        if FENCE.match(line):
            inside = not inside
            lines[i] = ""
        elif inside:
            lines[i] = ""
    return "\n".join(lines)


def expand_braces(name):
    """`a-{x,y}.txt` -> [`a-x.txt`, `a-y.txt`], the first group first, recursively."""
    match = re.search(r"\{([^{}]*)\}", name)
    if not match:
        return [name]
    expanded = []
    for choice in match.group(1).split(","):
        expanded.extend(expand_braces(name[:match.start()] + choice + name[match.end():]))
    return expanded


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def link_targets(text):
    """(offset, target) of every link that names a local file, fragment stripped."""
    # Code spans are blanked first: a `](x)` inside backquotes is text, not a link.
    blanked = CODE_SPAN.sub(lambda m: "`" + " " * len(m.group(1)) + "`", text)
    found = [(m.start(1), m.group(1)) for m in INLINE_LINK.finditer(blanked)]
    found += [(m.start(1), m.group(1)) for m in REFERENCE_LINK.finditer(blanked)]
    targets = []
    for offset, target in sorted(found):
        if re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue  # http(s), mailto, ... and anchors within the same file
        path = target.split("#", 1)[0]
        if path:
            targets.append((offset, path))
    return targets


def results_citations(text):
    """(offset, path from the root) of every backquoted results file the text cites."""
    citations = []
    for m in CODE_SPAN.finditer(text):
        token = m.group(1).strip()
        if not PATH_TOKEN.match(token):
            continue
        for name in expand_braces(token):
            if name.startswith(RESULTS):
                citations.append((m.start(1), name))
            elif "/" not in name and name.endswith(RESULT_SUFFIXES):
                citations.append((m.start(1), RESULTS + name))
    return citations


def check_file(root, relative):
    """Returns (links checked, citations checked, list of missing-target lines)."""
    path = os.path.join(root, relative)
    with open(path, encoding="utf-8") as f:
        text = without_fences(f.read())
    folder = os.path.dirname(path)
    missing = []  # (line, message), reported in line order
    links = link_targets(text)
    for offset, target in links:
        if not os.path.exists(os.path.normpath(os.path.join(folder, target))):
            missing.append((line_of(text, offset), f"missing link target {target}"))
    citations = results_citations(text)
    for offset, cited in citations:
        if not os.path.exists(os.path.join(root, cited)):
            missing.append((line_of(text, offset), f"missing results file {cited}"))
    return len(links), len(citations), [f"{relative}:{line}: {message}"
                                        for line, message in sorted(missing)]


def main():
    parser = argparse.ArgumentParser(
        prog=os.path.basename(sys.argv[0]),
        description="Check that README.md's and docs/*.md's links and bench/results "
                    "citations name files that exist.")
    parser.add_argument("--root", default=default_root(),
                        help="the repository root (default: the folder above tools/)")
    args = parser.parse_args()
    root = os.path.abspath(args.root)

    files = []
    if os.path.isfile(os.path.join(root, "README.md")):
        files.append("README.md")
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted(os.path.join("docs", name) for name in os.listdir(docs)
                        if name.endswith(".md"))
    if not files:
        print(f"check_doc_links: no README.md or docs/*.md under {root}", file=sys.stderr)
        return 1

    total_links = total_citations = 0
    all_missing = []
    for relative in files:
        links, citations, missing = check_file(root, relative)
        total_links += links
        total_citations += citations
        all_missing += missing
    for line in all_missing:
        print(line)
    if all_missing:
        print(f"check_doc_links: {len(all_missing)} missing of {total_links} links and "
              f"{total_citations} results citations in {len(files)} files")
        return 1
    print(f"check_doc_links: {len(files)} files, {total_links} links and {total_citations} "
          f"results citations, every target present")
    return 0


if __name__ == "__main__":
    sys.exit(main())
