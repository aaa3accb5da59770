#!/usr/bin/env python3
"""The docs cannot drift from code that compiles, nor link to nothing.

1. Every ```cpp block in README.md and docs/**/*.md must be a run of whole lines of one region
   marked in examples/tutorial/*.cpp (`// [snippet:NAME]` ... `// [/snippet]`), compared with
   the whitespace of each line normalized and blank lines dropped. Code that is deliberately not
   a program (a signature) uses another fence language (```text) and is not checked.
2. Every relative link in those files must name an existing file, and its #anchor a heading of
   that file (GitHub's slugs).

  check_snippets.py [ROOT]         check the tree at ROOT (default: this file's repository)
  check_snippets.py --self-test    check an altered copy of the tree, which must fail
"""
import pathlib
import re
import shutil
import sys
import tempfile

FENCE = re.compile(r"^```(\S*)\s*$")
OPEN = re.compile(r"^\s*// \[snippet:([\w-]+)\]\s*$")
CLOSE = re.compile(r"^\s*// \[/snippet\]\s*$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def norm(lines):
    return [" ".join(l.split()) for l in lines if l.strip()]


def regions(root, errors):
    found = {}
    for src in sorted((root / "examples/tutorial").glob("*.cpp")):
        name, body = None, []
        for n, line in enumerate(src.read_text().splitlines(), 1):
            if OPEN.match(line):
                if name:
                    errors.append(f"{src}:{n}: region '{name}' not closed before the next")
                name, body = OPEN.match(line)[1], []
            elif CLOSE.match(line):
                if not name:
                    errors.append(f"{src}:{n}: [/snippet] without a region")
                else:
                    found[f"{src.name}:{name}"] = norm(body)
                name = None
            elif name:
                body.append(line)
        if name:
            errors.append(f"{src}: region '{name}' never closed")
    return found


def doc_files(root):
    return [root / "README.md"] + sorted((root / "docs").rglob("*.md"))


def blocks(path):
    """(line, language, lines) of each fenced block."""
    out, lang, start, body = [], None, 0, []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if m and lang is None:
            lang, start, body = m[1], n, []
        elif line.strip() == "```" and lang is not None:
            out.append((start, lang, body))
            lang = None
        elif lang is not None:
            body.append(line)
    return out


def contains(haystack, needle):
    k = len(needle)
    return any(haystack[i:i + k] == needle for i in range(len(haystack) - k + 1))


def slug(heading):
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path):
    inside, out = False, set()
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            inside = not inside
        elif not inside and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def check(root):
    errors = []
    found = regions(root, errors)
    checked = other = 0
    for doc in doc_files(root):
        rel = doc.relative_to(root)
        for line, lang, body in blocks(doc):
            if lang != "cpp":
                other += lang.startswith("cpp")
                continue
            checked += 1
            want = norm(body)
            if not want or not any(contains(r, want) for r in found.values()):
                errors.append(f"{rel}:{line}: a cpp block found in no region of examples/tutorial/*.cpp")
        text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            dest = (doc.parent / file).resolve() if file else doc
            if not dest.exists():
                errors.append(f"{rel}: link to a missing file: {target}")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                errors.append(f"{rel}: link to a missing heading: {target}")
    for e in errors:
        print("FAIL", e)
    print(f"{checked} cpp blocks checked against {len(found)} regions; {other} blocks marked cpp-*; "
          f"{len(errors)} problems")
    return not errors


def self_test(root):
    """An altered cpp block and a broken link must each make the check fail."""
    ok = True
    for what, alter in [("an altered snippet", lambda t: t.replace("async_acquire_for(5s", "async_acquire_for(6s", 1)),
                        ("a broken link", lambda t: t + "\n[gone](docs/no-such-page.md)\n")]:
        with tempfile.TemporaryDirectory() as tmp:
            copy = pathlib.Path(tmp)
            shutil.copytree(root, copy, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("build", ".git", "node_modules"))
            readme = copy / "README.md"
            altered = alter(readme.read_text())
            if altered == readme.read_text():
                print(f"SELF-TEST: could not make {what}")
                return False
            readme.write_text(altered)
            print(f"-- with {what} (must fail):")
            if check(copy):
                print(f"SELF-TEST FAILED: {what} passed")
                ok = False
    return ok


if __name__ == "__main__":
    here = pathlib.Path(__file__).resolve().parents[2]
    if sys.argv[1:2] == ["--self-test"]:
        sys.exit(0 if check(here) and self_test(here) else 1)
    sys.exit(0 if check(pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here) else 1)
