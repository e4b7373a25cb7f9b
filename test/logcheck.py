#!/usr/bin/python3
"""test/logcheck.py: read a PostgreSQL server log for what no input may cause.

Usage: logcheck.py SERVER_LOG [SRC_DIR]

Reports, and exits 1 if it finds any of:
  - a backend that died ("server process ... was terminated by signal",
    "terminating any other active server processes"), with the statement it
    was running;
  - a PANIC, or a failed assertion (TRAP: lines);
  - an internal error (SQLSTATE XX000, what elog(ERROR) raises) from
    tablestore: its LOCATION is one of the C files in SRC_DIR (default
    src/).

XX000 errors raised by PostgreSQL's own code are listed but do not fail the
check, those in statements calling a tablestore function separately for
review: sqlsmith's random SQL meets PostgreSQL's own rough edges too (e.g.
"invalid INTERVAL typmod" from timestamp.c), and failing on those would make
the suite fail at random.  The log must have been written with
log_error_verbosity = verbose, so that each error carries its SQLSTATE and
location.  Long statements are clipped in the report.
"""
import os
import re
import sys

CLIP = 400


def clip(s):
    s = s.strip()
    return s if len(s) <= CLIP else s[:CLIP] + "... [%d characters]" % len(s)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    logfile = sys.argv[1]
    srcdir = sys.argv[2] if len(sys.argv) > 2 else "src"
    ours = {f for f in os.listdir(srcdir) if f.endswith(".c")}

    # Join continuation lines (those without the "timestamp [pid] " prefix)
    # to the entry they belong to.
    prefix = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \S+ \[\d+\] ")
    entries = []
    with open(logfile, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if prefix.match(line) or not entries or line.startswith("TRAP:"):
                entries.append(line)
            else:
                entries[-1] += "\n" + line

    crashes, panics, ours_xx, near_xx, other_xx = [], [], [], [], []
    for i, e in enumerate(entries):
        body = prefix.sub("", e, count=1)
        if re.search(r"server process \(PID \d+\) was terminated by signal|was terminated by signal", body):
            running = ""
            if i + 1 < len(entries) and "Failed process was running:" in entries[i + 1]:
                running = entries[i + 1].split("Failed process was running:", 1)[1]
            crashes.append(clip(body.splitlines()[0]) + "\n      running: " + clip(running))
        elif "terminating any other active server processes" in body:
            # the restart after a crash: counted above unless the backend
            # died some other way (exited with a non-zero code, say)
            if not any("terminated by signal" in entries[j] for j in range(max(0, i - 3), i)):
                crashes.append(clip(body) + " (after: " + clip(prefix.sub("", entries[i - 1], count=1)) + ")")
        elif body.startswith("PANIC:") or e.startswith("TRAP:"):
            panics.append(clip(body))
        elif re.match(r"(ERROR|FATAL):  XX000: ", body):
            location, statement = "", ""
            for j in range(i + 1, min(i + 4, len(entries))):
                b = prefix.sub("", entries[j], count=1)
                if b.startswith("LOCATION:"):
                    location = b.split(":", 1)[1].strip()
                elif b.startswith("STATEMENT:"):
                    statement = b.split(":", 1)[1]
                    break
                elif re.match(r"(ERROR|FATAL|LOG|WARNING|PANIC):", b):
                    break
            m = re.search(r", (\S+\.c):\d+$", location)
            where = m.group(1) if m else ""
            item = "%s\n      at %s\n      statement: %s" % (clip(body.splitlines()[0]), location, clip(statement))
            if where in ours:
                ours_xx.append(item)
            elif re.search(r"\btablestore\.[a-z_]+\s*\(", statement):
                near_xx.append(item)
            else:
                other_xx.append(item)

    def show(title, items):
        if items:
            print("%s (%d):" % (title, len(items)))
            seen = set()
            for it in items:
                if it not in seen:
                    print("  - " + it)
                    seen.add(it)

    show("backend crashes", crashes)
    show("PANICs / failed assertions", panics)
    show("internal errors (XX000) from tablestore", ours_xx)
    show("internal errors (XX000) raised by PostgreSQL's code in statements that call tablestore "
         "(review: random SQL meets PostgreSQL's own rough edges too), not counted", near_xx)
    show("internal errors (XX000) from PostgreSQL itself, not counted", other_xx)
    bad = len(crashes) + len(panics) + len(ours_xx)
    print("logcheck: %d crash(es), %d PANIC/assertion(s), %d XX000 from tablestore%s" % (
        len(crashes), len(panics), len(ours_xx), "" if bad == 0 else "  => FAIL"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
