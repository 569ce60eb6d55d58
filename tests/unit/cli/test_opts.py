"""cli/opts.py: sbatch/srun parsing as Slurm 22.05.8 does it.

Expected texts and exit codes come from shared/reference/slurm-formats.md and from running the
real sbatch/srun 22.05.8 binaries (Debian bookworm) against a config with node[1-4], gres gpu:8.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from slurmlet.cli import helptext, opts
from slurmlet.common import grammar, patterns, slurmtime
from slurmlet.common.grammar import OptError

CWD = "/home/u/work"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/u", "SLURM_CONF": "/etc/slurm.conf", "LANG": "C.UTF-8"}
SCRIPT = "#!/bin/bash\nhostname\n"
WHO = dict(user="u", uid=1000, gid=1000, group="g", host="login1")


def sb(argv: list[str], *, env: dict | None = None, files: dict | None = None, stdin: str | None = None,
       cwd: str = CWD, now: float | None = None, **kw) -> dict:
    """parse_sbatch with an in-memory file system (paths relative to CWD are given short)."""
    fs = {}
    for path, text in (files or {}).items():
        fs[path if path.startswith("/") else f"{cwd}/{path}"] = text

    def read_file(path: str) -> str:
        if path not in fs:
            raise FileNotFoundError(path)
        return fs[path]

    return opts.parse_sbatch(argv, env=ENV if env is None else env, cwd=cwd, stdin_text=stdin,
                             read_file=read_file, now=now, **WHO, **kw)


def job(argv: list[str], **kw) -> dict:
    return sb(argv, **kw)["submit"]


def wrap(*argv: str, **kw) -> dict:
    return job([*argv, "--wrap", "true"], **kw)


def fails(argv: list[str], **kw) -> OptError:
    with pytest.raises(OptError) as e:
        sb(argv, **kw)
    return e.value


def script(*directives: str, body: str = "hostname\n") -> str:
    return "#!/bin/bash\n" + "".join(d + "\n" for d in directives) + body


TRY = 'Try "sbatch --help" for more information'


# ============================================================ getopt_long behaviour
class TestGetopt:
    def test_unknown_long_option(self):
        e = fails(["--bogus", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: unrecognized option '--bogus'", TRY], 255)

    def test_unknown_long_option_keeps_its_value_in_the_message(self):
        assert fails(["--bogus=3", "--wrap", "true"]).lines[0] == "sbatch: unrecognized option '--bogus=3'"

    def test_unknown_short_option(self):
        e = fails(["-Z", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: invalid option -- 'Z'", TRY], 255)

    @pytest.mark.parametrize("arg, listed", [
        ("--ex", "'--exclude' '--exclusive' '--export' '--export-file' '--extra-node-info'"),
        ("--tim", "'--time' '--time-min'"),
        ("--ti=5", "'--time' '--time-min'"),
        ("--cluste=c1", "'--cluster-constraint' '--cluster' '--clusters'"),
        ("--a", "'--account' '--acctg-freq' '--array'"),
        ("--c", "'--cluster-constraint' '--chdir' '--cluster' '--clusters' '--comment' '--container' "
                "'--context' '--contiguous' '--constraint' '--core-spec' '--cores-per-socket' '--cpu-freq' "
                "'--cpus-per-gpu' '--cpus-per-task'"),
        ("--t", "'--tasks-per-node' '--test-only' '--thread-spec' '--threads-per-core' '--time' '--time-min' "
                "'--tmp'"),
        ("--w", "'--wait' '--wait-all-nodes' '--wckey' '--wrap'"),
    ])
    def test_ambiguous_prefix_lists_possibilities_in_table_order(self, arg, listed):
        e = fails([arg, "--wrap", "true"])
        assert (e.lines, e.code) == ([f"sbatch: option '{arg}' is ambiguous; possibilities: {listed}", TRY], 255)

    def test_ambiguous_message_shows_the_value_too(self):
        assert fails(["--ex=3", "--wrap", "true"]).lines[0].startswith("sbatch: option '--ex=3' is ambiguous;")

    @pytest.mark.parametrize("argv, field, value", [
        (["--err=e.txt"], "stderr", f"{CWD}/e.txt"),
        (["--job=foo"], "name", "foo"),
        (["--job", "foo"], "name", "foo"),
        (["--part=debug"], "partition", "debug"),
        (["--cluster=c1"], None, None),         # an exact name: no ambiguity with --cluster-constraint
        (["--mem=1G"], "mem_per_node", 1024),   # exact name beats the longer --mem-per-cpu
        (["--export=NONE"], "environment", {"SLURM_CONF": "/etc/slurm.conf", "SLURM_EXPORT_ENV": "NONE",
                                            "SLURM_GET_USER_ENV": "1"}),
        (["--tasks-per-node=3"], "ntasks_per_node", 3),
    ])
    def test_unique_prefixes_and_exact_names(self, argv, field, value):
        j = wrap(*argv)
        if field == "environment":
            assert {k: v for k, v in j["environment"].items() if not k.startswith("SLURM_SUBMIT")
                    and k not in ("SLURM_PRIO_PROCESS", "SLURM_UMASK")} == value
        elif field:
            assert j[field] == value
        else:
            assert sb([*argv, "--wrap", "true"])["clusters"] == "c1"

    def test_missing_argument_long(self):
        e = fails(["--time"])
        assert (e.lines, e.code) == (["sbatch: option '--time' requires an argument", TRY], 255)

    def test_missing_argument_names_the_full_option(self):
        assert fails(["--wra"]).lines[0] == "sbatch: option '--wrap' requires an argument"

    def test_missing_argument_short(self):
        e = fails(["-J"])
        assert (e.lines, e.code) == (["sbatch: option requires an argument -- 'J'", TRY], 255)

    def test_required_argument_takes_the_next_word_even_an_option(self):
        e = fails(["-N", "--wrap", "true"])
        assert (e.lines, e.code) == (['sbatch: error: "-wrap" is not a valid node count'], 255)
        assert fails(["-t", "--wrap", "true"]).lines == ["sbatch: error: Invalid --time specification"]

    def test_flag_refuses_an_argument(self):
        e = fails(["--requeue=1", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: option '--requeue' doesn't allow an argument", TRY], 255)

    def test_optional_argument_only_with_equals(self):
        r = sb(["--exclusive", "job.sh"], files={"job.sh": SCRIPT})
        assert r["script_path"] == f"{CWD}/job.sh" and r["submit"]["exclusive"] is True
        assert wrap("--exclusive=user")["exclusive"] is True

    def test_short_options_cluster_and_attach(self):
        j = wrap("-HJfoo", "-N2", "-n", "4", "-c8")
        assert (j["hold"], j["name"], j["nodes_min"], j["ntasks"], j["cpus_per_task"]) == (True, "foo", 2, 4, 8)
        assert sb(["-vvv", "--wrap", "true"])["verbose"] == 3
        assert sb(["-QH", "--wrap", "true"])["quiet"] == 1

    def test_first_non_option_is_the_script_and_the_rest_its_arguments(self):
        r = sb(["-J", "x", "job.sh", "-N", "5", "--bogus"], files={"job.sh": SCRIPT})
        assert r["submit"]["argv"] == ["-N", "5", "--bogus"]
        assert r["submit"]["nodes_min"] == 1 and r["submit"]["nodes_max"] is None

    def test_double_dash_ends_the_options(self):
        r = sb(["-J", "x", "--", "-odd.sh", "a"], files={"-odd.sh": SCRIPT})
        assert r["script_path"] == f"{CWD}/-odd.sh" and r["submit"]["argv"] == ["a"]

    def test_help_usage_version_stop_processing_where_met(self):
        assert sb(["--help", "--bogus"])["help"] is True
        assert sb(["--help"])["submit"] is None
        assert sb(["--version", "--time=abc"])["version"] is True
        assert sb(["-V"])["version"] is True
        assert sb(["--usage"])["usage"] is True
        assert fails(["--bogus", "--help"]).code == 255
        assert fails(["--time=abc", "--help"]).lines == ["sbatch: error: Invalid --time specification"]

    def test_help_texts(self):
        assert helptext.help_text().startswith("Usage: sbatch [OPTIONS(0)...] [ : [OPTIONS(N)...]] script(0)")
        assert "  -t, --time=minutes          time limit\n" in helptext.help_text()
        assert helptext.usage_text().startswith("Usage: sbatch [-N nnodes] [-n ntasks]\n")


# ============================================================ time limits
class TestTime:
    @pytest.mark.parametrize("spec, minutes", [
        ("5", 5), ("5:30", 6), ("5:00", 5), ("0:1", 1), ("1:2:3", 63), ("1-2", 1560), ("1-2:3", 1563),
        ("1-2:3:4", 1564), ("5-", 7200), ("61:00", 61), ("1:61", 3), ("2:3:61", 125), ("10", 10),
        ("0:0:1", 1), ("100000-0", 834424),  # C int overflow, as Slurm computes it
    ])
    def test_forms(self, spec, minutes):
        assert slurmtime.parse_time(spec) == minutes

    @pytest.mark.parametrize("spec", ["0", "00", "-0", "UNLIMITED", "unlimited", "INFINITE", "infinite", "-1"])
    def test_no_limit(self, spec):
        assert slurmtime.parse_time(spec) is None

    @pytest.mark.parametrize("spec", ["-5", "-2", "24856-0"])
    def test_accepted_like_slurm_but_invalid_limits_mean_no_limit(self, spec):
        # Slurm accepts these and shows TimeLimit INVALID; slurmlet treats them as no limit
        assert slurmtime.parse_time(spec) is None

    @pytest.mark.parametrize("spec", ["abc", "", "1:2:", "1::2", " 5", "+5", "5.5", "1-2-3", ":5", "1:", "-",
                                      "1-:2", "1:2:3:4", "1h", "5 "])
    def test_invalid(self, spec):
        with pytest.raises(OptError) as e:
            slurmtime.parse_time(spec)
        assert (e.value.lines, e.value.code) == (["sbatch: error: Invalid --time specification"], 255)

    def test_via_sbatch(self):
        assert wrap("--time=-5")["time_limit"] is None     # reference: submitted, shows INVALID
        assert wrap("-t", "10")["time_limit"] == 10
        assert wrap("-t", "0")["time_limit"] is None
        e = fails(["--time=abc", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Invalid --time specification"], 255)
        assert fails(["--time-min=abc", "--wrap", "true"]).lines == ["sbatch: error: Invalid --time-min specification"]

    @pytest.mark.parametrize("minutes, text", [
        (None, "UNLIMITED"), (0, "0:00"), (10, "10:00"), (60, "1:00:00"), (61, "1:01:00"), (1440, "1-00:00:00"),
        (1563, "1-02:03:00"), (365 * 1440, "365-00:00:00"), (365 * 1440 + 1, "INVALID"), (-5, "INVALID"),
    ])
    def test_format_time_as_squeue(self, minutes, text):
        assert slurmtime.format_time(minutes) == text

    @pytest.mark.parametrize("seconds, text", [
        (0, "0:00"), (4, "0:04"), (59.9, "0:59"), (3723, "1:02:03"), (2 * 86400 + 3600, "2-01:00:00"),
        (-1, "INVALID"),
    ])
    def test_format_elapsed_as_squeue(self, seconds, text):
        assert slurmtime.format_elapsed(seconds) == text

    def test_scontrol_style(self):
        assert slurmtime.format_time_hms(None) == "UNLIMITED"
        assert slurmtime.format_time_hms(10) == "00:10:00"
        assert slurmtime.format_time_hms(1563) == "1-02:03:00"
        assert slurmtime.format_secs_hms(5) == "00:00:05"
        assert slurmtime.format_secs_hms(86400 * 3 + 1) == "3-00:00:01"

    @given(st.integers(0, 400), st.integers(0, 23), st.integers(0, 59), st.integers(0, 59))
    def test_round_trip_days_hours_minutes_seconds(self, d, h, m, s):
        spec = f"{d}-{h}:{m:02d}:{s:02d}"
        secs = ((d * 24 + h) * 60 + m) * 60 + s
        expect = -(-secs // 60) or None
        assert slurmtime.parse_time(spec) == expect

    @given(st.integers(1, 365 * 1440))
    def test_round_trip_through_both_displays(self, minutes):
        assert slurmtime.parse_time(slurmtime.format_time(minutes)) == minutes
        assert slurmtime.parse_time(slurmtime.format_time_hms(minutes)) == minutes

    @given(st.integers(0, 10 ** 6), st.integers(0, 10 ** 4))
    def test_minutes_seconds_round_up(self, m, s):
        assert slurmtime.parse_time(f"{m}:{s}") == ((m * 60 + s + 59) // 60 or None)


# ============================================================ --begin
NOW = time.mktime((2026, 12, 2, 13, 27, 17, 0, 0, -1))   # a Wednesday, 13:27:17 local time


def at(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0) -> float:
    return time.mktime((y, mo, d, h, mi, s, 0, 0, -1))


class TestBegin:
    @pytest.mark.parametrize("spec, expect", [
        ("now", NOW), ("now+60", NOW + 60), ("now+60seconds", NOW + 60), ("now+1minute", NOW + 60),
        ("now+2minutes", NOW + 120), ("now+1hour", NOW + 3600), ("now+1hours", NOW + 3600),
        ("NOW+1HOUR", NOW + 3600), ("now-60", NOW - 60), ("now + 5 minutes", NOW + 300),
        ("now+1day", at(2026, 12, 3, 13, 27, 17)), ("now+2days", at(2026, 12, 4, 13, 27, 17)),
        ("now+1week", at(2026, 12, 9, 13, 27, 17)), ("now+2weeks", at(2026, 12, 16, 13, 27, 17)),
        ("16:00", at(2026, 12, 2, 16)), ("16:00:30", at(2026, 12, 2, 16, 0, 30)), ("01:00", at(2026, 12, 3, 1)),
        ("13:27", at(2026, 12, 3, 13, 27)), ("13:28", at(2026, 12, 2, 13, 28)),
        ("4:00 PM", at(2026, 12, 2, 16)), ("4:00am", at(2026, 12, 3, 4)), ("12:00am", at(2026, 12, 3, 0)),
        ("midnight", at(2026, 12, 3)), ("noon", at(2026, 12, 3, 12)), ("teatime", at(2026, 12, 2, 16)),
        ("fika", at(2026, 12, 2, 15)), ("tomorrow", at(2026, 12, 3)), ("today", at(2026, 12, 2)),
        ("2027-01-15", at(2027, 1, 15)), ("2027-01-15T10:30", at(2027, 1, 15, 10, 30)),
        ("2027-01-15T10:30:15", at(2027, 1, 15, 10, 30, 15)), ("2020-01-01", at(2020, 1, 1)),
        ("12/25", at(2026, 12, 25)), ("12/25/27", at(2027, 12, 25)), ("12.25.27", at(2027, 12, 25)),
        ("122527", at(2027, 12, 25)), ("1225", at(2026, 12, 25)), ("11/01", at(2027, 11, 1)),
        ("12/25-10:00", at(2026, 12, 25, 10)), ("tomorrowT10:00", at(2026, 12, 3, 10)),
        ("today 23:59", at(2026, 12, 2, 23, 59)), ("uts1800000000", 1800000000),
        ("2027-02-30", at(2027, 3, 2)),
    ])
    def test_forms(self, spec, expect):
        assert slurmtime.parse_begin(spec, NOW) == expect

    @pytest.mark.parametrize("spec, pos", [
        ("now+", 3), ("now+abc", 3), ("4pm", 1), ("25:00", 0), ("elevenses", 0), ("2027-1-5", 0),
        ("uts5", 0), ("bogus", 0), ("2027-13-01", 5), ("10:61", 3), ("5", 1), ("Today", 1),
    ])
    def test_invalid_with_slurms_position(self, spec, pos):
        with pytest.raises(OptError) as e:
            slurmtime.parse_begin(spec, NOW)
        assert e.value.lines == [f"Invalid time specification (pos={pos}): {spec}",
                                 "sbatch: error: Invalid --begin specification"]
        assert e.value.code == 255

    def test_empty(self):
        with pytest.raises(OptError) as e:
            slurmtime.parse_begin("", NOW)
        assert e.value.lines == ["sbatch: error: Invalid --begin specification"]

    def test_via_sbatch(self):
        assert wrap("--begin=now+1hour", now=NOW)["begin_time"] == NOW + 3600
        assert wrap("-b", "16:00", now=NOW)["begin_time"] == at(2026, 12, 2, 16)
        e = fails(["--deadline=x", "--wrap", "true"], now=NOW)
        assert e.lines == ["Invalid time specification (pos=0): x", "sbatch: error: Invalid --deadline specification"]
        assert ["--deadline", "now+1hour"] in sb(["--deadline=now+1hour", "--wrap", "true"], now=NOW)["ignored"]


# ============================================================ counts and sizes
class TestCounts:
    @pytest.mark.parametrize("spec, expect", [
        ("2", (2, 2)), ("2-3", (2, 3)), ("0", (0, 0)), ("0-3", (0, 3)), ("3k", (3072, 3072)), ("1K", (1024, 1024)),
        ("-1", (1, 1)), ("5-0", (5, 0)), (" 4", (4, 4)), ("4 ", (4, 4)),
    ])
    def test_nodes(self, spec, expect):
        assert grammar.parse_nodes(spec) == expect

    @pytest.mark.parametrize("spec, line", [
        ("abc", '"abc" is not a valid node count'), ("", '"" is not a valid node count'),
        ("2-3-4", '"3-4" is not a valid node count'), ("2,3", '"2,3" is not a valid node count'),
        ("2-", "Maximum node count -1 is less than minimum node count 2"),
        ("2-1", "Maximum node count 1 is less than minimum node count 2"),
        ("2147483648", '"2147483648" is not a valid node count'),
    ])
    def test_nodes_invalid(self, spec, line):
        e = fails(["-N", spec, "--wrap", "true"])
        assert (e.lines, e.code) == ([f"sbatch: error: {line}"], 255)

    def test_nodes_in_the_submit_body(self):
        assert (wrap("-N", "10")["nodes_min"], wrap("-N", "10")["nodes_max"]) == (10, 10)
        assert (wrap("-N", "5-10")["nodes_min"], wrap("-N", "5-10")["nodes_max"]) == (5, 10)
        assert (wrap("-N", "0-3")["nodes_min"], wrap("-N", "0-3")["nodes_max"]) == (1, 3)
        assert (wrap("-N", "5-0")["nodes_min"], wrap("-N", "5-0")["nodes_max"]) == (5, None)
        assert (wrap()["nodes_min"], wrap()["nodes_max"]) == (1, None)

    def test_zero_nodes_refused(self):
        e = fails(["-N", "0", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Batch job submission failed: Node count specification invalid"], 1)

    @pytest.mark.parametrize("argv, line", [
        (["-n", "0"], 'Invalid numeric value "0" for --ntasks.'),
        (["-n", "-1"], 'Invalid numeric value "-1" for --ntasks.'),
        (["-n", "abc"], 'Invalid numeric value "abc" for --ntasks.'),
        (["-n", "2k"], 'Invalid numeric value "2k" for --ntasks.'),
        (["-n", "5 "], 'Invalid numeric value "5 " for --ntasks.'),
        (["-n", "0x10"], 'Invalid numeric value "0x10" for --ntasks.'),
        (["-c", "0"], 'Invalid numeric value "0" for --cpus-per-task.'),
        (["-c", "abc"], 'Invalid numeric value "abc" for --cpus-per-task.'),
        (["--ntasks-per-node=0"], 'Invalid numeric value "0" for --ntasks-per-node.'),
        (["--ntasks-per-node=-1"], 'Invalid numeric value "-1" for --ntasks-per-node.'),
        (["--mincpus=0"], 'Invalid numeric value "0" for --mincpus.'),
        (["--threads-per-core=0"], 'Invalid numeric value "0" for --threads-per-core.'),
        (["--cpus-per-gpu=abc"], 'Invalid numeric value "abc" for --cpus-per-gpu.'),
        (["--switches=abc"], 'Invalid numeric value "abc" for --switches.'),
        (["-n", "4294967295"], "invalid number of tasks (-n -1)"),
        (["-n", "2147483648"], "invalid number of tasks (-n -2147483648)"),
        (["-c", "2147483648"], "invalid number of cpus per task (-c -2147483648)"),
    ])
    def test_bad_numbers(self, argv, line):
        e = fails([*argv, "--wrap", "true"])
        assert (e.lines, e.code) == ([f"sbatch: error: {line}"], 1)

    def test_numbers_like_strtol(self):
        assert wrap("-n", " 5")["ntasks"] == 5
        assert wrap("-n", "+5")["ntasks"] == 5
        assert wrap("-n", "010")["ntasks"] == 10
        assert wrap("-n", "99999999999")["ntasks"] == 1215752191   # a C int cast, as sbatch does

    def test_fewer_tasks_than_nodes_shrinks_the_node_count(self):
        r = sb(["-n", "1", "-N", "2", "--wrap", "true"])
        assert (r["submit"]["nodes_min"], r["submit"]["nodes_max"]) == (1, 1)
        assert r["info"] == ["sbatch: Warning: can't run 1 processes on 2 nodes, setting nnodes to 1"]
        r = sb(["-n", "3", "-N", "2-5", "--wrap", "true"])
        assert (r["submit"]["nodes_min"], r["submit"]["nodes_max"], r["info"]) == (2, 3, [])

    @pytest.mark.parametrize("spec, mb", [
        ("0", 0), ("100", 100), ("2G", 2048), ("2g", 2048), ("1T", 1048576), ("512K", 1), ("1000K", 1),
        ("1025K", 2), ("1K", 1), ("2GB", 2048), ("2Gb", 2048), ("2MB", 2), ("2KB", 1), ("2M", 2), ("5m", 5),
        (" 5", 5), ("+5", 5),
    ])
    def test_mem(self, spec, mb):
        assert grammar.parse_mem(spec) == mb
        assert wrap(f"--mem={spec}")["mem_per_node"] == mb

    @pytest.mark.parametrize("spec", ["1.5G", "abc", "-1", "", "G", "1P", "5 ", "5Gx", "2GiB", "2B",
                                      "99999999999999999999"])
    def test_mem_invalid(self, spec):
        e = fails([f"--mem={spec}", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Invalid --mem specification"], 255)
        assert fails([f"--mem-per-cpu={spec}", "--wrap", "true"]).lines == \
            ["sbatch: error: Invalid --mem-per-cpu specification"]

    def test_mem_per_cpu(self):
        assert wrap("--mem-per-cpu=1G")["mem_per_cpu"] == 1024
        assert wrap("--mem-per-cpu=0")["mem_per_cpu"] == 0

    def test_memory_options_are_mutually_exclusive(self):
        e = fails(["--mem=1G", "--mem-per-cpu=1G", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."], 1)
        # a directive counts as command line too
        e = fails(["--mem-per-cpu=2G", "m.sh"], files={"m.sh": script("#SBATCH --mem=1G")})
        assert e.lines == ["sbatch: fatal: --mem, --mem-per-cpu, and --mem-per-gpu are mutually exclusive."]

    def test_memory_from_the_environment_yields_to_the_command_line(self):
        j = wrap("--mem=5G", env={**ENV, "SBATCH_MEM_PER_CPU": "3G"})
        assert (j["mem_per_node"], j["mem_per_cpu"]) == (5120, None)
        j = job(["m.sh"], files={"m.sh": script("#SBATCH --mem=1G")}, env={**ENV, "SBATCH_MEM_PER_CPU": "3G"})
        assert (j["mem_per_node"], j["mem_per_cpu"]) == (1024, None)
        e = fails(["--wrap", "true"], env={**ENV, "SBATCH_MEM_PER_CPU": "3G", "SBATCH_MEM_PER_NODE": "1G"})
        assert e.lines == ["sbatch: fatal: SLURM_MEM_PER_CPU, SLURM_MEM_PER_GPU, and SLURM_MEM_PER_NODE are "
                           "mutually exclusive."]


# ============================================================ GPUs
GRES_BAD = ["sbatch: error: Invalid generic resource (gres) specification"]


class TestGpus:
    @pytest.mark.parametrize("spec, count, gtype", [
        ("gpu:2", 2, None), ("gpu", 1, None), ("gpu:a100:2", 2, "a100"), ("gpu:a100", 1, "a100"),
        ("gres:gpu:8", 8, None), ("gpu:0", 0, None), ("none", None, None), ("gpu:2k", 2048, None),
    ])
    def test_gres(self, spec, count, gtype):
        assert grammar.parse_gres(spec) == (count, gtype)

    @pytest.mark.parametrize("spec", ["tpu:1", "gpu:2,tpu:1", "gpu:a100:x", "gpu:2x", "", "gpu:a:b:c"])
    def test_gres_refused(self, spec):
        e = fails([f"--gres={spec}", "--wrap", "true"])
        assert (e.lines, e.code) == (GRES_BAD, 1)

    def test_gres_name_is_checked_after_reading_the_script(self):
        e = fails(["--gres=tpu:1", "/nonexistent/x.sh"])
        assert e.lines == ["sbatch: error: Unable to open file /nonexistent/x.sh"]

    def test_submit_fields(self):
        assert wrap("--gres=gpu:8")["gpus_per_node"] == 8
        assert wrap("--gres=gpu:0")["gpus_per_node"] is None
        assert wrap("--gpus-per-node=2")["gpus_per_node"] == 2
        assert wrap("-G", "4")["gpus"] == 4
        assert wrap("-G4")["gpus"] == 4
        assert wrap("--gpus=a100:2")["gpus"] == 2
        assert sb(["--gpus=a100:2", "--wrap", "true"])["gpu_type"] == "a100"
        assert wrap("--gpus-per-task=2", "-n", "2")["gpus_per_task"] == 2
        assert wrap("--gpus-per-task=2", "-G", "4")["gpus_per_task"] == 2
        assert wrap("--gpus-per-task=0")["gpus_per_task"] is None

    def test_the_later_of_gres_and_gpus_per_node_wins(self):
        assert wrap("--gres=gpu:2", "--gpus-per-node=3")["gpus_per_node"] == 3
        assert wrap("--gpus-per-node=3", "--gres=gpu:2")["gpus_per_node"] == 2

    @pytest.mark.parametrize("spec", ["abc", "-1", "a100", "x:y:1", ""])
    def test_bad_gpu_counts(self, spec):
        e = fails([f"--gpus={spec}", "--wrap", "true"])
        assert (e.lines, e.code) == (
            ["sbatch: error: Batch job submission failed: Invalid generic resource (gres) specification"], 1)

    def test_per_gpu_options_need_gpus(self):
        e = fails(["--mem-per-gpu=1G", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Requested mem_per_tres=gres:gpu:1024 but did not request any "
                                      "GPU.", GRES_BAD[0]], 1)
        assert wrap("--mem-per-gpu=1G", "--gres=gpu:1")["gpus_per_node"] == 1
        assert wrap("--mem-per-gpu=0")["mem_per_node"] is None
        e = fails(["--ntasks-per-gpu=1", "--wrap", "true"])
        assert e.lines == ["sbatch: error: gres_job_state_validate: --ntasks-per-tres needs either a GRES GPU "
                           "specification or a node/ntask specification", GRES_BAD[0]]
        assert wrap("--ntasks-per-gpu=1", "-N1")["nodes_min"] == 1
        assert wrap("-m", "arbitrary", "-w", "node1")["nodelist"] == "node1"

    def test_gpus_per_task_needs_tasks_or_gpus(self):
        e = fails(["--gpus-per-task=2", "--wrap", "true"])
        assert (e.lines, e.code) == ([
            "sbatch: error: Failed to validate job spec. --gpus-per-task used without either --gpus or "
            "-n/--ntasks is not allowed.",
            "sbatch: error: Invalid generic resource (gres) specification"], 1)


# ============================================================ other options
class TestOptions:
    @pytest.mark.parametrize("argv, exclusive", [
        (["--exclusive"], True), (["--exclusive=user"], True), (["--exclusive=mcs"], True),
        (["--exclusive=exclusive"], True), (["--exclusive="], True), (["--exclusive=oversubscribe"], False),
        (["--exclusive", "-s"], False), (["-s", "--exclusive"], True), ([], False),
    ])
    def test_exclusive(self, argv, exclusive):
        assert wrap(*argv)["exclusive"] is exclusive

    def test_exclusive_refused(self):
        e = fails(["--exclusive=bogus", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Invalid --exclusive specification"], 255)

    @pytest.mark.parametrize("argv, requeue", [
        ([], None), (["--requeue"], True), (["--no-requeue"], False), (["--requeue", "--no-requeue"], False),
        (["--no-requeue", "--requeue"], True),
    ])
    def test_requeue(self, argv, requeue):
        assert wrap(*argv)["requeue"] is requeue

    @pytest.mark.parametrize("spec, mode", [("append", "append"), ("truncate", "truncate"), ("a", "append"),
                                            ("t", "truncate"), ("APPEND", "append"), ("abc", "append")])
    def test_open_mode(self, spec, mode):
        assert wrap(f"--open-mode={spec}")["open_mode"] == mode
        assert wrap()["open_mode"] == "truncate"

    def test_open_mode_refused(self):
        e = fails(["--open-mode=bogus", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Invalid --open-mode specification"], 255)

    @pytest.mark.parametrize("argv, nice", [([], 0), (["--nice"], 100), (["--nice=5"], 5), (["--nice=-5"], -5),
                                            (["--nice=abc"], 0), (["--nice=2147483645"], 2147483645)])
    def test_nice(self, argv, nice):
        assert wrap(*argv)["nice"] == nice

    @pytest.mark.parametrize("spec", ["2147483646", "3000000000", "-2147483646"])
    def test_nice_out_of_range(self, spec):
        e = fails([f"--nice={spec}", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Invalid --nice value, out of range (+/- 2147483645)"], 255)

    @pytest.mark.parametrize("argv, line, code", [
        (["--mail-type=bogus"], "Invalid --mail-type specification", 255),
        (["--distribution=bogus"], "Invalid --distribution specification", 255),
        (["--kill-on-invalid-dep=maybe"], "Invalid --kill-on-invalid-dep specification", 255),
        (["--hint=bogus"], 'unrecognized --hint argument "bogus", see --hint=help', 1),
        (["--profile=bogus"], "invalid --profile=bogus option", 255),
        (["--delay-boot=abc"], "Invalid --delay-boot specification", 255),
        (["--get-user-env=abc"], "Invalid --get-user-env specification", 255),
        (["--acctg-freq=abc"], "Invalid --acctg-freq specification: abc", 255),
        (["--tmp=abc"], "Invalid --tmp specification", 255),
        (["--mem-per-gpu=abc"], "Invalid --mem-per-gpu specification", 255),
        (["--uid=nosuchuser-xyz"], "Invalid --uid specification", 255),
        (["--gid=nosuchgroup-xyz"], "Invalid --gid specification", 255),
        (["--core-spec=abc"], 'Invalid numeric value "abc" for --core-spec.', 1),
        (["--no-kill=yes"], "Invalid --no-kill specification", 255),
        (["--gid=987654"], "Invalid --gid specification", 255),
        (["-m", "arbitrary"], "With Arbitrary distribution you need to specify a nodelist or hostfile with the -w "
                              "option", 1),
    ])
    def test_checked_values_of_accepted_options(self, argv, line, code):
        e = fails([*argv, "--wrap", "true"])
        assert (e.lines, e.code) == ([f"sbatch: error: {line}"], code)

    def test_accepted_options_without_effect_are_listed_as_ignored(self):
        r = sb(["--mail-type=END,FAIL", "--mail-user=me", "-C", "gpu", "--reservation=r", "--wckey=w",
                "-m", "cyclic", "--hint=nomultithread", "-k", "--licenses=foo:2", "--comment=c",
                "--wrap", "true"])
        ignored = {k: v for k, v in r["ignored"]}
        assert ignored == {"--mail-type": "END,FAIL", "--mail-user": "me", "--constraint": "gpu",
                           "--reservation": "r", "--wckey": "w", "--distribution": "cyclic",
                           "--hint": "nomultithread", "--no-kill": None,
                           "--licenses": "foo:2"}
        assert r["submit"]["comment"] == "c"

    def test_kill_on_invalid_dep(self):
        assert wrap("--kill-on-invalid-dep=yes")["kill_on_invalid_dep"] is True
        assert wrap("--kill-on-invalid-dep=NO")["kill_on_invalid_dep"] is False

    def test_client_flags(self):
        r = sb(["--parsable", "--test-only", "-W", "-M", "anchor", "--wrap", "true"])
        assert (r["parsable"], r["test_only"], r["wait"], r["clusters"]) == (True, True, True, "anchor")
        assert r["submit"]["test_only"] is True
        r = sb(["--clusters=anchor", "--wrap", "true"])
        assert r["clusters"] == "anchor"
        assert sb(["-Q", "--wrap", "true"])["quiet"] == 1

    def test_quiet_and_verbose_together(self):
        e = fails(["-Q", "-v", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: don't specify both --verbose (-v) and --quiet (-Q)"], 1)

    def test_plain_string_options(self):
        j = wrap("-p", "high", "-A", "acct", "-q", "normal", "-w", "node[1-2]", "-x", "node3", "--comment=x y",
                 "--hold")
        assert (j["partition"], j["account"], j["qos"], j["nodelist"], j["exclude"], j["comment"], j["hold"]) == \
            ("high", "acct", "normal", "node[1-2]", "node3", "x y", True)

    @pytest.mark.parametrize("spec", ["USR1", "10", "B:USR1@30", "R:TERM@5", "RB:10", "SIGUSR1", "usr1"])
    def test_signal_kept_as_given(self, spec):
        assert wrap(f"--signal={spec}")["signal"] == spec

    @pytest.mark.parametrize("spec", ["BOGUS", "USR1@abc", "0", "X:USR1", "@30", "USR1@-5", "USR1@70000", "B:",
                                      "PIPE", "USR1@5x", "10x"])
    def test_signal_refused(self, spec):
        e = fails([f"--signal={spec}", "--wrap", "true"])
        assert (e.lines, e.code) == (["sbatch: error: Invalid --signal specification"], 255)

    @pytest.mark.parametrize("spec, parsed", [
        ("USR1", (10, 60, "")), ("10", (10, 60, "")), ("B:USR1@30", (10, 30, "B")), ("R:TERM@5", (15, 5, "R")),
        ("RB:10", (10, 60, "RB")), ("BR:USR1", (10, 60, "RB")), ("RR:USR1", (10, 60, "R")), ("b:usr2", (12, 60, "B")),
        ("SIGKILL@0", (9, 0, "")), ("XCPU@65535", (24, 65535, "")), ("65", (65, 60, "")), ("USR1@ 5", (10, 5, "")),
    ])
    def test_parse_signal(self, spec, parsed):
        assert grammar.parse_signal(spec) == parsed


# ============================================================ --array
class TestArray:
    @pytest.mark.parametrize("spec, ids, throttle", [
        ("0-15", list(range(16)), None), ("1,3,5", [1, 3, 5], None), ("1-7:2", [1, 3, 5, 7], None),
        ("0-15%4", list(range(16)), 4), ("1-7:2%2", [1, 3, 5, 7], 2), ("1,3-5,9", [1, 3, 4, 5, 9], None),
        ("1-3,2-4", [1, 2, 3, 4], None), (",1", [1], None), ("1,", [1], None), ("3", [3], None),
        ("1000", [1000], None), ("0-1000", list(range(1001)), None), ("[0-3]", [0, 1, 2, 3], None),
        (" 1", [1], None), ("0-3%0", [0, 1, 2, 3], None), ("0-", [0], None), ("010", [10], None),
        ("", [], None), ("%4", [], 4),
    ])
    def test_forms(self, spec, ids, throttle):
        assert grammar.parse_array(spec) == (ids, throttle)

    @pytest.mark.parametrize("spec", ["0-abc", "0-100000", "1001", "5-3", "1-7:0", "1-7:-1", "-1", "1 ", "0x3",
                                      "1:2", "1-5:2:3", "1-"])
    def test_refused(self, spec):
        e = fails([f"--array={spec}", "--wrap", "true"])
        assert (e.lines, e.code) == (
            ["sbatch: error: Batch job submission failed: Invalid job array specification"], 1)

    def test_max_array_size(self):
        assert grammar.parse_array("0-9", max_size=10)[0] == list(range(10))
        with pytest.raises(OptError):
            grammar.parse_array("10", max_size=10)
        with pytest.raises(OptError):
            sb(["--array=0-10", "--wrap", "true"], max_array_size=10)

    def test_in_the_submit_body(self):
        assert wrap("-a", "0-3")["array"] == "0-3"
        assert wrap("--array=")["array"] is None
        assert wrap()["array"] is None

    @pytest.mark.parametrize("ids, throttle, text", [
        ([1, 3, 5, 7, 9], 2, "[1,3,5,7,9%2]"), ([0, 1, 2, 3], None, "[0-3]"), (list(range(5, 1025)), None, "[5-1024]"),
        ([3], None, "[3]"), ([0, 1, 3, 4, 5, 9], None, "[0-1,3-5,9]"), ([2, 1, 2], None, "[1-2]"),
    ])
    def test_format(self, ids, throttle, text):
        assert grammar.format_array(ids, throttle) == text
        assert grammar.compress_indexes(ids, throttle) == text[1:-1]

    @given(st.sets(st.integers(0, 1000), min_size=1))
    def test_format_round_trip(self, ids):
        assert grammar.parse_array(grammar.compress_indexes(sorted(ids))) == (sorted(ids), None)


# ============================================================ --dependency
DEP_BAD = ["sbatch: error: Batch job submission failed: Job dependency problem"]


class TestDependency:
    @pytest.mark.parametrize("spec, items, any_of", [
        ("afterok:5", [("afterok", ["5"])], False),
        ("afterok:5:6,afterany:7", [("afterok", ["5", "6"]), ("afterany", ["7"])], False),
        ("afterok:5?afternotok:6", [("afterok", ["5"]), ("afternotok", ["6"])], True),
        ("after:5+10", [("after", ["5+10"])], False),
        ("aftercorr:5", [("aftercorr", ["5"])], False),
        ("afterburstbuffer:5", [("afterburstbuffer", ["5"])], False),
        ("singleton", [("singleton", [])], False),
        ("SINGLETON,afterok:3", [("singleton", []), ("afterok", ["3"])], False),
        ("123", [("afterany", ["123"])], False),
        ("123,456", [("afterany", ["123"]), ("afterany", ["456"])], False),
        ("afterok:5_3", [("afterok", ["5_3"])], False),
        ("afterok:5_*", [("afterok", ["5_*"])], False),
        ("AfterOK:999999", [("afterok", ["999999"])], False),
        ("afterokay:1", [("afterok", ["1"])], False),   # Slurm matches the type by prefix
    ])
    def test_forms(self, spec, items, any_of):
        assert grammar.parse_dependency(spec) == (items, any_of)

    @pytest.mark.parametrize("spec", ["bogus:1", "afterok", "afterok:", "afterok:abc", "afterok:0", "afterok:1,",
                                      "afterok:1,afterany:2?afterok:3", "singletonx", "aft:1", "afterok:1x",
                                      "afterok:5+x", "abc", "afterok::1"])
    def test_refused(self, spec):
        e = fails([f"--dependency={spec}", "--wrap", "true"])
        assert (e.lines, e.code) == (DEP_BAD, 1)

    def test_submit_and_ids(self):
        assert wrap("-d", "afterok:999999")["dependency"] == "afterok:999999"   # accepted, as in the reference
        assert wrap()["dependency"] is None
        items, _ = grammar.parse_dependency("afterok:5_2:6+3,afterany:7")
        assert grammar.dependency_job_ids(items) == [5, 6, 7]


# ============================================================ --export
class TestExport:
    ENV = {"PATH": "/bin", "FOO": "foo", "BAR": "bar", "SLURM_CONF": "/c"}

    @pytest.mark.parametrize("spec, expect", [
        (None, {"PATH": "/bin", "FOO": "foo", "BAR": "bar", "SLURM_CONF": "/c"}),
        ("ALL", {"PATH": "/bin", "FOO": "foo", "BAR": "bar", "SLURM_CONF": "/c"}),
        ("all", {"PATH": "/bin", "FOO": "foo", "BAR": "bar", "SLURM_CONF": "/c"}),
        ("NONE", {"SLURM_CONF": "/c"}),
        ("FOO,BAR=1", {"SLURM_CONF": "/c", "FOO": "foo", "BAR": "1"}),
        ("ALL,FOO=x", {"PATH": "/bin", "FOO": "x", "BAR": "bar", "SLURM_CONF": "/c"}),
        ("MISSING", {"SLURM_CONF": "/c"}),
        ("", {"SLURM_CONF": "/c"}),
    ])
    def test_selection(self, spec, expect):
        assert opts.export_environment(spec, self.ENV) == expect

    @pytest.mark.parametrize("spec, x, y", [
        # 22.05's srun, X=batch in its environment (tests/data/slurm-2205-tools.md): with ALL the
        # environment's X stays; NONE among other items leaves them out
        ("ALL,X=one", "batch", None), ("X=one,ALL", "batch", None), ("X=one", "one", None),
        ("NONE,X=one", None, None), ("ALL,Y=two", "batch", "two"), ("X,Y=two", "batch", "two"),
    ])
    def test_srun_selection(self, spec, x, y):
        got = opts.parse_srun([f"--export={spec}", "true"], env={"X": "batch", "SLURM_CONF": "/c"}, cwd="/")
        assert (got["environment"].get("X"), got["environment"].get("Y")) == (x, y)

    def test_sbatch_adds_its_variables(self):
        j = wrap("--export=NONE", env=self.ENV)
        old = os.umask(0o027)
        try:
            assert wrap("--export=NONE", env=self.ENV)["environment"]["SLURM_UMASK"] == "0027"  # the submitter's
        finally:
            os.umask(old)
        assert j["environment"] == {"SLURM_CONF": "/c", "SLURM_PRIO_PROCESS": "0", "SLURM_SUBMIT_DIR": CWD,
                                    "SLURM_SUBMIT_HOST": "login1", "SLURM_UMASK": f"{old:04o}",
                                    "SLURM_EXPORT_ENV": "NONE", "SLURM_GET_USER_ENV": "1"}
        assert wrap(env={**self.ENV, "SLURM_UMASK": "0077"})["environment"]["SLURM_UMASK"] == "0077"  # kept
        assert wrap(env=self.ENV)["environment"]["FOO"] == "foo"
        assert "FOO" not in wrap(env={**self.ENV, "SBATCH_EXPORT": "NONE"})["environment"]
        assert wrap("--export=ALL", env={**self.ENV, "SBATCH_EXPORT": "NONE"})["environment"]["FOO"] == "foo"


# ============================================================ script sources
class TestScript:
    def test_file(self):
        r = sb(["job.sh", "a", "b"], files={"job.sh": SCRIPT})
        j = r["submit"]
        assert (j["script"], j["name"], j["argv"], r["script_path"]) == (SCRIPT, "job.sh", ["a", "b"], f"{CWD}/job.sh")
        assert (j["workdir"], j["submit_dir"], j["stdout"], j["stderr"], j["stdin"]) == (CWD, CWD, None, None, None)

    def test_default_name_is_the_base_name(self):
        assert job(["/opt/jobs/train.sbatch"], files={"/opt/jobs/train.sbatch": SCRIPT})["name"] == "train.sbatch"

    def test_missing_file(self):
        e = fails(["/nonexistent/script.sh"])
        assert (e.lines, e.code) == (["sbatch: error: Unable to open file /nonexistent/script.sh"], 1)
        assert fails(["nope.sh"]).lines == ["sbatch: error: Unable to open file nope.sh"]

    def test_script_found_along_path_then_refused_when_not_a_script(self):
        e = fails(["-J", "x", "true"], files={"/bin/true": "\x7fELF..."})
        assert e.lines[0] == "sbatch: error: This does not look like a batch script.  The first"
        assert sb(["myjob"], files={"/usr/bin/myjob": SCRIPT})["script_path"] == "/usr/bin/myjob"

    def test_script_looked_up_in_the_chdir_directory_too(self):
        r = sb(["-D", "sub", "x.sh"], files={"sub/x.sh": script("#SBATCH -J insub")})
        assert (r["submit"]["name"], r["submit"]["workdir"]) == ("insub", f"{CWD}/sub")
        r = sb(["-D", "sub", "y.sh"], files={"y.sh": script("#SBATCH -J inw")})
        assert r["submit"]["name"] == "inw"

    def test_wrap(self):
        j = wrap()
        assert j["script"] == "#!/bin/sh\n# This script was created by sbatch --wrap.\n\ntrue\n"
        assert (j["name"], j["argv"]) == ("wrap", [])
        assert job(["--wrap=sleep 1 # not a directive"])["script"].endswith("\nsleep 1 # not a directive\n")

    def test_wrap_takes_no_script_arguments(self):
        for argv in (["--wrap", "true", "s.sh"], ["--wrap", "true", "s.sh", "a", "b"]):
            e = fails(argv, files={"s.sh": SCRIPT})
            assert (e.lines, e.code) == (["sbatch: error: Script arguments not permitted with --wrap option"], 1)

    def test_wrap_scripts_have_no_directives(self):
        assert job(["--wrap", "#SBATCH -J x"])["name"] == "wrap"

    def test_stdin(self):
        r = sb([], stdin="#!/bin/bash\n#SBATCH -J fromstdin\nhostname\n")
        assert (r["submit"]["name"], r["script_path"]) == ("fromstdin", None)
        assert job([], stdin=SCRIPT)["name"] == "sbatch"

    def test_stdin_read_only_when_needed(self):
        calls = []

        def read_stdin() -> str:
            calls.append(1)
            return SCRIPT

        opts.parse_sbatch(["--wrap", "true"], env=ENV, cwd=CWD, read_stdin=read_stdin, **WHO)
        assert calls == []
        assert opts.parse_sbatch([], env=ENV, cwd=CWD, read_stdin=read_stdin, **WHO)["submit"]["script"] == SCRIPT
        assert calls == [1]

    @pytest.mark.parametrize("text, lines", [
        ("", ["sbatch: error: Batch script is empty!"]),
        (None, ["sbatch: error: Batch script is empty!"]),
        ("   \n\n", ["sbatch: error: Batch script contains only whitespace!"]),
        ("hostname\n", ["sbatch: error: This does not look like a batch script.  The first",
                        "sbatch: error: line must start with #! followed by the path to an interpreter.",
                        "sbatch: error: For instance: #!/bin/sh"]),
        (" #!/bin/bash\necho\n", ["sbatch: error: This does not look like a batch script.  The first",
                                  "sbatch: error: line must start with #! followed by the path to an interpreter.",
                                  "sbatch: error: For instance: #!/bin/sh"]),
        ("#!/bin/bash\necho\0\n", ["sbatch: error: The Slurm controller does not allow scripts that",
                                   "sbatch: error: contain a NULL character '\\0'."]),
        ("#!/bin/bash\r\necho\r\n", ["sbatch: error: Batch script contains DOS line breaks (\\r\\n)",
                                     "sbatch: error: instead of expected UNIX line breaks (\\n)."]),
    ])
    def test_refused_scripts(self, text, lines):
        e = fails([], stdin=text)
        assert (e.lines, e.code) == (lines, 1)
        if text:
            assert fails(["f.sh"], files={"f.sh": text}).lines == lines

    def test_paths_are_made_absolute_against_the_working_directory(self):
        j = job(["s.sh"], files={"s.sh": script("#SBATCH -o rel.out -e /abs.err -i in.txt -D /tmp")})
        assert (j["workdir"], j["stdout"], j["stderr"], j["stdin"]) == ("/tmp", "/tmp/rel.out", "/abs.err", "/tmp/in.txt")
        j = job(["-o", "o-%j.out", "-D", "sub", "s.sh"], files={"s.sh": SCRIPT})
        assert (j["workdir"], j["stdout"]) == (f"{CWD}/sub", f"{CWD}/sub/o-%j.out")
        j = job(["-o", "o-%j.out", "s.sh"], files={"s.sh": script("#SBATCH -D /tmp")})
        assert j["stdout"] == "/tmp/o-%j.out"

    def test_real_file_system(self, tmp_path):
        (tmp_path / "job.sh").write_text(script("#SBATCH -J real"))
        r = opts.parse_sbatch(["job.sh"], env=ENV, cwd=str(tmp_path), **WHO)
        assert r["submit"]["name"] == "real"


# ============================================================ #SBATCH directives
class TestDirectives:
    LOOKALIKES = script(
        "#SBATCH -J one",
        "#SBATCH--time=5",            # read: no blank is needed after #SBATCH
        "# SBATCH -p x",              # a comment
        "##SBATCH -A y",              # a comment
        "#sbatch --qos=lower",        # case matters
        '#SBATCH  --comment="a b" -N 2 # trailing comment -n 9',
        "#SBATCH --output=a#b",       # an unquoted # starts a comment even inside a word
        "",
        "#SBATCH --qos=q1",           # blank lines do not stop the scan
        "\t#SBATCH --wckey=tabbed",   # indented: a comment
        "   ",
        body="echo hi\n#SBATCH --account=late\n")

    def test_lookalikes_and_stop_at_first_command(self):
        r = sb(["s.sh"], files={"s.sh": self.LOOKALIKES})
        j = r["submit"]
        assert (j["name"], j["time_limit"], j["comment"], j["nodes_min"], j["stdout"], j["qos"]) == \
            ("one", 5, "a b", 2, f"{CWD}/a", "q1")
        assert (j["partition"], j["account"], j["ntasks"]) == (None, None, None)
        assert r["ignored"] == []

    def test_directive_args(self):
        assert opts.directive_args(self.LOOKALIKES) == [
            "-J", "one", "--time=5", "--comment=a b", "-N", "2", "--output=a", "--qos=q1"]

    def test_quoting(self):
        text = script("""#SBATCH --comment=x\\"y --mail-user="it's" --wckey=a"b c"d --account='q"uote'""")
        assert opts.directive_args(text) == ['--comment=x"y', "--mail-user=it's", "--wckey=ab cd",
                                             '--account=q"uote']

    def test_escaped_hash_and_empty_argument(self):
        assert opts.directive_args(script(r"#SBATCH --comment=a\#b -J x")) == ["--comment=a#b", "-J", "x"]
        # an empty argument ends the line, as in Slurm
        assert opts.directive_args(script('#SBATCH -p "" -J x', "#SBATCH -A a")) == ["-p", "-A", "a"]

    def test_backslash_space_does_not_join_words(self):
        e = fails(["s.sh"], files={"s.sh": script(r"#SBATCH --comment=x\ y")})
        assert (e.lines, e.code) == (["sbatch: error: Invalid directive found in batch script: y"], 255)

    def test_a_stray_word(self):
        for d in ("#SBATCHJ", "#SBATCH foo -J x", "#SBATCH -J x extra"):
            e = fails(["s.sh"], files={"s.sh": script(d, "#SBATCH -A acc")})
            assert e.code == 255
            assert e.lines[0].startswith("sbatch: error: Invalid directive found in batch script: ")
        assert fails(["s.sh"], files={"s.sh": script("#SBATCHJ")}).lines == \
            ["sbatch: error: Invalid directive found in batch script: J"]

    def test_unmatched_quote(self):
        e = fails(["s3.sh"], files={"s3.sh": script('#SBATCH -J "unterminated')})
        assert (e.lines, e.code) == (['sbatch: fatal: s3.sh: line 2: Unmatched `"` in [ "unterminated]'], 1)
        e = fails([], stdin=script('#SBATCH -p x -J "a'))
        assert e.lines == ['sbatch: fatal: stdin: line 2: Unmatched `"` in [ "a]']

    def test_option_errors_in_directives(self):
        e = fails(["s.sh"], files={"s.sh": script("#SBATCH --bogus")})
        assert (e.lines, e.code) == (["sbatch: unrecognized option '--bogus'", TRY], 255)
        e = fails(["s.sh"], files={"s.sh": script("#SBATCH -J")})
        assert e.lines == ["sbatch: option requires an argument -- 'J'", TRY]
        e = fails([], stdin=script("#SBATCH --no-requeue=5"))
        assert e.lines == ["sbatch: option '--no-requeue' doesn't allow an argument", TRY]
        e = fails(["--time=5", "s.sh"], files={"s.sh": script("#SBATCH --time=abc")})
        assert e.lines == ["sbatch: error: Invalid --time specification"]

    def test_option_split_across_lines(self):
        assert job(["s.sh"], files={"s.sh": script("#SBATCH -J", "#SBATCH myname")})["name"] == "myname"

    def test_slurm_prefix_is_read_with_a_warning(self):
        r = sb(["s.sh"], files={"s.sh": script("#SLURM -J slurmword", "#SLURM -p p")})
        assert r["submit"]["name"] == "slurmword" and r["submit"]["partition"] == "p"
        assert r["warnings"] == ["sbatch: error: Change from #SLURM to #SBATCH in your script and verify the "
                                 "options are valid in sbatch"]
        e = fails(["s.sh"], files={"s.sh": script("#SLURM -J x", "#SBATCH -J")})
        assert e.lines[0].startswith("sbatch: error: Change from #SLURM")
        assert e.lines[1] == "sbatch: option requires an argument -- 'J'"

    def test_hetjob_lines_and_colons_make_components_that_take_the_firsts_options_less_its_shape(self):
        # 22.05: `sbatch -p high -t 5 -J hinh --comment=cc --hold --mem=500 -n1 -c2 : -n2` gives the second
        # component the name, time, comment, hold and memory, its own tasks and CPUs, the default partition
        files = {"s.sh": script("#SBATCH -J first -p p2 -t 5 --comment=cc --hold --mem=500 -n1 -c2",
                                "#SBATCH hetjob", "#SBATCH -n2", "#SBATCH packjob -N2")}
        j = job(["s.sh"], files=files)
        assert (j["name"], j["ntasks"], j["cpus_per_task"], j["partition"]) == ("first", 1, 2, "p2")
        assert [(h["name"], h["ntasks"], h["nodes_min"], h["cpus_per_task"], h["partition"], h["time_limit"],
                 h["comment"], h["hold"], h["mem_per_node"]) for h in j["het"]] == [
            ("first", 2, 1, 1, None, 5, "cc", True, 500), ("first", None, 2, 1, None, 5, "cc", True, 500)]
        j = job(["-J", "x", "-n1", ":", "-J", "y", "-n3", "--wrap", "true"])
        assert (j["name"], j["ntasks"], [(h["name"], h["ntasks"]) for h in j["het"]]) == ("x", 1, [("y", 3)])
        assert "het" not in job(["s.sh"], files={"s.sh": script('#SBATCH --comment="hetjob" -J hetjob2')})

    def test_command_line_overrides_directives(self):
        files = {"s.sh": script("#SBATCH -J fromfile -t 10 -p dirpart", "#SBATCH --requeue")}
        j = job(["-J", "cli", "-t", "30", "--no-requeue", "s.sh"], files=files)
        assert (j["name"], j["time_limit"], j["partition"], j["requeue"]) == ("cli", 30, "dirpart", False)

    def test_options_after_the_script_are_script_arguments(self):
        j = job(["s.sh", "-t", "30"], files={"s.sh": script("#SBATCH -t 10")})
        assert (j["time_limit"], j["argv"]) == (10, ["-t", "30"])


# ============================================================ environment variables
class TestEnvironment:
    FILES = {"s.sh": script("#SBATCH -J fromfile -t 10 -p dirpart")}

    def test_environment_overrides_directives_and_command_line_overrides_both(self):
        env = {**ENV, "SBATCH_JOB_NAME": "envname", "SBATCH_TIMELIMIT": "20"}
        j = job(["s.sh"], files=self.FILES, env=env)
        assert (j["name"], j["time_limit"], j["partition"]) == ("envname", 20, "dirpart")
        j = job(["-t", "30", "s.sh"], files=self.FILES, env=env)
        assert (j["name"], j["time_limit"]) == ("envname", 30)

    def test_bad_environment_value_fails_even_if_the_command_line_overrides_it(self):
        e = fails(["-t", "30", "s.sh"], files=self.FILES, env={**ENV, "SBATCH_TIMELIMIT": "abc"})
        assert (e.lines, e.code) == (["sbatch: error: Invalid --time specification"], 255)
        assert fails(["--wrap", "true"], env={**ENV, "SBATCH_TIMELIMIT": ""}).lines == \
            ["sbatch: error: Invalid --time specification"]

    @pytest.mark.parametrize("var, value, field, expect", [
        ("SBATCH_PARTITION", "p1", "partition", "p1"), ("SBATCH_ACCOUNT", "a", "account", "a"),
        ("SBATCH_QOS", "q", "qos", "q"), ("SBATCH_GRES", "gpu:2", "gpus_per_node", 2),
        ("SBATCH_GPUS_PER_NODE", "3", "gpus_per_node", 3), ("SBATCH_GPUS", "2", "gpus", 2),
        ("SBATCH_OPEN_MODE", "append", "open_mode", "append"), ("SBATCH_ARRAY_INX", "1-3", "array", "1-3"),
        ("SBATCH_OUTPUT", "o.txt", "stdout", f"{CWD}/o.txt"), ("SBATCH_ERROR", "e.txt", "stderr", f"{CWD}/e.txt"),
        ("SBATCH_INPUT", "i.txt", "stdin", f"{CWD}/i.txt"), ("SBATCH_MEM_PER_NODE", "2G", "mem_per_node", 2048),
        ("SBATCH_SIGNAL", "USR1@30", "signal", "USR1@30"), ("SBATCH_EXCLUSIVE", "", "exclusive", True),
        ("SBATCH_EXCLUSIVE", "user", "exclusive", True), ("SBATCH_JOB_NAME", "", "name", ""),
        ("SBATCH_REQUEUE", "1", "requeue", True), ("SBATCH_REQUEUE", "yes", "requeue", True),
        ("SBATCH_REQUEUE", "", "requeue", True), ("SBATCH_REQUEUE", "0", "requeue", None),
        ("SBATCH_REQUEUE", "foo", "requeue", None), ("SBATCH_NO_REQUEUE", "1", "requeue", False),
        ("SBATCH_NO_REQUEUE", "x", "requeue", None),
    ])
    def test_variables(self, var, value, field, expect):
        assert wrap(env={**ENV, var: value})[field] == expect

    @pytest.mark.parametrize("value, waits", [("", True), ("1", True), ("2", True), ("-1", True), ("YES", True),
                                              ("0", False), ("no", False), ("true", False), ("Y", False),
                                              ("foo", False), ("0x1", False)])
    def test_flag_variables(self, value, waits):
        assert sb(["--wrap", "true"], env={**ENV, "SBATCH_WAIT": value})["wait"] is waits

    def test_other_variables(self):
        assert sb(["--wrap", "true"], env={**ENV, "SBATCH_CLUSTERS": "c1"})["clusters"] == "c1"
        assert sb(["--wrap", "true"], env={**ENV, "SLURM_CLUSTERS": "c2"})["clusters"] == "c2"
        assert sb(["--wrap", "true"], env={**ENV, "SBATCH_DEBUG": "3"})["verbose"] == 3
        e = fails(["--wrap", "true"], env={**ENV, "SBATCH_EXCLUSIVE": "1"})
        assert (e.lines, e.code) == (["sbatch: error: Invalid --exclusive specification"], 255)
        e = fails(["--wrap", "true"], env={**ENV, "SBATCH_NO_KILL": "1"})
        assert e.lines == ["sbatch: error: Invalid --no-kill specification"]
        e = fails(["--wrap", "true"], env={**ENV, "SBATCH_HINT": "bogus"})
        assert e.lines == ['sbatch: error: unrecognized --hint argument "bogus", see --hint=help']

    def test_error_order_command_line_values_before_the_script(self):
        assert fails(["--time=abc", "/nonexistent/script.sh"]).lines == ["sbatch: error: Invalid --time specification"]
        assert fails(["--nodes=abc", "/nonexistent/x.sh"]).lines == ['sbatch: error: "abc" is not a valid node count']
        assert fails(["--array=0-abc", "/nonexistent/x.sh"]).lines == \
            ["sbatch: error: Unable to open file /nonexistent/x.sh"]
        files = {"s.sh": script("#SBATCH --bogus")}
        assert fails(["--time=abc", "s.sh"], files=files).lines == ["sbatch: error: Invalid --time specification"]
        assert fails(["-n0", "s.sh"], files=files).lines == ['sbatch: error: Invalid numeric value "0" for --ntasks.']


# ============================================================ user, host and the submit body
class TestSubmitBody:
    FIELDS = {"script", "name", "partition", "account", "qos", "nodes_min", "nodes_max", "ntasks",
              "ntasks_per_node", "cpus_per_task", "mem_per_node", "mem_per_cpu", "time_limit", "gpus",
              "gpus_per_node", "gpus_per_task", "cpus_per_gpu", "mincpus", "mem_per_gpu", "overcommit", "gres", "exclusive", "requeue", "environment", "workdir", "submit_dir",
              "stdout", "stderr", "stdin", "open_mode", "hold", "begin_time", "signal", "comment", "dependency",
              "array", "nice", "nodelist", "exclude", "user", "uid", "gid", "group", "submit_host", "argv",
              "test_only", "kill_on_invalid_dep"}

    def test_every_field_present(self):
        j = wrap()
        assert set(j) == self.FIELDS
        assert (j["user"], j["uid"], j["gid"], j["group"], j["submit_host"]) == ("u", 1000, 1000, "g", "login1")
        assert (j["cpus_per_task"], j["hold"], j["nice"], j["test_only"]) == (1, False, 0, False)

    def test_matches_the_controller_schema(self):
        schemas = pytest.importorskip("slurmlet.controller.api.schemas")
        fields = set(schemas.JobSubmit.model_fields)
        assert set(wrap()) <= fields
        schemas.JobSubmit(**wrap("-N", "2-3", "-t", "5", "--gres=gpu:2", "--array=0-3", "-d", "afterok:1",
                                 "--begin=now+60", "--nice=5", "-o", "x.out"))

    def test_defaults_for_user_and_host_come_from_the_process(self):
        import grp
        import pwd
        r = opts.parse_sbatch(["--wrap", "true"], env=ENV, cwd=CWD)
        j = r["submit"]
        assert (j["user"], j["uid"], j["gid"], j["group"]) == \
            (pwd.getpwuid(os.getuid()).pw_name, os.getuid(), os.getgid(), grp.getgrgid(os.getgid()).gr_name)
        assert j["submit_host"] == os.uname().nodename.split(".")[0]

    def test_a_uid_without_a_passwd_entry(self):
        # given: its number; this process's own: $USER, as every other command names it
        r = opts.parse_sbatch(["--wrap", "true"], env=ENV, cwd=CWD, uid=48213, gid=48213)
        assert (r["submit"]["user"], r["submit"]["group"]) == ("48213", "48213")
        if os.getuid() != 0 or not shutil.which("setpriv"):
            pytest.skip("needs root and setpriv to run as a uid without a passwd entry")
        code = ("import os; from slurmlet.cli import opts; j = opts.parse_sbatch(['--wrap', 'true'], env={}, "
                "cwd='/tmp')['submit']; print(j['user'], j['uid'], j['group'])")
        out = subprocess.run(["setpriv", "--reuid=48213", "--regid=48213", "--clear-groups", sys.executable, "-c",
                              code], capture_output=True, text=True, cwd="/", timeout=120,
                             env={**os.environ, "USER": "someone", "PYTHONPATH": os.pathsep.join(sys.path)})
        if "Permission denied" in out.stderr:
            pytest.skip("this interpreter's tree is not readable by other users")
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["someone", "48213", "48213"]

    def test_build_submit_from_srun_options(self):
        req = opts.parse_srun(["-N2", "--gres=gpu:2", "-t", "5", "-J", "s", "hostname"], env={}, cwd=CWD)
        o = dict(req["opts"])
        o["output"] = "/tmp/x.out"
        body = opts.build_submit(o, script="#!/bin/sh\nhostname\n", default_name="hostname", script_args=[],
                                 env={}, cwd=CWD, **WHO, prog="srun")
        assert (body["nodes_min"], body["gpus_per_node"], body["time_limit"], body["name"], body["stdout"]) == \
            (2, 2, 5, "s", "/tmp/x.out")


# ============================================================ srun
SRUN_TRY = 'Try "srun --help" for more information'


def srun(argv: list[str], env: dict | None = None) -> dict:
    return opts.parse_srun(argv, env=env or {}, cwd=CWD)


class TestSrun:
    def test_command_and_options(self):
        r = srun(["-N2", "-l", "--ntasks-per-node=2", "bash", "-c", "echo $SLURM_PROCID"])
        assert r["command"] == ["bash", "-c", "echo $SLURM_PROCID"]
        assert (r["nodes_min"], r["nodes_max"], r["ntasks_per_node"], r["label"]) == (2, 2, 2, True)
        assert "label" in r["opts"]

    def test_options_after_the_command_belong_to_it(self):
        r = srun(["true", "-n0"])
        assert r["command"] == ["true", "-n0"] and r["ntasks"] is None

    def test_subset(self):
        r = srun(["-n", "4", "-c", "2", "--gpus-per-task=1", "-G", "4", "-o", "out-%t", "-e", "err", "-i", "in",
                  "-u", "-K", "--export=NONE", "-w", "node1", "--jobid=12", "-J", "x", "-p", "p", "-t", "5",
                  "--mem=1G", "-D", "/tmp", "--exclusive", "--overlap", "--mpi=pmix", "--cpu-bind=cores", "-Q",
                  "--pty", "cmd"])
        assert (r["ntasks"], r["cpus_per_task"], r["gpus_per_task"], r["gpus"], r["stdout"], r["stderr"],
                r["stdin"], r["unbuffered"], r["kill_on_bad_exit"], r["jobid"], r["name"], r["partition"],
                r["time_limit"], r["mem_per_node"], r["workdir"], r["exclusive"], r["overlap"], r["mpi"],
                r["cpu_bind"], r["quiet"], r["pty"]) == \
            (4, 2, 1, 4, "out-%t", "err", "in", True, True, 12, "x", "p", 5, 1024, "/tmp", "exclusive", True, "pmix",
             "cores", 1, True)
        assert r["opts"]["nodelist"] == "node1" and r["environment"] == {}
        assert srun(["-K0", "true"])["kill_on_bad_exit"] is False
        assert srun(["--kill-on-bad-exit=1", "true"])["kill_on_bad_exit"] is True

    def test_input_variables_and_their_precedence(self):
        env = {"SLURM_JOB_ID": "42", "SLURM_NTASKS": "4", "SLURM_NTASKS_PER_NODE": "2", "SRUN_CPUS_PER_TASK": "3",
               "SLURM_CPUS_PER_TASK": "9", "SLURM_JOB_NAME": "batchname", "SLURM_MEM_PER_CPU": "1000",
               "SLURM_LABELIO": "1"}
        r = srun(["hostname"], env)
        assert (r["jobid"], r["ntasks"], r["ntasks_per_node"], r["cpus_per_task"], r["name"], r["mem_per_cpu"],
                r["label"]) == (42, 4, 2, 3, "batchname", 1000, True)
        r = srun(["-n", "1", "--mem=2G", "hostname"], env)
        assert (r["ntasks"], r["mem_per_node"], r["mem_per_cpu"]) == (1, 2048, None)

    def test_errors(self):
        with pytest.raises(OptError) as e:
            srun(["--bogus", "true"])
        assert (e.value.lines, e.value.code) == (["srun: unrecognized option '--bogus'", SRUN_TRY], 255)
        with pytest.raises(OptError) as e:
            srun(["--cpu", "true"])
        assert e.value.lines[0] == ("srun: option '--cpu' is ambiguous; possibilities: '--cpu-bind' '--cpu-freq' "
                                    "'--cpus-per-gpu' '--cpus-per-task'")
        with pytest.raises(OptError) as e:
            srun(["-n0", "true"])
        assert (e.value.lines, e.value.code) == (['srun: error: Invalid numeric value "0" for --ntasks.'], 1)
        with pytest.raises(OptError) as e:
            srun([])
        assert (e.value.lines, e.value.code) == (["srun: fatal: No command given to execute."], 1)
        with pytest.raises(OptError) as e:
            srun(["--cpu-bind"])
        assert e.value.lines == ["srun: option '--cpu-bind' requires an argument", SRUN_TRY]
        with pytest.raises(OptError) as e:
            srun(["-a", "true"])
        assert e.value.lines[0] == "srun: invalid option -- 'a'"
        with pytest.raises(OptError) as e:
            srun(["--kill-on-bad-exit=x", "true"])
        assert (e.value.lines, e.value.code) == (['srun: error: Invalid numeric value "x" for --kill-on-bad-exit.'], 1)
        with pytest.raises(OptError) as e:
            srun(["-G", "abc", "true"])
        assert e.value.lines == ["srun: error: Unable to allocate resources: Invalid generic resource (gres) "
                                 "specification"]

    def test_help_needs_no_command(self):
        assert "help" in srun(["--help"])["opts"]
        assert "version" in srun(["-V"])["opts"]

    def test_ignored(self):
        assert srun(["--mail-type=END", "-m", "block", "true"])["ignored"] == [
            ["--mail-type", "END"], ["--distribution", "block"]]


# ============================================================ output file patterns
class TestPatterns:
    def test_reference_file_names(self):
        # from the reference run: -o 'pat-j%j-A%A-a%a-x%x-N%N-u%u.out' (plain job) and an array task
        assert patterns.expand_pattern("pat-j%j-A%A-a%a-x%x-N%N-u%u.out", job_id=7905, name="pat", node="node1",
                                   user="root") == "pat-j7905-A7905-a4294967294-xpat-Nnode1-uroot.out"
        assert patterns.expand_pattern("pa-j%j-A%A-a%a-x%x-N%N.out", job_id=7908, array_job_id=7906, array_task_id=0,
                                   name="patarr", node="node1") == "pa-j7908-A7906-a0-xpatarr-Nnode1.out"
        assert patterns.expand_pattern("step-%j-%s-%t-%n-%N.out", job_id=7911, step_id=0, task_id=1, node_index=1,
                                   node="node3") == "step-7911-0-1-1-node3.out"
        assert patterns.expand_pattern(patterns.default_output(False), job_id=7868) == "slurm-7868.out"
        assert patterns.expand_pattern(patterns.default_output(True), job_id=7886, array_job_id=7885,
                                   array_task_id=2) == "slurm-7885_2.out"

    def test_default_output(self):
        assert (patterns.default_output(False), patterns.default_output(True)) == ("slurm-%j.out", "slurm-%A_%a.out")

    @pytest.mark.parametrize("pattern, out", [
        ("job%4j.out", "job0042.out"), ("%%j", "%j"), ("100%%", "100%"), ("%12j", "0000000042"),
        ("%10j", "0000000042"), ("%2t-%3n", "00-000"), ("%J", "42.4294967291"), ("%s", "4294967291"),
        ("%q", "%q"), ("%4q", "4q"), ("a%", "a%"), ("a%4", "a4"), ("%4N", "n1"), ("%4x", "nm"),
        ("%5a", "4294967294"), ("%3A", "042"), ("%u%x", "usernm"),
        ("a\\%j", "a%j"), ("c:\\\\x%j", "c:\\x%j"),
    ])
    def test_specifiers(self, pattern, out):
        assert patterns.expand_pattern(pattern, job_id=42, name="nm", node="n1", user="user") == out

    def test_step_and_workdir(self):
        assert patterns.expand_pattern("%J", job_id=42, step_id=3) == "42.3"
        assert patterns.expand_pattern("o-%j", job_id=1, workdir="/w/") == "/w/o-1"
        assert patterns.expand_pattern("/abs/o-%j", job_id=1, workdir="/w") == "/abs/o-1"


# ============================================================ import cost
def test_import_is_cheap():
    code = ("import sys; before = set(sys.modules); import slurmlet.cli.opts; "
            "print(' '.join(sorted(set(sys.modules) - before)))")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": root})
    assert set(out.stdout.split()) <= {"__future__", "slurmlet", "slurmlet.cli", "slurmlet.cli.opts", "slurmlet.common",
                                      "slurmlet.common.grammar", "slurmlet.common.patterns",
                                      "slurmlet.common.slurmtime", "slurmlet.cli.getopt", "slurmlet.cli.optvalues"}
