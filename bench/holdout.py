"""Make the held-out corpus: real outputs of commands run on this machine, never tuned on.

    .venv/bin/python bench/holdout.py [--out bench/.holdout] [--only CATEGORY]

The dev corpus (shared/corpus/dev) is what the compressor was tuned on. This
one is made here, from other commands and other inputs (this repository,
the system's own files, small programs written below), for all 14 kinds, so
`bench/compress.py --corpus bench/.holdout` shows whether the figures hold on
output nobody looked at while tuning. Look at its figures, not its samples.

Writes `<out>/manifest.jsonl` (id, category, path, chars, command, cwd, rc,
truncated) beside one file per output, as the dev corpus has. Each command
runs with bash in a scratch directory under `<out>/work`, with a time limit;
output is capped at MAX_CHARS. Nothing here needs the network: the download
meters fetch from an HTTP server on the loopback that this script starts.
"""

from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / ".holdout"
MAX_CHARS = 400_000
TIMEOUT_S = 120
PY = sys.executable
SITE = next(Path(sys.prefix).glob("lib/python3*/site-packages"), Path(sys.prefix))


@dataclass(frozen=True)
class Job:
    category: str
    command: str


# {repo}: this repository; {work}: the scratch directory; {py}: this Python;
# {site}: its site-packages; {port}: the loopback HTTP server.
JOBS = [
    # build and package logs
    Job(
        "build_logs",
        "cmake -S {work}/cproj -B {work}/cbuild 2>&1 && cmake --build {work}/cbuild --verbose 2>&1",
    ),
    Job("build_logs", "make -C {work}/mk -k -j1 2>&1"),
    Job("build_logs", "cd {work}/crate && cargo build -v --offline 2>&1"),
    Job("build_logs", "cd {work}/pyt && {py} -m pytest -v -p no:cacheprovider test_gen.py 2>&1"),
    Job(
        "build_logs",
        "cd {repo} && {py} -m pytest -v -p no:cacheprovider"
        " tests/plane/compress/test_refs.py tests/plane/compress/test_retrieve.py 2>&1",
    ),
    Job(
        "build_logs",
        "{py} -m pip wheel -v --no-deps --no-build-isolation --no-index -w {work}/wh {repo} 2>&1",
    ),
    # compiler and linter diagnostics
    Job("compiler", "gcc -Wall -Wextra -Wshadow -c {work}/diag/warn.c -o /dev/null 2>&1"),
    Job("compiler", "g++ -std=c++17 -fsyntax-only {work}/diag/tmpl.cpp 2>&1 | head -2000"),
    Job(
        "compiler",
        "rustc --edition 2021 --crate-type lib --emit=metadata -o /dev/null"
        " {work}/diag/broken.rs 2>&1",
    ),
    Job(
        "compiler",
        "cd {work}/diag && cp /usr/lib/python3.11/getopt.py /usr/lib/python3.11/shlex.py"
        " /usr/lib/python3.11/netrc.py . && {py} -m mypy --strict --no-incremental"
        " --cache-dir=/dev/null getopt.py shlex.py netrc.py 2>&1",
    ),
    Job(
        "compiler",
        "cd {work}/diag && cp /usr/lib/python3.11/argparse.py . && {site}/../../../bin/"
        "ruff check --no-cache --isolated --select ALL --output-format concise argparse.py 2>&1",
    ),
    Job("compiler", "javac -Xlint:all -d {work}/diag/cls {work}/diag/Broken.java 2>&1"),
    # config
    Job("config", "cat /etc/login.defs"),
    Job("config", "cat {repo}/pyproject.toml"),
    Job("config", "cat {repo}/agents.yaml"),
    Job("config", "cat /etc/gai.conf /etc/nsswitch.conf /etc/sysctl.conf 2>&1"),
    Job("config", "cd {repo} && git config --list --show-origin 2>&1"),
    Job("config", "cat /etc/security/limits.conf /etc/logrotate.conf 2>&1"),
    # diffs
    Job("diffs", "cd {repo} && git log -p -n 12 -- plane/agents plane/tools"),
    Job("diffs", "cd {repo} && git diff HEAD~40 HEAD -- tui"),
    Job("diffs", "cd {repo} && git show --stat --patch HEAD~3"),
    Job("diffs", "cd {work} && diff -u orig.py edited.py"),
    Job("diffs", "cd {repo} && git log -p --follow -n 8 -- plane/economy/compress/formats/logs.py"),
    # HTML
    Job("html", "cd {work} && {py} -m pydoc -w json >/dev/null && cat json.html"),
    Job("html", "cd {work} && {py} -m pydoc -w argparse >/dev/null && cat argparse.html"),
    Job("html", "cat /usr/share/doc/bzip2/manual.html"),
    Job("html", "cat /usr/share/doc/base-passwd/users-and-groups.html"),
    Job("html", "{site}/../../../bin/markdown-it {repo}/README.md"),
    # JSON
    Job(
        "json",
        "{py} -c 'import json, sysconfig; print(json.dumps(sysconfig.get_config_vars(),"
        " indent=2, default=str))'",
    ),
    Job("json", "node -e 'console.log(JSON.stringify(process.config, null, 2))'"),
    Job(
        "json",
        'cd {repo} && git log -n 400 --format=\'{{"commit": "%H", "author": "%an",'
        ' "date": "%aI", "subject": "%f"}}\'',
    ),
    Job(
        "json",
        '{py} -c \'import json, pathlib; print(json.dumps([{{"path": str(p), "html":'
        ' p.read_text(errors="replace")}} for p in sorted(pathlib.Path("/usr/share/doc")'
        '.glob("*/*.html"))[:6]]))\'',
    ),
    Job("json", "lsblk -J -O 2>&1; {py} -m pip list -v --format=json"),
    Job("json", "cat /usr/lib/node_modules/npm/package.json"),
    # listings
    Job("listings", "ls -la /usr/bin | head -2500"),
    Job("listings", "find /usr/include -name '*.h' | sort | head -3000"),
    Job("listings", "ps -eo pid,ppid,user,stat,rss,vsz,args --sort=pid"),
    Job("listings", "objdump -d /usr/bin/ls | head -3000"),
    Job("listings", "readelf -Ws /usr/lib/x86_64-linux-gnu/libm.so.6 | head -3000"),
    Job("listings", "ls -lR {site}/httpx {site}/h11"),
    Job("listings", "cd {work} && tar -czf pyd.tgz -C {site} pydantic && tar -tvzf pyd.tgz"),
    # logs
    Job("logs", "{py} {work}/svc.py 2>&1"),
    Job("logs", "tail -n 3000 /var/log/dpkg.log"),
    Job(
        "logs",
        "strace -f -e trace=network,signal,desc {py} -c 'import socket; s = socket.socket();"
        ' s.settimeout(0.2); s.connect_ex(("127.0.0.1", 9))\' 2>&1 | head -3000',
    ),
    Job(
        "logs",
        "python3 -X importtime -c 'import email.mime.multipart, xml.etree.ElementTree,"
        " http.cookiejar' 2>&1",
    ),
    Job(
        "logs",
        "python3 -W always -c 'import cgi, cgitb, crypt, imghdr, mailcap, nntplib, pipes,"
        " sndhdr, spwd, sunau, telnetlib, uu, xdrlib, chunk, audioop, aifc' 2>&1",
    ),
    Job("logs", "cd {repo} && git log --stat -n 60"),
    # mixed documents
    Job("mixed", "cat {repo}/README.md"),
    Job("mixed", "man -P cat tar 2>/dev/null | col -b | head -3000"),
    Job("mixed", "{py} -m pydoc argparse"),
    Job("mixed", "{site}/../../../bin/mypy --help"),
    Job("mixed", "cat {site}/hypothesis-*.dist-info/METADATA {site}/textual-*.dist-info/METADATA"),
    Job("mixed", "man -P cat grep 2>/dev/null | col -b"),
    # plain text
    Job("plain", "cat /usr/share/common-licenses/GPL-3"),
    Job("plain", "cat /usr/share/common-licenses/Apache-2.0"),
    Job("plain", "cd {repo} && git log --format=%B -n 150"),
    Job("plain", "zcat /usr/share/doc/bash/INTRO.gz /usr/share/doc/bash/README.Debian.gz"),
    Job("plain", "cat /usr/share/doc/bash/copyright"),
    # progress meters and redraws
    Job("progress", "timeout -s INT 9 dd if=/dev/zero of=/dev/null bs=512 status=progress 2>&1"),
    Job(
        "progress",
        "wget --progress=bar:force:noscroll --limit-rate=1m -O /dev/null"
        " http://127.0.0.1:{port}/blob.bin 2>&1",
    ),
    Job("progress", "{py} {work}/meter.py 2>&1"),
    Job(
        "progress",
        "rm -rf {work}/clone && git clone --progress --no-local {repo} {work}/clone 2>&1",
    ),
    # search results
    Job("search", "cd {repo} && grep -rn 'def ' plane | head -4000"),
    Job("search", "grep -rn -C2 'import' /usr/lib/python3.11/email/*.py | head -4000"),
    Job("search", "cd {repo} && git grep -n 'async def'"),
    Job("search", "grep -rn 'TODO\\|XXX' /usr/lib/python3.11 --include=*.py | head -3000"),
    Job("search", "grep -rnw 'self' {site}/httpx | head -4000"),
    Job("search", "grep -rn -i 'error' /usr/include/linux | head -3000"),
    # source code
    Job("source", "cat /usr/include/stdio.h"),
    Job("source", "cat {site}/httpx/_client.py"),
    Job("source", "cat -n {repo}/plane/agents/turn.py"),
    Job("source", "cat /usr/share/doc/git/contrib/fast-import/import-zips.py"),
    Job(
        "source", "grep -h '^    def ' /usr/lib/python3.11/argparse.py /usr/lib/python3.11/shlex.py"
    ),
    Job("source", "cat /usr/include/c++/12/bits/stl_vector.h"),
    Job("source", "cat /usr/lib/node_modules/npm/lib/npm.js"),
    # tables
    Job(
        "tables",
        "find /usr/share -maxdepth 3 -type f -printf '%s\\t%TY-%Tm-%Td\\t%p\\n' | head -3000",
    ),
    Job(
        "tables",
        "sqlite3 -header -csv :memory: 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL"
        " SELECT i + 1 FROM n WHERE i < 1500) SELECT i, i * i AS square, i % 7 AS mod7,"
        ' printf("%08x", i * 2654435761 % 4294967296) AS hash FROM n\'',
    ),
    Job(
        "tables",
        "sqlite3 -box :memory: 'WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1"
        " FROM n WHERE i < 400) SELECT i AS id, i * 3 AS price, (i % 5 = 0) AS flagged FROM n'",
    ),
    Job(
        "tables",
        "dpkg-query -W -f='${{Package}},${{Version}},${{Architecture}},${{Installed-Size}}\\n'",
    ),
    Job("tables", "cd {repo} && git log --format='%h|%an|%ad|%s' --date=iso -n 500"),
    Job("tables", "cat /etc/mime.types 2>/dev/null || cat /etc/protocols"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--only", help="only the jobs of this category")
    args = parser.parse_args()
    out: Path = args.out
    work = out / "work"
    shutil.rmtree(out, ignore_errors=True)
    work.mkdir(parents=True)
    _inputs(work)
    server = _serve(work)
    names = {"repo": ROOT, "work": work, "py": PY, "site": SITE, "port": server.server_port}
    rows = []
    try:
        for job in JOBS:
            if args.only and job.category != args.only:
                continue
            rows.append(_run(job, names, out))
    finally:
        server.shutdown()
    with open(out / "manifest.jsonl", "w", encoding="utf-8") as f:
        for row in rows:
            if row is not None:
                f.write(json.dumps(row) + "\n")
    kept = [r for r in rows if r is not None]
    kinds = sorted({r["category"] for r in kept})
    print(f"{len(kept)} outputs of {len(kinds)} kinds in {out} ({len(rows) - len(kept)} too short)")


def _run(job: Job, names: dict[str, object], out: Path) -> dict[str, object] | None:
    command = job.command.format(**names)
    done = subprocess.run(
        ["bash", "-c", command],
        cwd=names["work"],
        capture_output=True,
        timeout=TIMEOUT_S,
        env={**os.environ, "LC_ALL": "C.UTF-8", "COLUMNS": "100", "TERM": "dumb"},
    )
    text = done.stdout.decode("utf-8", "surrogateescape")
    truncated = len(text) > MAX_CHARS
    text = text[:MAX_CHARS]
    if len(text) < 512:  # below the compressor's threshold: it would measure nothing
        print(f"  skipped ({len(text)} chars): {command[:90]}", file=sys.stderr)
        return None
    digest = hashlib.sha256(command.encode()).hexdigest()[:10]
    sample_id = f"{job.category}-{digest}"
    path = out / f"{sample_id}.txt"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    return {
        "id": sample_id,
        "category": job.category,
        "path": path.name,
        "chars": len(text),
        "command": command,
        "cwd": str(names["work"]),
        "rc": done.returncode,
        "truncated": truncated,
    }


def _serve(root: Path) -> http.server.ThreadingHTTPServer:
    """A loopback HTTP server for the download meters (curl, wget)."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a: object, **k: object) -> None:
            super().__init__(*a, directory=str(root), **k)  # type: ignore[misc, arg-type]

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _inputs(work: Path) -> None:
    """Small programs and files the commands above build, compile, run or compare."""
    (work / "blob.bin").write_bytes(bytes(range(256)) * (12 * 4096))  # 12 MB
    _c_project(work / "cproj")
    _makefile(work / "mk")
    _crate(work / "crate")
    _pytest_file(work / "pyt")
    _diagnostics(work / "diag")
    _log_program(work / "svc.py")
    _meter(work / "meter.py")
    original = Path("/usr/lib/python3.11/shlex.py").read_text()
    (work / "orig.py").write_text(original)
    edited = original.replace("self.", "self._").replace("    def ", "    async def ", 9)
    (work / "edited.py").write_text(edited.replace("'''", '"""'))


def _c_project(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    units = [f"unit{n}" for n in range(24)]
    for n, name in enumerate(units):
        body = f"int {name}(int x) {{ return x * {n} + 1; }}\n"
        if n % 9 == 4:
            body += f"int {name}_unused(void) {{ int spare; return 0; }}\n"
        (root / "src" / f"{name}.c").write_text(body)
    main = "".join(f"int {u}(int);\n" for u in units)
    main += "#include <stdio.h>\nint main(void) { int t = 0;\n"
    main += "".join(f"  t += {u}(t);\n" for u in units) + '  printf("%d\\n", t); return 0; }\n'
    (root / "src" / "main.c").write_text(main)
    sources = " ".join(f"src/{u}.c" for u in [*units, "main"])
    (root / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(holdout C)\n"
        'set(CMAKE_C_FLAGS "${CMAKE_C_FLAGS} -Wall -Wextra")\n'
        f"add_library(units STATIC {' '.join(f'src/{u}.c' for u in units)})\n"
        "add_executable(app src/main.c)\ntarget_link_libraries(app units)\n"
    )
    del sources


def _makefile(root: Path) -> None:
    root.mkdir(parents=True)
    objects = []
    for n in range(40):
        name = f"part{n:02d}"
        code = f"double {name}(double v) {{ return v / {n + 1}.0; }}\n"
        if n == 17:
            code = f"double {name}(double v) {{ return v / undeclared_{n}; }}\n"
        if n in (8, 29):
            code += f"static int {name}_helper(void) {{ return {n}; }}\n"
        (root / f"{name}.c").write_text(code)
        objects.append(f"{name}.o")
    (root / "Makefile").write_text(
        "CFLAGS = -O1 -Wall -Wextra\n"
        f"all: {' '.join(objects)}\n\t@echo linked {len(objects)} objects\n"
        "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
    )


def _crate(root: Path) -> None:
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(
        '[package]\nname = "holdout"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n'
    )
    lib = "".join(
        f"pub fn step_{n}(x: u64) -> u64 {{ let unused_{n} = {n}; x.wrapping_mul({n + 3}) }}\n"
        for n in range(30)
    )
    (root / "src" / "lib.rs").write_text(lib)


def _pytest_file(root: Path) -> None:
    root.mkdir(parents=True)
    cases = ["import pytest\n\n"]
    for n in range(90):
        if n % 23 == 7:
            cases.append(
                f"def test_case_{n}():\n    assert {n} * 2 == {n * 2 + 1}, 'off by one'\n\n"
            )
        elif n % 31 == 11:
            cases.append(f"def test_case_{n}():\n    raise KeyError('missing_{n}')\n\n")
        elif n % 17 == 3:
            cases.append(
                f"@pytest.mark.skip(reason='slow {n}')\ndef test_case_{n}():\n    pass\n\n"
            )
        else:
            cases.append(f"def test_case_{n}():\n    assert sorted([{n}, 1]) == [1, {n}]\n\n")
    (root / "test_gen.py").write_text("".join(cases))


def _diagnostics(root: Path) -> None:
    root.mkdir(parents=True)
    warn = ["#include <stdio.h>\n#include <string.h>\n"]
    for n in range(30):
        warn.append(
            f"int check_{n}(int count, char *name) {{\n  int unused_{n};\n  unsigned u = count;\n"
            f"  if (u < 0) return -1;\n  int count_{n} = strlen(name);\n"
            f"  {{ int count = {n}; (void)count; }}\n  return count_{n} == count;\n}}\n"
        )
    warn.append("int late(void) { return undeclared_function(3); }\n")
    (root / "warn.c").write_text("".join(warn))
    tmpl = [
        "#include <map>\n#include <string>\n#include <vector>\n",
        "template <typename T> struct Box { T value;"
        " T get() const { return value.missing(); } };\n",
    ]
    for n in range(12):
        tmpl.append(
            f"int use_{n}() {{ Box<int> b{{{n}}}; std::map<std::string, std::vector<int>> m;"
            f" m[{n}] = b.get(); return m.size(); }}\n"
        )
    (root / "tmpl.cpp").write_text("".join(tmpl))
    rust = ["use std::collections::HashMapp;\n"]
    for n in range(15):
        rust.append(
            f"pub fn take_{n}(v: Vec<String>) -> usize {{"
            f" let r = &v; drop(v); r.len() + undefined_{n} }}\n"
        )
    (root / "broken.rs").write_text("".join(rust))
    java = ["import java.util.*;\npublic class Broken {\n"]
    for n in range(20):
        java.append(
            f"  public int m{n}(List raw) {{"
            f" List<String> s = raw; return s.size() + missing{n}; }}\n"
        )
    java.append("}\n")
    (root / "Broken.java").write_text("".join(java))


def _log_program(path: Path) -> None:
    """A service's log with ISO timestamps (`2025-03-04T10:00:00.123`), a few warnings,
    errors and one traceback: the shape of a long-running worker's stderr."""
    path.write_text(
        """import logging, sys
logging.basicConfig(stream=sys.stdout, level=logging.DEBUG,
    format="%(asctime)s.%(msecs)03d %(levelname)-7s %(name)s: %(message)s",
    datefmt="%Y-%m-%dT%H:%M:%S")
import time
base = 1741082400.0
time.time = lambda: base + tick[0]
tick = [0.0]
logging.Formatter.converter = time.gmtime
log = logging.getLogger("worker")
db = logging.getLogger("worker.db")
for n in range(5200):
    tick[0] += 0.37
    job = f"job-{n % 97:03d}"
    if n % 5 == 0:
        db.debug("query %s took %.1f ms rows=%d", job, (n * 7) % 113 / 3, n % 40)
    log.info("processed %s in %d ms (queue=%d)", job, 20 + n % 50, (n * 13) % 61)
    if n % 1300 == 640:
        log.warning("slow disk on /var/lib/worker/shard-%d.db: %d ms", n % 4, 900 + n % 300)
    if n == 3111:
        try:
            {}["shard-7"]
        except KeyError:
            log.exception("could not open shard for %s", job)
    if n == 4444:
        log.error("lost connection to db-replica-2.internal:5432; retrying in 5 s")
log.info("shutting down after %d jobs", 5200)
"""
    )


def _meter(path: Path) -> None:
    """A progress meter that redraws one line with carriage returns, as training loops do."""
    path.write_text(
        """import sys
for epoch in range(1, 4):
    for step in range(0, 401, 4):
        bar = "#" * (step // 20) + "." * (20 - step // 20)
        sys.stdout.write(f"\\repoch {epoch}/3 [{bar}] {step}/400 loss={1 / (step + epoch):.4f}")
    sys.stdout.write(f"\\nepoch {epoch} done: val_loss={0.5 / epoch:.4f}\\n")
print("saved checkpoint to runs/exp1/model.pt")
"""
    )


if __name__ == "__main__":
    main()
