#!/usr/bin/env python3
"""Opens report pages in headless Chromium and checks what a reader would see.

For every report.html given (or found under a folder given), it fails on:
  - console errors (script errors, failed loads) that Chromium prints while loading the page;
  - text that carries an absolute path of a machine (/tmp/, /root/, /home/, /work/, ...);
  - Markdown syntax left in the page (pipe tables, **bold**, `code`, # headings in text);
  - a chart (svg.chart) without its axis titles or tick labels;
and it can save a screenshot of each page (--screenshot-dir) to look at.

Usage: report_browser_check.py [--screenshot-dir DIR] PATH...   (PATH: report.html or a folder)
Exit status 0 when every page passes; the problems are printed, one per line.
"""
import argparse
import html.parser
import os
import re
import shutil
import subprocess
import sys
import tempfile

ABSOLUTE = re.compile(r"(^|[\s(\"'=\[])/(tmp|root|home|work|usr|var|opt|srv|mnt)/")
MARKDOWN = [
    (re.compile(r"^\s*\|.*\|\s*$", re.M), "a Markdown table row"),
    (re.compile(r"\|\s*-{3,}:?\s*\|"), "a Markdown table rule"),
    (re.compile(r"\*\*[^*\n]+\*\*"), "Markdown bold"),
    (re.compile(r"`[^`\n]+`"), "Markdown code"),
    (re.compile(r"^#{1,6} ", re.M), "a Markdown heading"),
]


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Page(html.parser.HTMLParser):
    """The page's visible text (by block), and its charts' parts."""

    def __init__(self):
        super().__init__()
        self.blocks, self.current, self.skip = [], [], 0
        self.charts = []  # per svg.chart: {"axis": n, "tick": n, "title": str}
        self.in_chart = 0
        self.text_class = None

    BLOCK = {"p", "li", "td", "th", "h1", "h2", "h3", "h4", "dt", "dd", "caption", "pre",
             "title", "text", "div", "tr"}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("style", "script"):
            self.skip += 1
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            self.charts.append({"axis": 0, "tick": 0, "title": a.get("aria-label", "")})
            self.in_chart += 1
        elif tag == "svg":
            self.in_chart += 0
        if tag == "text" and self.in_chart:
            cls = (a.get("class") or "").split()
            self.text_class = "axis" if "axis-title" in cls else "tick" if "tick" in cls else None
        if tag in self.BLOCK:
            self.flush()

    def handle_endtag(self, tag):
        if tag in ("style", "script"):
            self.skip -= 1
        if tag == "svg" and self.in_chart:
            self.in_chart -= 1
        if tag == "text":
            self.text_class = None
        if tag in self.BLOCK:
            self.flush()

    def handle_data(self, data):
        if self.skip:
            return
        if self.text_class and data.strip() and self.charts:
            self.charts[-1][self.text_class] += 1
        self.current.append(data)

    def flush(self):
        text = "".join(self.current).strip()
        if text:
            self.blocks.append(text)
        self.current = []


def run_chromium(browser, args, tries=2):
    """Runs headless Chromium with args, each try in a fresh profile; a try that hangs past
    120 s (it happened once in CI, on a screenshot of a page it had just read) is tried again."""
    for attempt in range(tries):
        with tempfile.TemporaryDirectory() as profile:
            cmd = [browser, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
                   "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0",
                   "--virtual-time-budget=2000"] + args
            try:
                return subprocess.run(cmd, capture_output=True, text=True, timeout=120)
            except subprocess.TimeoutExpired:
                if attempt + 1 == tries:
                    raise
                print(f"Chromium hung on {args[-1]} ({args[0]}): trying again", file=sys.stderr)


def check(page_path, browser, shots):
    problems = []
    url = "file://" + os.path.abspath(page_path)
    run = run_chromium(browser, ["--dump-dom", url])
    if run.returncode != 0 or "<html" not in run.stdout:
        return [f"{page_path}: Chromium could not open it (exit {run.returncode}): "
                f"{run.stderr.strip()[-300:]}"]
    for line in run.stderr.splitlines():
        if "CONSOLE" in line or "Uncaught" in line or "net::ERR_" in line:
            problems.append(f"{page_path}: console: {line.strip()[:200]}")
    if shots:
        os.makedirs(shots, exist_ok=True)
        name = os.path.basename(os.path.dirname(os.path.abspath(page_path))) or "report"
        shot = os.path.join(shots, name + ".png")
        run_chromium(browser, ["--hide-scrollbars", "--window-size=1200,2400",
                               "--screenshot=" + shot, url])
        if not os.path.exists(shot):
            problems.append(f"{page_path}: no screenshot written")
    page = Page()
    page.feed(run.stdout)
    page.flush()
    for block in page.blocks:
        if ABSOLUTE.search(block):
            problems.append(f"{page_path}: absolute path in text: {block[:160]!r}")
        for pattern, what in MARKDOWN:
            if pattern.search(block):
                problems.append(f"{page_path}: {what} in text: {block[:160]!r}")
    for c in page.charts:
        if c["axis"] < 2 or c["tick"] < 2:
            problems.append(f"{page_path}: chart {c['title']!r} lacks axis titles or tick labels "
                            f"({c['axis']} axis titles, {c['tick']} tick labels)")
    if not page.charts and "<svg" in run.stdout:
        problems.append(f"{page_path}: an svg that is not a labelled chart")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--screenshot-dir")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args()
    browser = chromium()
    if browser is None:
        print("no Chromium found (scripts/setup.sh installs the chromium package)")
        return 2
    pages = []
    for p in args.paths:
        if os.path.isdir(p):
            for root, _, files in sorted(os.walk(p)):
                pages += [os.path.join(root, f) for f in sorted(files) if f == "report.html"]
        else:
            pages.append(p)
    if not pages:
        print("no report.html found")
        return 2
    problems = []
    for p in pages:
        found = check(p, browser, args.screenshot_dir)
        print(("ok   " if not found else "FAIL ") + p + (f" ({len(found)} problems)" if found else ""))
        problems += found
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
