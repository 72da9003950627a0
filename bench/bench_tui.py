"""TUI benchmarks: cold start against a minimal Textual app, and resuming a 500-turn session.

Each measurement starts a fresh process in a pseudo-terminal (120x36) and times it until its
first frame is drawn (the footer's "palette" key is on screen), alternating kode-tui and the
reference so both see the same machine. Medians are printed with the ratio.

    python bench/bench_tui.py [--runs 9] [--json [OUT]]

`--json` alone prints the medians as JSON instead of the table; `--json OUT` prints the table
and writes them (with every run's time) to OUT.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ptyrun import time_to_text

ROOT = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
GEN = ROOT.parent / "shared" / "bench" / "gen_context.py"
END_MARKER = "BENCH-END-OF-SESSION"
# The rows of the table and the keys of --json (run_all.py reads them).
MINIMAL = "minimal Textual app"
DEMO = "kode-tui, new session (demo model)"
LITELLM = "kode-tui, new session (litellm model)"
RESUME = "kode-tui, resume 500-turn session"


def env_for(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        TERM="xterm-256color",
        HOME=str(home),  # nothing may touch the real home
        KODE_TUI_HOME=str(home),
        KODE_TUI_OLLAMA_URL="",
        COLORTERM="truecolor",
        **extra,
    )
    return env


def make_session(folder: Path, turns: int) -> Path:
    """A generated Kimi-format session of `turns` turns whose last message is a marker."""
    folder.mkdir(parents=True, exist_ok=True)
    context = folder / "context.jsonl"
    generator = GEN if GEN.exists() else None
    if generator is None:
        raise SystemExit(f"{GEN} is missing: it generates the benchmark session")
    subprocess.run([PYTHON, str(generator), str(context), str(turns)], check=True,
                   capture_output=True)  # fmt: skip
    with context.open("a", encoding="utf-8") as file:
        file.write(json.dumps({"role": "_checkpoint", "id": 10_000}) + "\n")
        file.write(json.dumps({"role": "user", "content": "last question"}) + "\n")
        file.write(json.dumps({"role": "assistant", "content": END_MARKER}) + "\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument(
        "--json", nargs="?", const="-", metavar="OUT", help="JSON to OUT (alone: to stdout)"
    )
    args = parser.parse_args()

    results: dict[str, list[float]] = {MINIMAL: [], DEMO: [], LITELLM: [], RESUME: []}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        work = tmp_path / "project"
        work.mkdir()
        (work / "README.md").write_text("# Bench\n")
        home = tmp_path / "home"
        configured = tmp_path / "configured.toml"
        configured.write_text(
            'default_model = "gpt"\n[models.gpt]\nmodel = "openai/gpt-4o"\n'
            'api_base = "http://127.0.0.1:9/v1"\napi_key_env = "BENCH_KEY"\n'
        )
        session = make_session(tmp_path / "big-session", args.turns)
        kode = [str(Path(PYTHON).parent / "kode-tui")]
        runs = {
            MINIMAL: (
                [PYTHON, str(ROOT / "bench" / "minimal_app.py")],
                b"palette",
                env_for(home),
            ),
            DEMO: ([*kode, str(work)], b"palette", env_for(home)),
            LITELLM: (
                [*kode, "--config", str(configured), str(work)],
                b"palette",
                env_for(home, BENCH_KEY="dummy"),
            ),
            RESUME: (
                [*kode, "--session-dir", str(session), str(work)],
                END_MARKER.encode(),
                env_for(home),
            ),
        }
        for _ in range(args.runs):
            for name, (argv, marker, env) in runs.items():
                results[name].append(time_to_text(argv, marker, env))

    reference = statistics.median(results[MINIMAL])
    rows = []
    for name, times in results.items():
        median = statistics.median(times)
        rows.append((name, median, median / reference))
    numbers = {name: {"median_s": m, "ratio": r, "times_s": results[name]} for name, m, r in rows}
    if args.json == "-":
        print(json.dumps(numbers, indent=2))
        return
    if args.json:
        Path(args.json).write_text(json.dumps(numbers, indent=2) + "\n")
    print(f"{'':42} {'median':>9} {'vs minimal':>11}   ({args.runs} runs each)")
    for name, median, ratio in rows:
        print(f"{name:42} {median * 1000:7.0f} ms {ratio:10.2f}x")


if __name__ == "__main__":
    main()
