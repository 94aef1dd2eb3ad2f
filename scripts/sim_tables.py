"""Plays action tables through `rtb simulate` (shared by the analysis scripts in scripts/)."""
import json
import os
import subprocess
import tempfile


class Simulator:
    """One `rtb simulate` run per call, in a private temporary directory."""

    def __init__(self, rtb="build/release/rtb", config=None):
        self.rtb, self.config, self.tmp = rtb, config, tempfile.mkdtemp()

    def run(self, policy, day="test"):
        """policy: manual | const:<a> | a table file. Returns (revenue, COST) per agent."""
        cmd = [self.rtb, "simulate", "--policy", policy, "--out", self.tmp, "--quiet", "--day", day]
        if self.config:
            cmd += ["--config", self.config]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        r = json.load(open(os.path.join(self.tmp, "report.json")))
        return [a["revenue"] for a in r["agents"]], [a["cost_over_budget"] for a in r["agents"]]

    def play(self, table, day="test"):
        """table: a[i][j], agents x clusters (schemas/action-table-v1.md)."""
        path = os.path.join(self.tmp, "table.json")
        json.dump({"format": "rtb.action_table", "schema_version": 1, "actions": table},
                  open(path, "w"))
        return self.run(path, day)

    def play_steps(self, tables, day="test"):
        """tables: one a[i][j] per step (the last plays the rest of the day)."""
        paths = []
        for t, table in enumerate(tables):
            paths.append(os.path.join(self.tmp, f"table_step{t}.json"))
            json.dump({"format": "rtb.action_table", "schema_version": 1, "actions": table},
                      open(paths[-1], "w"))
        return self.run(",".join(paths), day)
